"""Shared parts of the fault-injection tests (test_faults_judge.py, test_faults_input.py).

A fake judge on 127.0.0.1: the real OpenAI-compatible server of `selectlab.judge.server` (with
its fault injection) around a backend that always answers PRRC's format well, so every fault
comes from the server; and the `selectlab` command run as a workflow job runs it, on the
settings the tests-only config (.test/config.yaml) resolves.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd

from selectlab.config import load_config
from selectlab.judge import resolve as judge_cfg
from selectlab.judge.backends import Completion
from selectlab.judge.cache import JudgmentCache
from selectlab.judge.server import Faults, make_server

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
    """The fake judge serving on a free loopback port until `stop`."""

    def __init__(self, faults: Faults | None = None, key: str | None = SECRET):
        os.environ[KEY_VARIABLE] = key or ""
        self.server = make_server(FakeJudge(), faults=faults, model_name="fake-judge",
                                  api_key_env=KEY_VARIABLE if key else None)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Endpoints:
    """Endpoints started by one test, all stopped at its end."""

    def __init__(self):
        self.started: list[Endpoint] = []

    def __call__(self, faults: Faults | None = None, key: str | None = SECRET) -> Endpoint:
        self.started.append(Endpoint(faults, key))
        return self.started[-1]

    def stop(self) -> None:
        for endpoint in self.started:
            endpoint.stop()


def free_port() -> int:
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


