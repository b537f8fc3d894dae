"""The openai backend against the loopback server: retries, dying endpoints, keys, endpoints.

The server (`selectlab.judge.server`, what `selectlab judge serve` runs) wraps the transformers
backend on a tiny random Llama, so every answer crosses a real socket; the integration tests do
the same with SmolLM2 in a subprocess.
"""

from __future__ import annotations

import logging
import threading

import pandas as pd
import pytest
from conftest import save_random_llama

from selectlab.errors import StageError
from selectlab.judge import prrc, qurating
from selectlab.judge.openai_backend import OpenAIJudge
from selectlab.judge.parse import BACKEND_ERROR, OK
from selectlab.judge.run import RunSettings, run_protocol
from selectlab.judge.server import Faults, make_server

SECRET = "sk-test-5f1c0ffee0ddba11"


def tiny_llama(directory, tokenizer_dir) -> str:
    """A random 1-layer Llama saved with the tiny test tokenizer (no download needed)."""
    from selectlab.tokens import load_tokenizer

    return save_random_llama(directory, load_tokenizer(tokenizer_dir), hidden_size=32, layers=1)


@pytest.fixture(scope="module")
def local_judge(tmp_path_factory, sample_texts_module):
    from selectlab.judge.transformers_backend import TransformersJudge
    from selectlab.tokens import train_bpe_tokenizer

    tok_dir = tmp_path_factory.mktemp("tok")
    train_bpe_tokenizer(sample_texts_module, 400, tok_dir)
    model_dir = tiny_llama(tmp_path_factory.mktemp("llama"), tok_dir)
    return TransformersJudge(model_dir, batch_size=4, max_input_tokens=8192)


@pytest.fixture(scope="module")
def sample_texts_module():
    words = "the quick brown fox jumps over a lazy dog while seven wizards judge".split()
    return [" ".join(words[(i + j) % len(words)] for j in range(20 + i % 30)) for i in range(80)]


class Running:
    def __init__(self, backend, faults=None, api_key_env=None):
        self.server = make_server(backend, faults=faults, api_key_env=api_key_env,
                                  model_name="tiny-judge")
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve(local_judge):
    running = []

    def start(faults=None, api_key_env=None):
        running.append(Running(local_judge, faults, api_key_env))
        return running[-1]

    yield start
    for server in running:
        server.stop()


def client(url, **options) -> OpenAIJudge:
    settings = dict(concurrency=3, max_attempts=4, backoff_s=0.01, max_backoff_s=0.05,
                    timeout_s=30) | options
    return OpenAIJudge(url, "tiny-judge", **settings)


def pointwise(n: int) -> pd.DataFrame:
    return pd.DataFrame({"doc_id": [f"d{i}" for i in range(n)],
                         "text": [f"Document number {i} about owls." for i in range(n)],
                         "set_name": "RedPajamaWikipedia"})


PRRC_SHORT = prrc.Settings(dimensions=("readability",), max_tokens=6)
# The random tiny model rarely writes a parseable score: these tests are about the transport,
# so every answer counts, failed or not (the threshold has tests of its own).
RECORD_ALL = {"max_failure_rate": 1.0}


def test_retries_on_429_500_and_dropped_connections(serve, tmp_path):
    server = serve(Faults(fail_first=3, fail_statuses=(429, 500), drop_first=2))
    result = run_protocol("prrc", pointwise(6), PRRC_SHORT, client(server.url),
                          tmp_path / "c.sqlite", RunSettings(max_attempts=1, **RECORD_ALL))
    assert not (result.judgments["status"] == BACKEND_ERROR).any()
    stats = server.server.stats.as_dict()
    assert stats == {"requests": 11, "served": 6, "failed": 3, "dropped": 2}
    assert (result.judgments["raw_response"].str.len() > 0).all()


def test_gives_up_after_max_attempts_with_a_clear_error(serve, tmp_path):
    server = serve(Faults(fail_first=100, fail_statuses=(503,)))
    result = run_protocol("prrc", pointwise(2), PRRC_SHORT, client(server.url, max_attempts=3),
                          tmp_path / "c.sqlite", RunSettings(**RECORD_ALL))
    assert (result.judgments["status"] == BACKEND_ERROR).all()
    assert result.judgments["error"].str.contains("gave up after 3 attempts: HTTP 503").all()
    assert server.server.stats.requests == 6
    with pytest.raises(StageError) as failed:
        run_protocol("prrc", pointwise(2), PRRC_SHORT, client(server.url, max_attempts=3),
                     tmp_path / "c.sqlite", RunSettings())
    message = str(failed.value)
    assert message.startswith("judge prrc: 2 of 2 judgments failed (100.0%, above "
                              "judge.max_failure_rate 5.0%); no labels were written.")
    assert f"at {server.url}" in message
    assert "2 x openai: gave up after 3 attempts: HTTP 503 from /chat/completions" in message


def test_a_dying_endpoint_keeps_finished_work_and_the_rerun_asks_only_the_rest(serve, tmp_path):
    cache = tmp_path / "cache.sqlite"
    dying = serve(Faults(fail_after=4))
    first = run_protocol("prrc", pointwise(10), PRRC_SHORT, client(dying.url, max_attempts=2),
                         cache, RunSettings(max_attempts=1, batch_size=5, **RECORD_ALL))
    finished = first.judgments[first.judgments["status"] != BACKEND_ERROR]
    assert len(finished) == 4 and (first.judgments["status"] == BACKEND_ERROR).sum() == 6
    healthy = serve()
    second = run_protocol("prrc", pointwise(10), PRRC_SHORT, client(healthy.url), cache,
                          RunSettings(max_attempts=1, batch_size=5, **RECORD_ALL))
    # Answers were cached whatever they said; failures (here also unparseable ones) were not.
    asked = 10 - int((finished["status"] == OK).sum())
    assert second.queried == asked and healthy.server.stats.served == asked
    assert not (second.judgments["status"] == BACKEND_ERROR).any()
    answered = finished[finished["status"] == OK]
    kept = second.judgments.set_index("doc_id").loc[answered["doc_id"], "raw_response"]
    assert kept.tolist() == answered["raw_response"].tolist()


def test_api_key_is_sent_but_never_written(serve, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("JUDGE_TEST_KEY", SECRET)
    server = serve(Faults(fail_first=1), api_key_env="JUDGE_TEST_KEY")
    caplog.set_level(logging.DEBUG)
    judge = client(server.url, api_key_env="JUDGE_TEST_KEY")
    result = run_protocol("prrc", pointwise(3), PRRC_SHORT, judge, tmp_path / "c.sqlite",
                          RunSettings(**RECORD_ALL))
    assert not (result.judgments["status"] == BACKEND_ERROR).any()
    result.judgments.to_parquet(tmp_path / "judgments.parquet")
    result.summary.to_csv(tmp_path / "summary.csv")
    for path in tmp_path.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in caplog.text and SECRET not in repr(judge.fingerprint())
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-wrong")
    wrong = run_protocol("prrc", pointwise(1), PRRC_SHORT,
                         client(server.url, api_key_env="JUDGE_TEST_KEY"),
                         tmp_path / "other.sqlite", RunSettings(**RECORD_ALL))
    row = wrong.judgments.iloc[0]
    assert row["status"] == BACKEND_ERROR and "HTTP 401" in row["error"]
    assert "sk-wrong" not in row["error"]


def test_missing_key_variable_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("JUDGE_TEST_KEY", raising=False)
    with pytest.raises(ValueError, match="JUDGE_TEST_KEY"):
        OpenAIJudge("http://127.0.0.1:1/v1", "m", api_key_env="JUDGE_TEST_KEY")


@pytest.mark.parametrize("label_endpoint", ["completions", "chat"])
def test_label_probabilities_through_either_endpoint(serve, tmp_path, label_endpoint):
    server = serve()
    judge = client(server.url, label_endpoint=label_endpoint)
    endpoint, body = judge.body(qurating.build_queries(
        _pairs(), qurating.Settings(("writing_style",), use_logprobs=True))[0].request)
    assert endpoint == label_endpoint
    settings = qurating.Settings(("writing_style",), use_logprobs=True, top_logprobs=400)
    result = run_protocol("qurating", _pairs(), settings, judge, tmp_path / "c.sqlite",
                          RunSettings(max_attempts=1))
    # Every byte is a token of the tiny vocabulary, so both labels are among the top 400.
    assert (result.judgments["status"] == OK).all()
    assert result.labels["p_b_better"].between(0, 1).all()
    assert (result.labels["n_orders"] == 2).all()


def test_sampled_answers_without_logprobs(serve, tmp_path):
    server = serve()
    settings = qurating.Settings(("writing_style",), use_logprobs=False,
                                 samples_without_logprobs=3)
    result = run_protocol("qurating", _pairs(), settings, client(server.url, logprobs=False),
                          tmp_path / "c.sqlite", RunSettings(max_attempts=1, **RECORD_ALL))
    assert not (result.judgments["status"] == BACKEND_ERROR).any()
    assert all(len(eval_texts(raw)) == 3 for raw in result.judgments["raw_response"])


def eval_texts(raw: str) -> list[str]:
    import json

    return json.loads(raw)["texts"]


def _pairs() -> pd.DataFrame:
    return pd.DataFrame({"doc_a": ["x", "y"], "doc_b": ["y", "z"],
                         "text_a": ["the quick fox", "a lazy dog"],
                         "text_b": ["a lazy dog", "seven wizards"]})
