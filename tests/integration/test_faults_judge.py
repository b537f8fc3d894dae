"""Judge faults as a new user meets them (issue items 1, 4 and 7), on the tests-only config.

Each test runs `selectlab judge run` in a subprocess, as a workflow job runs it, against the
fake judge of fault_harness: an endpoint that is down, dies mid-run, rejects the key, answers
with malformed 200s or garbage, hangs, or echoes the API key. A failing job exits non-zero
naming the endpoint, the statuses and the most frequent errors; it writes no labels; what was
answered stays cached, so the plain rerun asks only for what failed. Downstream, rater training
refuses the empty labels of a failed judge, naming that job.
"""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest
from fault_harness import (
    CONFIG,
    DOCS,
    SECRET,
    Endpoints,
    cached,
    free_port,
    judge_params,
    judge_run,
    selectlab,
)

from selectlab.judge import prrc
from selectlab.judge.server import Faults


@pytest.fixture
def endpoints():
    started = Endpoints()
    yield started
    started.stop()


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
