"""Faults and bad input as a new user meets them, on the tests-only config (.test/config.yaml).

Each test runs the real command a workflow job runs (`selectlab ...` in a subprocess, exit code
and stderr as Snakemake would see them) against a fault:

- the judge: an OpenAI-compatible fake judge on 127.0.0.1 (the real `selectlab.judge.server`
  around a backend that always gives a well-formed PRRC answer) that is down, dies mid-run,
  rejects the key, returns malformed 200s, garbage or echoes the key, or hangs;
- the corpus: truncated and corrupt shard files, colliding document ids in a SlimPajama-shaped
  listing whose chunk directories repeat file names;
- the config: a misspelt score column, found by the dry run;
- the process: a job whose workflow is killed, and a job sent SIGTERM.
The whole workflow run twice from scratch (same seed, same bytes) is in tests/e2e.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
import zstandard
from conftest import encode, write_jsonl_zst

from selectlab.config import load_config, slimpajama_shard_groups
from selectlab.judge import prrc
from selectlab.judge import resolve as judge_cfg
from selectlab.judge.backends import Completion
from selectlab.judge.cache import JudgmentCache
from selectlab.judge.server import Faults, make_server
from selectlab.lifecycle import SUPERVISOR_VARIABLE

REPO = Path(__file__).resolve().parents[2]
CONFIG = load_config(REPO / ".test" / "config.yaml")
KEY_VARIABLE = "SELECTLAB_FAULT_TEST_KEY"
SECRET = "sk-fault-test-0a1b2c3d4e5f6789"
DOCS = 6  # x 4 PRRC dimensions = 24 judgments
ANSWER = "The text meets these conditions: it is understandable.\nFinal score: 3"


class FakeJudge:
    """A judge that always answers PRRC's format well; the faults come from the server."""

    kind = "fake"
    model_id = "fake-judge"
    supports_logprobs = False

    def fingerprint(self) -> dict:
        return {"kind": self.kind}

    def complete(self, requests):
        return [Completion([ANSWER], prompt_tokens=40, completion_tokens=12) for _ in requests]


class Endpoint:
    def __init__(self, faults: Faults | None = None, key: str | None = SECRET):
        os.environ[KEY_VARIABLE] = key or ""
        self.server = make_server(FakeJudge(), faults=faults, model_name="fake-judge",
                                  api_key_env=KEY_VARIABLE if key else None)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoints():
    started: list[Endpoint] = []

    def start(faults: Faults | None = None, key: str | None = SECRET) -> Endpoint:
        started.append(Endpoint(faults, key))
        return started[-1]

    yield start
    for endpoint in started:
        endpoint.stop()


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def selectlab(*args: str, env: dict | None = None, timeout: float = 300):
    """The `selectlab` command as a workflow job runs it (this checkout's code)."""
    environ = os.environ | {"PYTHONPATH": str(REPO / "src")} | (env or {})
    return subprocess.run([sys.executable, "-m", "selectlab.cli", *args], capture_output=True,
                          text=True, env=environ, timeout=timeout)


def judge_params(url: str, **backend) -> dict:
    """`selectlab judge run` params for PRRC as the tests-only config resolves them, with the
    backend pointed at the fake judge (retries kept short)."""
    params = judge_cfg.resolve_run(CONFIG, "prrc")
    params.pop("simulated", None)
    params["backend"] = {"kind": "openai", "model": "fake-judge", "base_url": url,
                         "api_key_env": KEY_VARIABLE, "concurrency": 4, "batch_size": 8,
                         "max_attempts": 3, "backoff_s": 0.01, "max_backoff_s": 0.05,
                         "timeout_s": 5} | backend
    return params


def judge_run(work: Path, params: dict, key: str = SECRET):
    sample = work / "sample.parquet"
    if not sample.exists():
        pd.DataFrame({"doc_id": [f"doc{i}" for i in range(DOCS)],
                      "text": [f"Document {i} explains how owls hunt at night." for i in
                               range(DOCS)],
                      "set_name": "RedPajamaWikipedia"}).to_parquet(sample)
    out = work / "judgments" / "prrc"
    done = selectlab("judge", "run", "--sample", str(sample), "--params", json.dumps(params),
                     "--cache", str(out / "cache.sqlite"),
                     "--out-judgments", str(out / "judgments.parquet"),
                     "--out-labels", str(out / "labels.parquet"),
                     "--out-summary", str(out / "summary.csv"), env={KEY_VARIABLE: key})
    (work / "logs").mkdir(exist_ok=True)
    with open(work / "logs" / "judge.log", "a") as log:  # what the job log would hold
        log.write(done.stdout + done.stderr)
    return done, out


def cached(out: Path) -> int:
    with JudgmentCache(out / "cache.sqlite") as cache:
        return len(cache)


# -- 1: a judge outage fails the job; the rerun asks only for what failed ---------------------
def test_endpoint_down_then_dying_then_back_reruns_ask_only_for_the_failed(tmp_path, endpoints):
    down, out = judge_run(tmp_path, judge_params(f"http://127.0.0.1:{free_port()}/v1"))
    assert down.returncode == 1, down.stderr
    assert "judge prrc: stopped: 2 batches in a row got no answer at all; 0 of 24 judgments " \
           "are answered, no labels were written." in down.stderr
    assert "Connection refused" in down.stderr and "Traceback" not in down.stderr
    assert not (out / "labels.parquet").exists() and cached(out) == 0

    dying = endpoints(Faults(fail_after=10))
    failed, out = judge_run(tmp_path, judge_params(dying.url))
    assert failed.returncode == 1
    assert "judge prrc: 14 of 24 judgments failed (58.3%, above judge.max_failure_rate " \
           "5.0%); no labels were written." in failed.stderr
    assert "HTTP 503" in failed.stderr and f"at {dying.url}" in failed.stderr
    assert not (out / "labels.parquet").exists() and cached(out) == 10

    healthy = endpoints()
    repaired, out = judge_run(tmp_path, judge_params(healthy.url))
    assert repaired.returncode == 0, repaired.stderr
    assert healthy.server.stats.served == 14  # exactly the failed ones
    summary = pd.read_csv(out / "summary.csv").set_index("criterion").loc["all"]
    assert summary["cached"] == 10 and summary["ok"] == 24
    labels = pd.read_parquet(out / "labels.parquet")
    assert len(labels) == DOCS and (labels[list(prrc.DIMENSIONS)] == 3).all().all()


def test_a_wrong_key_stops_the_job_naming_the_status(tmp_path, endpoints):
    endpoint = endpoints()
    done, out = judge_run(tmp_path, judge_params(endpoint.url), key="sk-not-the-right-one")
    assert done.returncode == 1
    assert "stopped: 2 batches in a row got no answer at all" in done.stderr
    assert "16 x openai: HTTP 401 from /chat/completions" in done.stderr
    assert "sk-not-the-right-one" not in done.stderr and endpoint.server.stats.served == 0


# -- 4: malformed 200s, garbage and hangs are counted errors, never a crash -------------------
def test_malformed_answers_are_counted_errors_for_their_items(tmp_path, endpoints):
    bad = ("ok", "bad_usage", "ok", "bad_logprob", "ok", "no_choices", "ok", "garbage")
    endpoint = endpoints(Faults(answers=bad))
    params = judge_params(endpoint.url, max_attempts=1) | {"max_failure_rate": 0.6}
    done, out = judge_run(tmp_path, params)
    assert done.returncode == 0, done.stderr
    judgments = pd.read_parquet(out / "judgments.parquet")
    errors = judgments.loc[judgments["status"] == "backend_error", "error"]
    assert len(errors) == 12 and (judgments["status"] == "ok").sum() == 12
    assert errors.str.contains("malformed response body \\(TypeError: `usage` is str 'lots', "
                               "not an object\\)").sum() == 3
    assert errors.str.contains("a log-probability is str 'high', not a number").sum() == 3
    assert errors.str.contains("`choices` is list \\[\\], not a non-empty list").sum() == 3
    assert errors.str.contains("unreadable JSON from /chat/completions: <html>").sum() == 3
    summary = pd.read_csv(out / "summary.csv").set_index("criterion").loc["all"]
    assert summary["backend_error"] == 12 and summary["failure_rate"] == 0.5


def test_a_hanging_endpoint_times_out_and_stops_the_job(tmp_path, endpoints):
    endpoint = endpoints(Faults(answers=("hang",), hang_s=3))
    started = time.monotonic()
    done, out = judge_run(tmp_path, judge_params(endpoint.url, timeout_s=0.3, max_attempts=2))
    assert done.returncode == 1 and time.monotonic() - started < 60
    assert "openai: gave up after 2 attempts: TimeoutError on /chat/completions" in done.stderr


# -- 7: a key echoed by the server is scrubbed from every file and the log --------------------
def test_an_echoed_key_never_reaches_a_file_or_the_log(tmp_path, endpoints):
    endpoint = endpoints(Faults(answers=("ok", "echo_key")))
    params = judge_params(endpoint.url, max_attempts=1) | {"max_failure_rate": 1.0}
    done, out = judge_run(tmp_path, params)
    assert done.returncode == 0, done.stderr
    judgments = pd.read_parquet(out / "judgments.parquet")
    errors = judgments.loc[judgments["status"] != "ok", "error"]
    assert len(errors) == 12
    assert errors.str.contains("upstream rejected credentials Bearer <redacted>").all()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), f"the API key is in {path}"


# -- 1: downstream refuses the empty output of a failed upstream job --------------------------
def test_rater_training_refuses_empty_labels_naming_the_judge_job(tmp_path):
    from selectlab.raters import resolve as raters_cfg

    labels = tmp_path / "judgments" / "prrc" / "labels.parquet"
    labels.parent.mkdir(parents=True)
    pd.DataFrame({c: pd.Series(dtype="object") for c in prrc.LABEL_COLUMNS}).to_parquet(labels)
    done = selectlab("raters", "train", "--rater", "prrc", "--params",
                     json.dumps(raters_cfg.rater_params(CONFIG, "prrc")), "--labels",
                     str(labels), "--out", str(tmp_path / "rater"), "--metrics",
                     str(tmp_path / "metrics.json"))
    assert done.returncode == 1
    assert f"{labels} has 0 rows, at least 1 needed: the upstream job judge (prrc; log: " \
           "logs/judge/prrc.log) produced no usable output." in done.stderr
    assert "IndexError" not in done.stderr and not (tmp_path / "metrics.json").exists()


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
    return Done(capsys, "tokens", "encode", "--inputs", *map(str, files), "--tokenizer",
                     str(tokenizer), "--shard", shard, "--max-doc-chars",
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
