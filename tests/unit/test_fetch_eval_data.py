"""fetch_eval_data: nothing to do for local tasks; a clear error, within seconds, when the
Hub cannot be reached and the benchmarks are not cached; ICL jobs read only the cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from selectlab.evaluate import fetch


def fetch_command(tasks, tmp_path) -> subprocess.CompletedProcess:
    # Port 9 (discard) on this machine refuses connections: a Hub that cannot be reached.
    env = os.environ | {"HF_ENDPOINT": "http://127.0.0.1:9"}
    return subprocess.run(
        [sys.executable, "-m", "selectlab.cli", "evaluate", "fetch-data", "--params",
         json.dumps({"tasks": tasks}), "--cache-dir", str(tmp_path / "cache"),
         "--out", str(tmp_path / "data.json")],
        capture_output=True, text=True, env=env, timeout=300)


def test_local_tasks_need_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(fetch, "hub_reachable", lambda *a, **k: 1 / 0)  # never probed
    record = fetch.fetch_eval_data("local", tmp_path / "cache")
    assert record["tasks"] == [] and "nothing to download" in record["note"]
    done = fetch_command("local", tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "data.json").read_text())["tasks"] == []


def test_missing_benchmarks_without_a_network_are_a_clear_error(tmp_path):
    tasks = [{"name": "arc_easy", "shots": 0, "group": "reading comprehension"}]
    done = fetch_command(tasks, tmp_path)
    assert done.returncode == 2 and not (tmp_path / "data.json").exists()
    message = done.stderr.strip().splitlines()[-1]
    assert message.startswith("selectlab evaluate: error: lm-eval tasks ['arc_easy'] are not "
                              "in the cache, and the Hugging Face Hub cannot be reached")
    assert str((tmp_path / "cache").resolve()) in message
    assert "snakemake fetch_eval_data" in message


def test_icl_jobs_read_the_shared_cache_offline(tmp_path):
    env = fetch.offline_environment(tmp_path / "cache")
    assert env["HF_DATASETS_OFFLINE"] == env["HF_HUB_OFFLINE"] == "1"
    assert env["HF_DATASETS_CACHE"] == str((tmp_path / "cache" / "datasets").resolve())
    assert not fetch.hub_reachable("http://127.0.0.1:9", timeout=2)
