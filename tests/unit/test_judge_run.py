"""The runner: cache reuse across reruns, what is and is not cached, tables and summary."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from selectlab.errors import StageError
from selectlab.judge import dataman, prrc
from selectlab.judge.backends import BackendDead, Completion
from selectlab.judge.cache import JudgmentCache
from selectlab.judge.parse import BACKEND_ERROR, OK
from selectlab.judge.run import JUDGMENT_COLUMNS, SUMMARY_COLUMNS, RunSettings, run_protocol
from selectlab.judge.simulated import SimulatedDocument, SimulatedJudge, SimulatedSettings


def documents(n: int) -> dict[str, SimulatedDocument]:
    return {f"doc{i:03d}": SimulatedDocument("RedPajamaWikipedia", "wikipedia:en:X",
                                             "none" if i % 2 else "spam_insertion",
                                             0.0 if i % 2 else 0.7, f"text {i}")
            for i in range(n)}


def sample(ids) -> pd.DataFrame:
    return pd.DataFrame({"doc_id": list(ids), "text": [f"text of {i}" for i in ids],
                         "set_name": "RedPajamaWikipedia"})


def judge(docs, **overrides) -> SimulatedJudge:
    settings = dict(noise=0.05, pairwise_temperature=0.1, position_bias=0.0,
                    malformed_rate=0.0, seed=1) | overrides
    return SimulatedJudge(docs, SimulatedSettings(**settings))


def run(ids, cache, backend, settings=None, **run_settings):
    return run_protocol("prrc", sample(ids), settings or prrc.Settings(), backend, cache,
                        RunSettings(**run_settings))


def test_rerun_asks_nothing_and_more_documents_ask_only_the_new_ones(tmp_path):
    docs = documents(30)
    cache = tmp_path / "cache.sqlite"
    first = run(list(docs)[:20], cache, judge(docs))
    assert first.queried == 80 and len(first.judgments) == 80
    again = run(list(docs)[:20], cache, judge(docs))
    assert again.queried == 0
    pd.testing.assert_frame_equal(first.judgments, again.judgments)
    pd.testing.assert_frame_equal(first.labels, again.labels)
    more = run(list(docs), cache, judge(docs))
    assert more.queried == 40 and len(more.judgments) == 120
    summary = more.summary.set_index("criterion")
    assert summary.loc["all", "cached"] == 80 and summary.loc["readability", "cached"] == 20


def test_cache_is_keyed_by_model_settings_and_template(tmp_path):
    docs = documents(5)
    cache = tmp_path / "cache.sqlite"
    run(list(docs), cache, judge(docs))
    assert run(list(docs), cache, judge(docs, noise=0.2)).queried == 20  # backend settings
    assert run(list(docs), cache, judge(docs), prrc.Settings(max_tokens=64)).queried == 20
    renamed = judge(docs)
    renamed.model_id = "another-judge"
    assert run(list(docs), cache, renamed).queried == 20
    only_two = prrc.Settings(dimensions=("readability", "reasoning"))
    assert run(list(docs), cache, judge(docs), only_two).queried == 0


def test_backend_errors_are_recorded_but_not_cached(tmp_path):
    docs = documents(4)
    cache = tmp_path / "cache.sqlite"
    ids = [*docs, "missing-doc"]
    result = run(ids, cache, judge(docs), max_failure_rate=1.0)
    failed = result.judgments[result.judgments["doc_id"] == "missing-doc"]
    assert (failed["status"] == BACKEND_ERROR).all() and len(failed) == 4
    assert (failed["attempts"] == 1).all()  # not re-queried: only parse failures are
    with JudgmentCache(cache) as stored:
        assert len(stored) == 16
    assert run(ids, cache, judge(docs), max_failure_rate=1.0).queried == 4


class Outage:
    """The simulated judge behind an endpoint that fails the queries of some documents."""

    def __init__(self, inner, down_for: set[str]):
        self.inner, self.down_for, self.asked = inner, down_for, []
        self.kind, self.model_id = inner.kind, inner.model_id
        self.supports_logprobs = inner.supports_logprobs

    def fingerprint(self):
        return self.inner.fingerprint()

    def complete(self, requests):
        self.asked += [r.meta["doc_id"] for r in requests]
        answers = self.inner.complete(requests)
        return [Completion([], error="HTTP 503 from /chat/completions: overloaded")
                if r.meta["doc_id"] in self.down_for else answer
                for r, answer in zip(requests, answers, strict=True)]


def test_failures_above_the_threshold_fail_the_run_and_a_rerun_asks_only_for_them(tmp_path):
    docs = documents(10)
    cache = tmp_path / "cache.sqlite"
    down = {"doc001", "doc004", "doc007"}
    with pytest.raises(StageError) as failed:
        run(list(docs), cache, Outage(judge(docs), down))
    message = str(failed.value)
    assert message.splitlines() == [
        "judge prrc: 12 of 40 judgments failed (30.0%, above judge.max_failure_rate 5.0%); no "
        "labels were written.",
        "  judge: simulated model 'simulated-judge'",
        "  failures: backend_error 12, parse_error 0",
        "  most frequent errors:",
        "    12 x HTTP 503 from /chat/completions: overloaded",
        f"  28 answered judgments are kept in {cache}; once the cause is fixed, a plain rerun "
        "asks only for the 12 others."]
    with JudgmentCache(cache) as stored:
        assert len(stored) == 28
    repaired = Outage(judge(docs), set())
    result = run(list(docs), cache, repaired)
    assert sorted(set(repaired.asked)) == sorted(down) and len(repaired.asked) == 12
    assert result.queried == 12 and (result.judgments["status"] == OK).all()


def test_parse_failures_are_asked_again_by_the_next_run(tmp_path):
    docs = documents(10)
    cache = tmp_path / "cache.sqlite"
    first = run(list(docs), cache, judge(docs, malformed_rate=0.3), max_attempts=1,
                max_failure_rate=1.0)
    failed = int((first.judgments["status"] != OK).sum())
    assert failed > 0
    again = run(list(docs), cache, judge(docs, malformed_rate=0.3), max_attempts=1,
                max_failure_rate=1.0)
    assert again.queried == failed


class FailingBatches:
    """The simulated judge behind an engine whose first `failures` calls raise."""

    def __init__(self, inner, failures: int, dead: bool = False):
        self.inner, self.failures, self.dead, self.calls = inner, failures, dead, 0
        self.kind, self.model_id = inner.kind, inner.model_id
        self.supports_logprobs = inner.supports_logprobs

    def fingerprint(self):
        return self.inner.fingerprint()

    def complete(self, requests):
        self.calls += 1
        if self.dead and self.calls > 1:
            raise BackendDead("engine process exited")
        if self.calls <= self.failures:
            raise RuntimeError("engine hiccup")
        return self.inner.complete(requests)


def test_a_failed_batch_is_sent_again(tmp_path):
    docs = documents(4)
    backend = FailingBatches(judge(docs), failures=2)
    result = run(list(docs), tmp_path / "c.sqlite", backend, batch_size=16, batch_retries=2)
    assert (result.judgments["status"] == OK).all() and backend.calls == 3


def test_a_batch_failing_every_retry_is_counted_as_backend_errors(tmp_path):
    docs = documents(4)
    backend = FailingBatches(judge(docs), failures=10)
    with pytest.raises(StageError, match="16 x simulated: the batch failed 2 times: "
                                         "RuntimeError: engine hiccup"):
        run(list(docs), tmp_path / "c.sqlite", backend, batch_size=16, batch_retries=1)


def test_a_dead_backend_stops_the_run_keeping_what_was_answered(tmp_path):
    docs = documents(10)
    cache = tmp_path / "cache.sqlite"
    backend = FailingBatches(judge(docs), failures=0, dead=True)
    with pytest.raises(StageError) as stopped:
        run(list(docs), cache, backend, batch_size=8)
    assert backend.calls == 2  # the dead engine is not asked again
    message = str(stopped.value)
    assert message.startswith("judge prrc: stopped: the simulated backend died (engine process "
                              "exited); 8 of 40 judgments are answered, no labels were written.")
    assert "not asked 32" in message
    with JudgmentCache(cache) as stored:
        assert len(stored) == 8
    assert run(list(docs), cache, judge(docs)).queried == 32


def test_an_endpoint_that_answers_nothing_stops_after_two_batches(tmp_path):
    docs = documents(10)
    backend = judge(docs)
    ids = [f"gone{i}" for i in range(10)]  # the simulated judge errors on unknown documents
    with pytest.raises(StageError, match=r"stopped: 2 batches in a row got no answer at all; "
                                         r"0 of 40 judgments are answered"):
        run(ids, tmp_path / "c.sqlite", backend, batch_size=4)


def test_tables_have_the_contracted_columns_and_types(tmp_path):
    docs = documents(6)
    result = run_protocol("dataman", sample(docs), dataman.Settings(), judge(docs),
                          tmp_path / "c.sqlite", RunSettings(price_per_1k_prompt=0.5,
                                                             price_per_1k_completion=2.0))
    judgments = result.judgments
    assert judgments.columns.tolist() == list(JUDGMENT_COLUMNS)
    assert str(judgments["order"].dtype) == "int64" and str(judgments["value"].dtype) == "float64"
    row = judgments.iloc[0]
    assert row["protocol"] == "dataman" and row["criterion"] == "all"
    assert row["backend"] == "simulated" and row["model"] == "simulated-judge"
    assert row["template_hash"] == dataman.TEMPLATE_HASH and len(row["template_hash"]) == 64
    parsed = json.loads(row["parsed"])
    assert row["value"] == parsed["overall_score"] and parsed["domain"] in dataman.DOMAINS
    assert row["raw_response"].splitlines()[-1] == f"Domain: {parsed['domain']}"
    assert result.labels.columns.tolist() == dataman.LABEL_COLUMNS
    assert result.labels["overall_score"].between(1, 5).all()
    summary = result.summary
    assert summary.columns.tolist() == SUMMARY_COLUMNS
    overall = summary.set_index("criterion").loc["all"]
    assert overall["queries"] == 6 and overall["ok"] == 6 and overall["failure_rate"] == 0.0
    expected_cost = (judgments.prompt_tokens.sum() * 0.5
                     + judgments.completion_tokens.sum() * 2.0) / 1000
    assert overall["cost_usd"] == pytest.approx(expected_cost, abs=1e-6)
    assert len(summary) == 1  # one criterion ("all") needs no separate total


def test_prrc_labels_are_null_only_where_a_dimension_failed(tmp_path):
    docs = documents(40)
    result = run(list(docs), tmp_path / "c.sqlite", judge(docs, malformed_rate=0.5),
                 max_attempts=1, max_failure_rate=1.0)
    labels = result.labels.set_index("doc_id")
    judgments = result.judgments
    for row in judgments.itertuples():
        value = labels[row.criterion].get(row.doc_id, pd.NA)
        if row.status == OK:
            assert value == row.value
        else:
            assert pd.isna(value)
    assert str(labels["readability"].dtype) == "Int64"


def test_run_command_writes_judgments_labels_and_summary(tmp_path):
    from selectlab.cli import main

    docs = documents(8)
    table = sample(docs).assign(source_detail="wikipedia:en:X")
    table.to_parquet(tmp_path / "sample.parquet")
    pd.DataFrame({"id": list(docs), "set_name": [d.set_name for d in docs.values()],
                  "source": "wikipedia", "operator": [d.operator for d in docs.values()],
                  "severity": [d.severity for d in docs.values()]}).to_parquet(
        tmp_path / "ground_truth.parquet")
    params = {"protocol": "prrc", "seed": 3,
              "backend": {"kind": "simulated", "model": "simulated-judge", "batch_size": 4},
              "simulated": {"noise": 0.05, "pairwise_temperature": 0.1, "position_bias": 0.0,
                            "malformed_rate": 0.0},
              "settings": {"max_new_tokens": 64, "max_attempts": 2}}
    out = tmp_path / "out"
    argv = ["judge", "run", "--sample", str(tmp_path / "sample.parquet"),
            "--ground-truth", str(tmp_path / "ground_truth.parquet"),
            "--params", json.dumps(params), "--cache", str(out / "cache.sqlite"),
            "--out-judgments", str(out / "judgments.parquet"),
            "--out-labels", str(out / "labels.parquet"), "--out-summary", str(out / "summary.csv")]
    assert main(argv) == 0
    labels = pd.read_parquet(out / "labels.parquet")
    assert labels.columns.tolist() == prrc.LABEL_COLUMNS and len(labels) == 8
    summary = pd.read_csv(out / "summary.csv")
    assert summary["criterion"].tolist() == [*prrc.DIMENSIONS, "all"]
    assert (summary["backend"] == "simulated").all()
    no_truth = [a for a in argv if a not in ("--ground-truth", str(tmp_path /
                                                                   "ground_truth.parquet"))]
    assert main(no_truth) == 2  # a clear error, not a traceback


def test_the_failure_table_has_counts_only():
    from selectlab.judge.failures import FAILURE_COLUMNS, failure_table

    summary = pd.DataFrame({"criterion": ["readability", "all"], "backend": "openai",
                            "model": "m", "queries": [4, 8], "ok": [3, 6], "parse_error": [1, 1],
                            "backend_error": [0, 1], "failure_rate": [0.25, 0.25],
                            "latency_s": [1.5, 3.0]})
    table = failure_table({"prrc": summary})
    assert table.columns.tolist() == FAILURE_COLUMNS
    assert table.iloc[0].tolist() == ["prrc", "openai", "m", 8, 6, 1, 1, 0.25]
