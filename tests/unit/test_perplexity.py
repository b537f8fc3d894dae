"""Per-source held-out perplexity: window cutting, scoring, and the numbers a model gets."""

from __future__ import annotations

import json
import math

import pytest
from conftest_eval import CODE, WIKI, eval_world

from selectlab.evaluate.perplexity import (
    canonical_dtype,
    cut_windows,
    heldout_streams,
    load_model_and_tokenizer,
    model_nll_on_windows,
    per_source_perplexity,
    token_stream,
)
from selectlab.shards import read_all

SEQ_LEN = 48  # does not divide the sources' token counts: the last window is partial


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return eval_world(tmp_path_factory)


@pytest.fixture(scope="module")
def random_result(world):
    return per_source_perplexity(world.random_model, world.heldout, seq_len=SEQ_LEN,
                                 batch_size=4, max_tokens_per_source=None, device="cpu",
                                 dtype="float32")


def test_token_stream_puts_eos_before_and_after_every_document():
    assert token_stream([[1, 2, 3], [4, 5], [6]], eos_id=0) == [0, 1, 2, 3, 0, 4, 5, 0, 6, 0]


def test_token_stream_cap_counts_scored_tokens_only():
    stream = token_stream([[1, 2, 3], [4, 5], [6]], eos_id=0, max_targets=4)
    assert stream == [0, 1, 2, 3, 0]
    assert token_stream([[1]], eos_id=0, max_targets=10) == [0, 1, 0]


@pytest.mark.parametrize("seq_len", [1, 2, 3, 4, 7, 9, 10, 50])
def test_windows_score_every_token_exactly_once(seq_len):
    stream = list(range(10))
    windows = cut_windows(stream, seq_len)
    targets = [t for w in windows for t in w[1:]]
    assert targets == stream[1:]
    assert all(2 <= len(w) <= seq_len + 1 for w in windows)
    assert len(windows) == math.ceil((len(stream) - 1) / seq_len)


def test_windows_reject_bad_seq_len():
    with pytest.raises(ValueError):
        cut_windows([1, 2, 3], 0)


def test_canonical_dtype_accepts_short_names():
    assert canonical_dtype("bf16") == "bfloat16"
    assert canonical_dtype("FP32") == "float32"
    with pytest.raises(ValueError):
        canonical_dtype("int8")


def test_nll_matches_hf_loss_and_ignores_padding(world):
    import torch

    model, tokenizer = load_model_and_tokenizer(world.random_model, device="cpu", dtype="fp32")
    stream = heldout_streams(world.heldout["test"], tokenizer, max_targets=10 * SEQ_LEN + 17)
    windows = cut_windows(stream[WIKI], SEQ_LEN)
    assert len(windows[-1]) == 18  # a right-padded partial window is in the batch
    one_by_one = model_nll_on_windows(model, windows, batch_size=1)
    batched = model_nll_on_windows(model, windows, batch_size=5)
    assert one_by_one[1] == batched[1] == sum(len(w) - 1 for w in windows)
    assert batched[0] == pytest.approx(one_by_one[0], rel=1e-5)
    with torch.no_grad():
        first = torch.as_tensor(windows[0].astype('int64'))[None]
        # HF shifts the labels itself; the extra last input position is not scored by it.
        hf_mean = float(model(input_ids=first, labels=first).loss)
    nll_first, n_first = model_nll_on_windows(model, windows[:1])
    assert nll_first / n_first == pytest.approx(hf_mean, rel=1e-5)


def test_streams_follow_reader_order_per_source(world):
    _, tokenizer = load_model_and_tokenizer(world.random_model, device="cpu", dtype="float32")
    documents, _ = read_all([world.heldout["test"]])
    streams = heldout_streams(world.heldout["test"], tokenizer, max_targets=None)
    for name in (WIKI, CODE):
        texts = [d.text for d in documents if d.set_name == name]
        expected = token_stream(tokenizer(texts, add_special_tokens=False)["input_ids"],
                                tokenizer.eos_token_id)
        assert streams[name].tolist() == expected
    capped = heldout_streams(world.heldout["test"], tokenizer, max_targets=7)
    assert {name: len(s) for name, s in capped.items()} == {WIKI: 8, CODE: 8}


def test_random_model_perplexity_is_about_vocab_size(world, random_result):
    assert set(random_result) == {"validation", "test"}
    for split in random_result.values():
        assert set(split) == {WIKI, CODE, "all"}
        for scores in split.values():
            assert scores["ppl"] == pytest.approx(math.exp(scores["nll"]), rel=1e-12)
            assert world.vocab_size / 2 < scores["ppl"] < world.vocab_size * 2


def test_tokens_count_every_document_token_plus_one_eos(world, random_result):
    _, tokenizer = load_model_and_tokenizer(world.random_model, device="cpu", dtype="float32")
    documents, _ = read_all([world.heldout["test"]])
    expected = {WIKI: 0, CODE: 0}
    for doc in documents:
        expected[doc.set_name] += len(tokenizer(doc.text, add_special_tokens=False)["input_ids"])
        expected[doc.set_name] += 1
    test = random_result["test"]
    assert {name: test[name]["tokens"] for name in expected} == expected
    assert test["all"]["tokens"] == sum(expected.values())
    weighted = sum(test[n]["nll"] * test[n]["tokens"] for n in expected) / sum(expected.values())
    assert test["all"]["nll"] == pytest.approx(weighted, rel=1e-12)


def test_trained_model_beats_random_on_its_source(world, random_result):
    trained = per_source_perplexity(world.trained_model, world.heldout, seq_len=SEQ_LEN,
                                    batch_size=8, max_tokens_per_source=None, device="cpu",
                                    dtype="float32")
    for split in ("validation", "test"):
        # Trained on Wikipedia-like text only; its perplexity there collapses.
        assert trained[split][WIKI]["ppl"] < 0.1 * random_result[split][WIKI]["ppl"]


def test_cap_and_determinism(world):
    def run(dtype: str = "float32"):
        return per_source_perplexity(world.random_model, {"test": world.heldout["test"]},
                                     seq_len=SEQ_LEN, batch_size=3, max_tokens_per_source=100,
                                     device="cpu", dtype=dtype)

    first = run()
    assert first == run()
    assert {name: s["tokens"] for name, s in first["test"].items()} == {
        WIKI: 100, CODE: 100, "all": 200}
    bf16 = run("bf16")
    assert bf16["test"]["all"]["nll"] == pytest.approx(first["test"]["all"]["nll"], abs=0.05)


class StopAfter:
    """A pre-emption signal that arrives after `checks` progress saves."""

    def __init__(self, checks: int) -> None:
        self.checks = checks

    @property
    def requested(self) -> bool:
        self.checks -= 1
        return self.checks < 0


def test_interrupted_perplexity_resumes_where_it_stopped(world, random_result, tmp_path,
                                                         monkeypatch):
    import selectlab.evaluate.perplexity as perplexity
    from selectlab.train.preemption import Preempted

    monkeypatch.setattr(perplexity, "SAVE_EVERY_BATCHES", 1)
    progress = tmp_path / "progress.json"

    def run(stop):
        return per_source_perplexity(world.random_model, world.heldout, seq_len=SEQ_LEN,
                                     batch_size=4, max_tokens_per_source=None, device="cpu",
                                     dtype="float32", progress_path=progress, stop=stop)

    with pytest.raises(Preempted, match="progress saved"):
        run(StopAfter(3))
    recorded = list(json.loads(progress.read_text())["entries"].values())
    assert recorded and not all(entry["finished"] for entry in recorded)
    scored = []
    real_batch_nll = perplexity.batch_nll

    def counting_batch_nll(*args, **kwargs):
        for nll, targets, count in real_batch_nll(*args, **kwargs):
            scored.append(count)
            yield nll, targets, count

    monkeypatch.setattr(perplexity, "batch_nll", counting_batch_nll)
    assert run(StopAfter(10**6)) == random_result  # same numbers, to the last bit
    _, tokenizer = load_model_and_tokenizer(world.random_model, device="cpu", dtype="float32")
    all_windows = sum(len(cut_windows(stream, SEQ_LEN)) for path in world.heldout.values()
                      for stream in heldout_streams(path, tokenizer, None).values())
    assert 0 < sum(scored) < all_windows  # the rerun scored only what was left


def test_progress_of_another_model_is_not_used(world, tmp_path):
    progress = tmp_path / "progress.json"
    kwargs = dict(seq_len=SEQ_LEN, batch_size=4, max_tokens_per_source=None, device="cpu",
                  dtype="float32", progress_path=progress)
    per_source_perplexity(world.random_model, world.heldout, **kwargs)
    trained = per_source_perplexity(world.trained_model, world.heldout, **kwargs)
    fresh = per_source_perplexity(world.trained_model, world.heldout, **kwargs | {
        "progress_path": None})
    assert trained == fresh
