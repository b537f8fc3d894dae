"""Bad input and interrupted jobs as a new user meets them (issue items 2, 3, 5 and 7).

- Truncated and corrupt shard files: `selectlab tokens encode` stops naming the file and the
  offset, or (quarantine) keeps what it can read and counts the file in the read report.
- A SlimPajama-shaped listing whose chunk directories repeat file names: every document gets a
  distinct id, and ids that records carry themselves are checked unique across the pool.
- A misspelt score column stops the dry run of the tests-only config, before any job.
- A job whose workflow is killed stops by itself; a job sent SIGTERM says why it stops.
Commands run in this process (`selectlab.cli.main`) where the subprocess would only add an
interpreter start, and as subprocesses where the process is what is tested.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
import zstandard
from conftest import encode, write_jsonl_zst
from fault_harness import (
    CONFIG,
    KEY_VARIABLE,
    REPO,
    SECRET,
    Endpoint,
    Endpoints,
    judge_params,
    selectlab,
)

from selectlab.corpus.resolve import slimpajama_shard_groups
from selectlab.judge.server import Faults
from selectlab.lifecycle import SUPERVISOR_VARIABLE


@pytest.fixture
def endpoints():
    started = Endpoints()
    yield started
    started.stop()


# -- 2: truncated and corrupt shards ------------------------------------------------------------
def shard_lines(prefix: str, n: int = 300) -> list[bytes]:
    return encode([{"text": f"{prefix} document {i}: " + "words of text " * 20,
                    "meta": {"redpajama_set_name": "RedPajamaWikipedia"}} for i in range(n)])


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    from selectlab.tokens import train_bpe_tokenizer

    out = tmp_path_factory.mktemp("tokenizer")
    train_bpe_tokenizer([line.decode() for line in shard_lines("sample")], 300, out)
    return out


class Done:
    """Exit code and stderr of a command run in this process (`selectlab.cli.main`, the same
    code a job runs, without starting an interpreter that loads transformers each time)."""

    def __init__(self, capsys, *args: str):
        from selectlab.cli import main

        capsys.readouterr()
        self.returncode = main(list(args))
        self.stderr = capsys.readouterr().err


def encode_shard(capsys, tokenizer: Path, files: list[Path], root: Path, out: Path, policy: str,
                 shard: str = "shard_00000") -> Done:
    reader = CONFIG["corpus"]["reader"]
    return Done(capsys, "tokens", "encode", "--shard-files",
                     json.dumps({shard: list(map(str, files))}), "--tokenizer",
                     str(tokenizer), "--max-doc-chars",
                     str(reader["max_doc_chars"]), "--id-root", str(root), "--on-damaged-file",
                     policy, "--out-tokens", str(out / "tokens" / f"{shard}.npy"),
                     "--out-meta", str(out / "meta" / f"{shard}.parquet"),
                     "--report", str(out / "reports" / f"{shard}.json"),
                     "--quarantine", str(out / "quarantine" / f"{shard}.jsonl"))


def test_truncated_and_corrupt_shards_stop_or_are_counted(tmp_path, tokenizer_dir, capsys):
    whole = write_jsonl_zst(tmp_path / "raw" / "whole.jsonl.zst", shard_lines("whole"))
    data = whole.read_bytes()
    cut = tmp_path / "raw" / "cut.jsonl.zst"
    cut.write_bytes(data[: len(data) // 2])
    not_zstd = tmp_path / "raw" / "plain.jsonl.zst"
    not_zstd.write_bytes(b"\n".join(shard_lines("plain")) + b"\n")

    stopped = encode_shard(capsys, tokenizer_dir, [whole, cut], tmp_path / "raw", tmp_path / "a",
                           "stop")
    assert stopped.returncode == 2 and "Traceback" not in stopped.stderr
    assert f"{cut} is truncated at its end (byte {len(data) // 2:,}), after line" in stopped.stderr
    assert not (tmp_path / "a" / "meta").exists()

    stopped = encode_shard(capsys, tokenizer_dir, [not_zstd], tmp_path / "raw", tmp_path / "b",
                           "stop")
    assert stopped.returncode == 2
    assert f"{not_zstd} is corrupt at compressed byte 0 of" in stopped.stderr
    assert "Unknown frame descriptor" in stopped.stderr

    kept = encode_shard(capsys, tokenizer_dir, [whole, cut, not_zstd], tmp_path / "raw",
                        tmp_path / "c", "quarantine")
    assert kept.returncode == 0, kept.stderr
    report = json.loads((tmp_path / "c" / "reports" / "shard_00000.json").read_text())
    assert [(d["file"], d["kind"]) for d in report["damaged_files"]] == [
        (str(cut), "truncated"), (str(not_zstd), "corrupt")]
    meta = pd.read_parquet(tmp_path / "c" / "meta" / "shard_00000.parquet")
    assert 300 <= len(meta) < 600 and report["documents"] == len(meta)
    table = tmp_path / "read_report.csv"
    done = Done(capsys, "corpus", "read-report", "--reports",
                str(tmp_path / "c" / "reports" / "shard_00000.json"), "--out", str(table))
    assert done.returncode == 0 and pd.read_csv(table)["damaged_files"].tolist() == [2]


# -- 3: document ids unique across a SlimPajama-shaped pool -----------------------------------
def test_slimpajama_chunks_repeating_file_names_get_distinct_ids(tmp_path, tokenizer_dir,
                                                                  capsys):
    train = tmp_path / "train"
    for chunk in (1, 2):
        for k in (0, 1):
            write_jsonl_zst(train / f"chunk{chunk}" / f"example_train_{k}.jsonl.zst",
                            shard_lines(f"chunk{chunk}-{k}", 20))
    groups = slimpajama_shard_groups(train, "chunk*/example_*.jsonl.zst", 2)
    metas = []
    for shard, files in groups.items():
        done = encode_shard(capsys, tokenizer_dir, [Path(f) for f in files], train,
                            tmp_path / "out",
                            CONFIG["corpus"]["reader"].get("on_damaged_file", "stop"), shard)
        assert done.returncode == 0, done.stderr
        metas.append(tmp_path / "out" / "meta" / f"{shard}.parquet")
    ids = pd.concat(pd.read_parquet(path) for path in metas)["id"]
    assert ids.is_unique and len(ids) == 80
    assert {"chunk1/example_train_0.jsonl.zst:1", "chunk2/example_train_0.jsonl.zst:1"} <= set(ids)
    reports = [str(tmp_path / "out" / "reports" / f"{shard}.json") for shard in groups]
    done = Done(capsys, "corpus", "read-report", "--reports", *reports, "--meta",
                *map(str, metas), "--out", str(tmp_path / "read_report.csv"))
    assert done.returncode == 0, done.stderr

    # Records that carry their own ids may still collide across files: the pool check stops it.
    for chunk in (1, 2):
        path = train / f"chunk{chunk}" / "example_train_0.jsonl.zst"
        path.write_bytes(zstandard.ZstdCompressor().compress(
            b"\n".join(encode([{"id": "doc-7", "text": f"chunk {chunk} text",
                                "meta": {"redpajama_set_name": "RedPajamaBook"}}])) + b"\n"))
    for shard, files in groups.items():
        assert encode_shard(capsys, tokenizer_dir, [Path(f) for f in files], train,
                            tmp_path / "out", "stop", shard).returncode == 0
    done = Done(capsys, "corpus", "read-report", "--reports", *reports, "--meta",
                *map(str, metas), "--out", str(tmp_path / "read_report.csv"))
    assert done.returncode == 1
    assert "document ids are not unique in the pool: 1 ids occur more than once (e.g. 'doc-7' " \
           "in group_00000, group_00001)" in done.stderr


# -- 5: a misspelt column stops the plan, before any job ----------------------------------------
def test_a_misspelt_score_column_stops_the_dry_run(tmp_path):
    config = json.loads(json.dumps(CONFIG))
    config["variants"]["uniform"] |= {"method": "topk",
                                      "params": {"score": "signals.doc_word_cont"}}
    config["evaluation"]["baseline"] = "unifrom"
    path = tmp_path / "misspelt.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    env = os.environ | {"PYTHONPATH": str(REPO / "src"),
                        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1",
                           "--configfile", str(path)], cwd=REPO, capture_output=True, text=True,
                          env=env)
    printed = done.stdout + done.stderr  # Snakemake prints the error on stdout
    assert done.returncode != 0
    assert "variants.uniform.params.score: 'signals.doc_word_cont' is not a column of family " \
           "'signals' (did you mean 'signals.doc_word_count'?)" in printed
    assert "evaluation.baseline: 'unifrom' is not a variant (did you mean 'uniform'?)" in printed
    assert len(printed.splitlines()) < 15
    checked = selectlab("config", "check", "--configfile", str(path), "--schema",
                        str(REPO / "config/schema/config.schema.yaml"))
    assert checked.returncode == 2 and "did you mean 'signals.doc_word_count'" in checked.stderr


# -- 7: a job outlives neither its workflow nor a SIGTERM ---------------------------------------
def hanging_job(tmp_path: Path, endpoint: Endpoint, supervisor: str | None) -> list[str]:
    params = judge_params(endpoint.url, timeout_s=600, max_attempts=1)
    pd.DataFrame({"doc_id": ["a"], "text": ["x"], "set_name": "S"}).to_parquet(
        tmp_path / "sample.parquet")
    return [sys.executable, "-m", "selectlab.cli", "judge", "run", "--sample",
            str(tmp_path / "sample.parquet"), "--params", json.dumps(params), "--cache",
            str(tmp_path / "c.sqlite"), "--out-judgments", str(tmp_path / "j.parquet"),
            "--out-labels", str(tmp_path / "l.parquet"), "--out-summary",
            str(tmp_path / "s.csv")]


SUPERVISOR = """\
import subprocess, sys
from selectlab.lifecycle import export_supervisor

export_supervisor()
job = subprocess.Popen(["bash", "-c", "set -euo pipefail; " + sys.argv[1]])
print(job.pid, flush=True)
job.wait()
"""


def wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def wait_for_request(endpoint: Endpoint) -> None:
    """Until the job is waiting on the (hanging) judge."""
    deadline = time.monotonic() + 60
    while endpoint.server.stats.requests == 0:
        assert time.monotonic() < deadline, "the job never asked the judge"
        time.sleep(0.1)


def job_pid(shell_pid: int) -> int:
    from selectlab.lifecycle import child_pids

    for _ in range(100):
        children = child_pids(shell_pid)
        if children:
            return children[0]
        time.sleep(0.1)
    raise AssertionError("the job did not start")


def test_a_job_stops_when_its_workflow_is_killed(tmp_path, endpoints):
    endpoint = endpoints(Faults(answers=("hang",), hang_s=120))
    command = " ".join(f"'{part}'" for part in hanging_job(tmp_path, endpoint, None))
    log = tmp_path / "job.log"
    env = os.environ | {"PYTHONPATH": str(REPO / "src"), KEY_VARIABLE: SECRET}
    workflow = subprocess.Popen([sys.executable, "-c", SUPERVISOR, f"{command} > {log} 2>&1"],
                                stdout=subprocess.PIPE, text=True, env=env)
    job = job_pid(int(workflow.stdout.readline()))
    wait_for_request(endpoint)
    workflow.kill()  # SIGKILL: the workflow cannot stop its jobs itself
    workflow.wait()
    assert wait_gone(job, 30), "the job ran on after its workflow was killed"
    assert f"selectlab judge: stopping: the workflow that started it (pid {workflow.pid}) is " \
           "gone, killed before it could stop its jobs." in log.read_text()
    assert not (tmp_path / "l.parquet").exists()


def test_sigterm_stops_a_job_with_a_message(tmp_path, endpoints):
    endpoint = endpoints(Faults(answers=("hang",), hang_s=120))
    env = os.environ | {"PYTHONPATH": str(REPO / "src"), KEY_VARIABLE: SECRET}
    env.pop(SUPERVISOR_VARIABLE, None)
    job = subprocess.Popen(hanging_job(tmp_path, endpoint, None), stderr=subprocess.PIPE,
                           text=True, env=env)
    wait_for_request(endpoint)
    job.send_signal(signal.SIGTERM)
    _, stderr = job.communicate(timeout=30)
    assert job.returncode == 143
    assert "selectlab judge: stopping: SIGTERM from outside: the workflow was interrupted, the " \
           "cluster cancelled the job or its time ran out." in stderr
