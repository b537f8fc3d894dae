"""Open an HTML report in headless Chromium (Debian's `chromium`) and report what a reader sees:
every image with whether it loaded, every table with its size on the page, every link with
whether its target exists. scripts/bootstrap.sh --test installs the browser.

The report is loaded in an iframe of a small harness page whose script reads the report's DOM
once it has loaded (its `load` event waits for every image) and writes the findings as JSON into
the harness; `--dump-dom` prints that.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

HARNESS = """<!DOCTYPE html>
<html><body>
<iframe id="report" src="{src}" style="width:1200px;height:900px"></iframe>
<pre id="findings">pending</pre>
<script>
document.getElementById("report").addEventListener("load", () => {{
  const page = document.getElementById("report").contentDocument;
  const images = [...page.images].map(i => ({{alt: i.alt,
      loaded: i.complete && i.naturalWidth > 0, width: i.naturalWidth}}));
  const tables = [...page.querySelectorAll("table")].map(t => ({{
      section: t.closest("section") ? t.closest("section").id : "",
      rows: t.tBodies.length ? t.tBodies[0].rows.length : 0,
      columns: t.tHead ? t.tHead.rows[0].cells.length : 0,
      height: t.getBoundingClientRect().height}}));
  const links = [...page.querySelectorAll("a[href]")].map(a => {{
      const href = a.getAttribute("href");
      return {{href: href, resolves: href.startsWith("#")
          ? page.getElementById(href.slice(1)) !== null : false}};
  }});
  const headings = [...page.querySelectorAll("h2")].map(h => h.textContent);
  document.getElementById("findings").textContent = JSON.stringify(
      {{title: page.title, images, tables, links, headings}});
}});
</script>
</body></html>
"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def inspect_report(report: Path, timeout: float = 120) -> dict:
    """What a reader of `report` sees, as found by headless Chromium."""
    browser = chromium()
    if browser is None:
        raise FileNotFoundError("chromium is not installed (scripts/bootstrap.sh --test)")
    report = Path(report).resolve()
    with tempfile.TemporaryDirectory(prefix="selectlab-browser-") as tmp:
        harness = Path(tmp) / "harness.html"
        harness.write_text(HARNESS.format(src=report.as_uri()), encoding="utf-8")
        result = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu",
             "--allow-file-access-from-files", f"--user-data-dir={tmp}/profile",
             "--virtual-time-budget=20000", "--dump-dom", harness.as_uri()],
            capture_output=True, text=True, timeout=timeout)
    found = re.search(r'<pre id="findings">(.*?)</pre>', result.stdout, re.S)
    if result.returncode != 0 or found is None or found.group(1) == "pending":
        raise RuntimeError(f"chromium did not render {report}: rc {result.returncode}, "
                           f"{result.stderr[-2000:]}")
    text = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    return json.loads(text.replace("&amp;", "&"))
