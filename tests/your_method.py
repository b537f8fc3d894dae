"""The files docs/your_method.md tells a user to write, extracted from the page itself, so the
tests run exactly the worked example a user copies."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "your_method.md"
FILE_BLOCK = re.compile(r"<!-- file: (\S+) -->\n```\w+\n(.*?)```", re.S)


def write_doc_files(directory: Path) -> dict[str, Path]:
    """Each `<!-- file: name -->` block of the page written to `directory`/name."""
    paths = {}
    for name, body in FILE_BLOCK.findall(DOC.read_text()):
        paths[name] = directory / name
        paths[name].write_text(body)
    return paths
