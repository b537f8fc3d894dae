"""DSIR: the documented hashing, the reference implementation's smoothing, target sources (never
the evaluation splits), and a cross-check against the `data-selection` package on the same
documents."""

from __future__ import annotations

import hashlib
import json
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from conftest import encode, record, write_jsonl_zst

from selectlab.annotate.dsir import (
    BIGRAM_MULTIPLIER,
    DsirAnnotator,
    DsirModel,
    NgramHasher,
    fit_dsir,
    log_distribution,
    log_importance_weights,
    mix64,
    token_hash,
)
from selectlab.annotate.dsir_sources import (
    gsm8k_text,
    gsm8k_texts,
    sample_rows,
    sampled_texts,
    target_texts,
)
from selectlab.corpus.wiki import load_wikipedia_leads
from selectlab.shards import Document

B = 10_000


@pytest.fixture(scope="module")
def texts_by_kind() -> dict[str, list[str]]:
    """Real text of three kinds: Wikipedia leads, GSM8K problems, Python source."""
    wiki = [f"{title}\n{extract}" for title, extract in load_wikipedia_leads("en-us")[:1200]]
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    modules = sorted(p for p in stdlib.rglob("*.py") if "test" not in p.parts)
    code = [p.read_text(errors="replace")[:3000] for p in modules[:600]]
    return {"wiki": wiki, "math": list(gsm8k_texts()), "code": code}


def test_token_hash_is_the_documented_blake2b():
    expected = int.from_bytes(hashlib.blake2b("café".encode(), digest_size=8).digest(), "little")
    assert token_hash("café") == expected
    assert token_hash("\udcff") == token_hash("\udcff")  # lone surrogates hash, stably


def test_features_are_unigrams_then_bigrams_within_each_document():
    hasher = NgramHasher(B)
    buckets, docs = hasher.featurize(["A b, a", "c"])
    h = {t: token_hash(t) for t in ("a", "b", ",", "c")}
    unigrams = [h[t] % B for t in ("a", "b", ",", "a", "c")]
    pairs = [("a", "b"), ("b", ","), (",", "a")]  # never ("a", "c"): across documents
    wrapped = [(h[x] * int(BIGRAM_MULTIPLIER) + h[y]) % 2**64 for x, y in pairs]
    bigrams = [int(v) % B for v in mix64(np.array(wrapped, dtype=np.uint64))]
    assert buckets.tolist() == unigrams + bigrams
    assert docs.tolist() == [0, 0, 0, 0, 1, 0, 0, 0]


def test_smoothing_options_and_weights_are_sums_of_log_ratios():
    # default: data-selection's log(p + 1e-8) of the unsmoothed distribution
    assert np.allclose(log_distribution(np.array([0, 2])), np.log([1e-8, 1.0 + 1e-8]))
    assert np.allclose(np.exp(log_distribution(np.array([0, 2]), "laplace")), [0.25, 0.75])
    with pytest.raises(ValueError, match="smoothing"):
        log_distribution(np.array([1, 2]), "kneser-ney")
    hasher = NgramHasher(B)
    model, counted = fit_dsir({"t": ["x y x"]}, ["x z", "z z"], B)
    assert counted == {"t": {"documents": 1, "features": 5},
                       "raw": {"documents": 2, "features": 6}}
    ratios = model.log_ratios()
    buckets, _ = hasher.featurize(["x y"])
    expected = ratios[0][buckets].sum()
    assert log_importance_weights(hasher, ratios, ["x y"])[0, 0] == pytest.approx(expected)


def test_a_target_scores_its_own_kind_of_text_highest(texts_by_kind):
    raw = [t for kind in ("wiki", "math", "code") for t in texts_by_kind[kind][:300]]
    targets = {"wikipedia": texts_by_kind["wiki"][300:900],
               "math": texts_by_kind["math"][300:600]}
    model, _ = fit_dsir(targets, raw, B)
    hasher = NgramHasher(B)
    held_out = {"wiki": texts_by_kind["wiki"][900:1000], "math": texts_by_kind["math"][600:700],
                "code": texts_by_kind["code"][300:400]}
    scores = {kind: log_importance_weights(hasher, model.log_ratios(), texts)
              for kind, texts in held_out.items()}
    assert model.targets == ["math", "wikipedia"]  # stored in name order
    for row, own in enumerate(("math", "wiki")):
        others = np.concatenate([scores[k][row] for k in held_out if k != own])
        wins = (scores[own][row][:, None] > others[None, :]).mean()
        assert wins > 0.95, (own, wins)


def test_default_smoothing_is_the_reference_packages_on_the_same_counts(texts_by_kind,
                                                                        tmp_path):
    """Given the bucket counts the package itself fits, our log ratios are its `log_diff`."""
    from data_selection import HashedNgramDSIR

    raw, target = texts_by_kind["code"][:200], texts_by_kind["wiki"][:200]
    for name, texts in (("raw", raw), ("target", target)):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(json.dumps({"text": t}) + "\n" for t in texts))
    package = HashedNgramDSIR([str(tmp_path / "raw.jsonl")], [str(tmp_path / "target.jsonl")],
                              cache_dir=str(tmp_path / "cache"), num_proc=1, num_buckets=B,
                              ngrams=2, tokenizer="wordpunct", min_example_length=0)
    package.fit_importance_estimator(num_tokens_to_fit="all")
    from data_selection.hashed_ngram_dsir import get_ngram_counts

    def counts(texts):
        return sum(get_ngram_counts(t, n=2, num_buckets=B) for t in texts)

    model = DsirModel(targets=["t"], target_counts=counts(target)[None], raw_counts=counts(raw))
    assert np.allclose(model.log_ratios()[0], package.log_diff, rtol=0, atol=1e-9)
    assert not np.allclose(model.log_ratios("laplace")[0], package.log_diff, atol=1e-3)


def test_log_weights_agree_with_the_data_selection_package(texts_by_kind, tmp_path):
    """Same documents, same featurisation settings (lower-cased word/punctuation tokens, uni- and
    bigrams, 10,000 buckets) and the same smoothing. One difference remains: the package hashes
    with SHA-256 of the n-gram string (other bucket collisions), which moves ranks little."""
    from data_selection import HashedNgramDSIR

    raw = [t for kind in ("wiki", "math", "code") for t in texts_by_kind[kind][:300]]
    target = texts_by_kind["wiki"][300:900]
    scored = (texts_by_kind["wiki"][900:1100] + texts_by_kind["math"][600:800]
              + texts_by_kind["code"][300:500])
    for name, texts in (("raw", raw), ("target", target)):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(json.dumps({"text": t}) + "\n" for t in texts))
    package = HashedNgramDSIR([str(tmp_path / "raw.jsonl")], [str(tmp_path / "target.jsonl")],
                              cache_dir=str(tmp_path / "cache"), num_proc=1, num_buckets=B,
                              ngrams=2, tokenizer="wordpunct", min_example_length=0)
    package.fit_importance_estimator(num_tokens_to_fit="all")
    theirs = np.array([package.importance_estimator(package.featurizer(t)) for t in scored])

    model, _ = fit_dsir({"wikipedia": target}, raw, B)
    ours = log_importance_weights(NgramHasher(B), model.log_ratios(), scored)[0]
    from scipy.stats import spearmanr

    assert spearmanr(ours, theirs).statistic > 0.97  # 0.984 on these documents


def test_model_round_trips_and_the_annotator_checks_its_settings(tmp_path):
    model, _ = fit_dsir({"book": ["a b c"], "math": ["1 + 2 = 3"]}, ["a 1", "b c"], 64)
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = DsirModel.load(path)
    assert loaded.targets == ["book", "math"] and loaded.buckets == 64
    assert np.array_equal(loaded.target_counts, model.target_counts)

    annotator = DsirAnnotator(path, 64, ["math", "book"])  # config order does not matter
    annotator.setup()
    docs = [Document("d1", "a b c", "S"), Document("d2", "1 + 2", "S")]
    columns = annotator.annotate_batch(docs)
    assert list(columns) == ["dsir_book", "dsir_math", "missing_reason"]
    assert columns["dsir_book"][0] > columns["dsir_book"][1]
    assert columns["dsir_math"][1] > columns["dsir_math"][0]
    with pytest.raises(ValueError, match="re-run fit_dsir"):
        DsirAnnotator(path, 128, ["book", "math"]).setup()


def test_gsm8k_adapter_yields_plain_math_text():
    texts = list(gsm8k_texts())
    assert len(texts) == 1319
    assert not any("<<" in t or "####" in t for t in texts)
    assert all("The answer is " in t for t in texts)
    example = gsm8k_text({"question": "What is 2+2? ",
                          "answer": "Add them: 2+2=<<2+2=4>>4\n#### 4"})
    assert example == "What is 2+2?\nAdd them: 2+2=4\nThe answer is 4."


def test_pool_split_targets_keep_only_their_source_and_evaluation_splits_are_refused(tmp_path):
    split = write_jsonl_zst(tmp_path / "dsir_target.jsonl.zst", encode([
        record("w1", "wiki one"), record("b1", "book one", "RedPajamaBook"),
        record("w2", "wiki two")]))
    texts = list(target_texts("pool:RedPajamaWikipedia", split, max_chars=1000))
    assert texts == ["wiki one", "wiki two"]
    with pytest.raises(ValueError, match="held-out splits"):
        target_texts("heldout:RedPajamaWikipedia", split, max_chars=1000)
    files = tmp_path / "math"
    write_jsonl_zst(files / "a.jsonl.zst", [b'{"text": "x = 1"}', b"broken", b'{"no": 1}'])
    assert list(target_texts(str(files / "*.jsonl.zst"), None, max_chars=1000)) == ["x = 1"]
    with pytest.raises(ValueError, match="matches no file"):
        list(target_texts(str(tmp_path / "none*.jsonl"), None, max_chars=1000))


def test_raw_rows_are_a_seeded_uniform_sample():
    rows = sample_rows([50, 0, 150], 100, seed=3)
    assert [len(r) for r in rows][1] == 0
    assert sum(len(r) for r in rows) == 100
    assert all(np.all(np.diff(r) > 0) and (len(r) == 0 or r.max() < n)
               for r, n in zip(rows, [50, 0, 150], strict=True))
    again = sample_rows([50, 0, 150], 100, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(rows, again, strict=True))
    assert len(rows[2]) > len(rows[0])  # ~75 vs ~25


def test_sampled_texts_read_the_sampled_rows_and_check_meta(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    shard = write_jsonl_zst(tmp_path / "s.jsonl.zst",
                            encode([record(f"d{i}", f"text {i}") for i in range(10)]))
    meta = tmp_path / "s.parquet"
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(10)]}), meta)
    texts = list(sampled_texts([[str(shard)]], [meta], 4, seed=0, max_chars=100))
    wanted = sample_rows([10], 4, seed=0)[0]
    assert texts == [f"text {i}" for i in wanted]
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(12)]}), meta)
    with pytest.raises(ValueError, match="re-run tokenize_shard"):
        list(sampled_texts([[str(shard)]], [meta], 4, seed=0, max_chars=100))
