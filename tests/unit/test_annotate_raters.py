"""Model-rater families: sidecars equal the saved rater's own scores; DataMan's generated answers
are re-asked when they do not parse and recorded as missing, never dropped."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import encode, record, write_jsonl_zst

from selectlab.annotate.dataman_generation import (
    GenerativeDataManAnnotator,
    RetryPolicy,
    TokenCounts,
    generate_with_retries,
)
from selectlab.annotate.rater_family import RaterAnnotator, arrow_columns, sidecar_schema
from selectlab.annotate.registry import build_annotator, family_kind
from selectlab.annotate.runner import annotate_shard
from selectlab.errors import StageError
from selectlab.judge.backends import Completion, CompletionRequest
from selectlab.judge.dataman import CRITERIA, DOMAINS
from selectlab.judge.parse import failure
from selectlab.raters.dataman_generative import parse_target
from selectlab.shards import read_all
from selectlab.tokens import META_SCHEMA

WORDS = ("river valley stone bridge field farmer wheat summer bird forest mountain snow "
         "theorem proof lemma market price court statute patient dose the a of and").split()
HEAD_PARAMS = {
    "backbone": "random_encoder", "train_backbone": False, "window": 32, "pool_layers": [-1],
    "dtype": "float32", "forward_batch_size": 16, "batch_size": 16, "epochs": 2, "lr": 1e-3,
    "weight_decay": 0.0, "validation_fraction": 0.1, "patience": 2, "heldout_fraction": 0.2,
    "seed": 0, "confident_margin": 0.1,
    "random_encoder": {"hidden_size": 32, "num_layers": 1, "num_heads": 2,
                       "intermediate_size": 64},
}


def text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words)) + "."


def pointwise_labels(rater: str, n: int, seed: int = 0) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        row = {"doc_id": f"d{i}", "text": text(rng, rng.randint(5, 80)), "set_name": "S"}
        if rater == "prrc":
            row |= {d: rng.randint(0, 5) for d in
                    ("professionalism", "readability", "reasoning", "cleanliness")}
        elif rater == "dataman":
            row |= {c: rng.randint(1, 5) for c in CRITERIA} | {"domain": rng.choice(
                list(DOMAINS))}
        elif rater == "fineweb_edu":
            row["edu_score"] = rng.uniform(0, 5)
        rows.append(row)
    return pd.DataFrame(rows)


def pairwise_labels(n: int, seed: int = 0) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        a, b = text(rng, rng.randint(5, 40)), text(rng, rng.randint(5, 40))
        for criterion in ("writing_style", "facts_and_trivia", "educational_value",
                          "required_expertise"):
            rows.append({"criterion": criterion, "doc_a": f"a{i}", "doc_b": f"b{i}",
                         "text_a": a, "text_b": b, "p_b_better": rng.random(), "n_orders": 2})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    from selectlab.tokens import train_bpe_tokenizer

    rng = random.Random(1)
    out = tmp_path_factory.mktemp("tokenizer")
    train_bpe_tokenizer([text(rng, 40) for _ in range(200)], 300, out)
    return out


@pytest.fixture(scope="module")
def rater_dirs(tmp_path_factory, tokenizer_dir) -> dict[str, Path]:
    """Small raters trained through the raters package, saved as `train_rater` saves them."""
    from selectlab.raters.build import train_head_rater

    root = tmp_path_factory.mktemp("raters")
    out = {}
    for rater in ("qurater", "prrc", "fineweb_edu", "dataman"):
        labels = pairwise_labels(30) if rater == "qurater" else pointwise_labels(rater, 40)
        path = root / f"{rater}_labels.parquet"
        labels.to_parquet(path)
        out[rater] = root / rater
        train_head_rater(rater, path, HEAD_PARAMS, out[rater], tokenizer_dir=tokenizer_dir,
                         judge_notes=["simulated judge"])
    return out


def write_shard(tmp_path: Path, n_docs: int, seed: int = 3) -> tuple[Path, Path, list[str]]:
    rng = random.Random(seed)
    records = [record(f"doc{i}", text(rng, rng.randint(3, 120)),
                      "RedPajamaBook" if i % 3 else "RedPajamaWikipedia") for i in range(n_docs)]
    shard = write_jsonl_zst(tmp_path / "raw" / "s.jsonl.zst", encode(records))
    docs, _ = read_all([shard])
    lengths = [len(d.text.split()) for d in docs]
    meta = tmp_path / "meta" / "s.parquet"
    meta.parent.mkdir(parents=True)
    pq.write_table(pa.table({
        "id": [d.id for d in docs], "set_name": [d.set_name for d in docs],
        "source_detail": ["" for _ in docs], "n_chars": [len(d.text) for d in docs],
        "n_tokens": lengths, "token_offset": list(np.cumsum([0, *lengths[:-1]]))},
        schema=META_SCHEMA), meta)
    return shard, meta, [d.text for d in docs]


@pytest.mark.parametrize("rater", ["qurater", "prrc", "fineweb_edu", "dataman"])
def test_sidecar_equals_the_loaded_raters_scores(tmp_path, rater_dirs, rater):
    from selectlab.raters.load import load_rater

    shard, meta, texts = write_shard(tmp_path, 23)
    annotator = build_annotator({"kind": "rater", "rater": rater, "forward_batch_size": 8},
                                [str(rater_dirs[rater] / "rater_card.json"),
                                 str(rater_dirs[rater] / "model")])
    out = tmp_path / rater / "s.parquet"

    stats = annotate_shard([shard], meta, annotator, out, family=rater, shard="s",
                           batch_size=7, max_chars=100_000)

    sidecar = pq.read_table(out)
    expected = load_rater(rater_dirs[rater]).score(texts)
    columns = load_rater(rater_dirs[rater]).columns
    assert sidecar.column_names == ["id", *columns, "missing_reason"]
    assert sidecar.column("id").to_pylist() == pq.read_table(meta).column("id").to_pylist()
    for name in columns:
        got = sidecar.column(name).to_pandas()
        want = pd.Series(expected[name])
        if sidecar.schema.field(name).type == pa.float64():
            np.testing.assert_allclose(got.to_numpy(float), want.to_numpy(float), atol=1e-5)
        else:
            assert got.tolist() == want.tolist(), name
    assert stats.documents == 23 and stats.kind == "rater"
    assert "simulated-judge labels" in stats.model and stats.device == "cpu"


def test_column_types_follow_the_raters_heads(rater_dirs):
    prrc = sidecar_schema("prrc", ["readability", "readability_p0"])
    assert prrc.field("readability").type == pa.int64()
    assert prrc.field("readability_p0").type == pa.float64()
    dataman = sidecar_schema("dataman", ["overall_score", "domain", "status"])
    assert [f.type for f in dataman] == [pa.int64(), pa.string(), pa.string(), pa.string()]
    assert dataman.names[-1] == "missing_reason"


def test_a_text_the_rater_cannot_read_is_null_with_its_reason(rater_dirs):
    from selectlab.raters.load import load_rater

    rater = load_rater(rater_dirs["prrc"])
    schema = sidecar_schema("prrc", rater.columns)
    columns = arrow_columns(rater.score(["", "the river and the bridge."]), schema)
    assert columns["readability"].to_pylist()[0] is None
    assert columns["readability_p3"].to_pylist()[0] is None
    assert columns["readability"].to_pylist()[1] in range(6)
    assert columns["missing_reason"].to_pylist() == ["text has no tokens", None]


def test_rater_kind_wires_the_rater_directory_and_asks_for_a_model_job():
    kind = family_kind("rater")
    params = {"kind": "rater", "rater": "prrc", "forward_batch_size": 4}
    assert kind.fitted_inputs("results/x", "prrc", params) == [
        "results/x/raters/prrc/rater_card.json", "results/x/raters/prrc/model"]
    assert kind.uses_model and kind.container == "train"
    assert family_kind("rater_generative").container == "vllm"


def test_a_family_naming_another_rater_is_refused(rater_dirs):
    annotator = RaterAnnotator(rater_dirs["prrc"], "qurater", forward_batch_size=4, gpus=0)
    with pytest.raises(ValueError, match="holds rater 'prrc'"):
        annotator.setup()


# --- DataMan's generated ratings: re-asked, then recorded as missing --------------------------

def rating_block(score: int, domain: str) -> str:
    lines = [f"{name}: {score}" for name, _ in CRITERIA.values()]
    return "\n".join(lines + [f"Domain: {domain}"])


class ScriptedBackend:
    """Answers each prompt with its script, one entry per attempt (the last one repeats)."""

    kind = "scripted"
    model_id = "scripted"
    supports_logprobs = False

    def __init__(self, script: dict[str, list[str | None]]):
        self.script = script
        self.asked: list[CompletionRequest] = []

    def fingerprint(self) -> dict:
        return {"kind": self.kind}

    def complete(self, requests):
        answers = []
        for request in requests:
            self.asked.append(request)
            options = self.script[request.prompt]
            answer = options[min(request.meta["attempt"], len(options)) - 1]
            answers.append(Completion([], error="context too long") if answer is None
                           else Completion([answer], prompt_tokens=10, completion_tokens=3))
        return answers


def test_unparseable_answers_are_retried_by_sampling_then_recorded_missing():
    script = {"ok": [rating_block(4, "C")], "late": ["no idea", rating_block(2, "A")],
              "never": ["Accuracy: 9", "???"], "error": [None]}
    backend = ScriptedBackend(script)
    requests = [CompletionRequest((), max_tokens=160, prompt=p) for p in script]
    tokens = TokenCounts()

    answers = generate_with_retries(backend, requests, lambda t: parse_target(t, "all"),
                                    RetryPolicy(max_attempts=3, retry_temperature=0.7), tokens)

    assert [a.status for a in answers] == ["ok", "ok", "parse_error", "backend_error"]
    assert answers[0].value["professionalism"] == 4 and answers[0].value["domain"] == "C"
    assert answers[1].value["overall_score"] == 2 and answers[1].attempts == 2
    assert answers[2].value is None and "3 attempt(s)" in answers[2].reason
    assert "context too long" in answers[3].reason and answers[3].attempts == 1
    asked = [(r.prompt, r.meta["attempt"], r.temperature) for r in backend.asked]
    assert asked == [("ok", 1, 0.0), ("late", 1, 0.0), ("never", 1, 0.0), ("error", 1, 0.0),
                     ("late", 2, 0.7), ("never", 2, 0.7), ("never", 3, 0.7)]
    assert tokens.prompt == 60 and tokens.completion == 18


def test_a_parser_failure_on_the_last_allowed_attempt_is_not_asked_again():
    backend = ScriptedBackend({"x": ["garbage"]})
    answers = generate_with_retries(backend, [CompletionRequest((), 4, prompt="x")],
                                    lambda t: failure("never parses"),
                                    RetryPolicy(1, 0.5), TokenCounts())
    assert len(backend.asked) == 1 and answers[0].reason.endswith("never parses")


class ScriptedDataMan(GenerativeDataManAnnotator):
    """The real rater and annotator, its backend's answers replaced by a script."""

    backend: ScriptedBackend

    def setup(self) -> None:
        super().setup()
        self.rater.backend = self.backend


@pytest.fixture(scope="module")
def generative_dir(tmp_path_factory, tokenizer_dir) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from selectlab.raters.dataman_generative import train_generative
    from selectlab.tokens import load_tokenizer

    tokenizer = load_tokenizer(tokenizer_dir)
    torch.manual_seed(0)
    backbone = tmp_path_factory.mktemp("tiny_lm")
    LlamaForCausalLM(LlamaConfig(vocab_size=len(tokenizer), hidden_size=32,
                                 intermediate_size=64, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=2,
                                 max_position_embeddings=256)).save_pretrained(backbone)
    tokenizer.save_pretrained(backbone)
    labels = tmp_path_factory.mktemp("gen_labels") / "labels.parquet"
    pointwise_labels("dataman", 12).to_parquet(labels)
    out = tmp_path_factory.mktemp("dataman_generative")
    params = {"backbone": str(backbone), "version": "score", "max_length": 96,
              "inference": {"kind": "transformers", "dtype": "float32", "batch_size": 8},
              "dtype": "float32", "batch_size": 4, "epochs": 1, "lr": 1e-4,
              "weight_decay": 0.0, "heldout_fraction": 0.25, "seed": 0}
    train_generative(labels, params, out, judge_notes=["simulated judge"])
    return out


def test_generative_dataman_keeps_every_row_and_says_why_one_is_missing(tmp_path,
                                                                         generative_dir):
    shard, meta, texts = write_shard(tmp_path, 9)
    annotator = GenerativeDataManAnnotator(generative_dir, RetryPolicy(2, 0.7), gpus=0)
    annotator.setup()
    assert annotator.schema.names == ["overall_score", "status", "missing_reason"]
    # The tiny LM is untrained: whatever it writes, each row is a score or a recorded failure
    # (any share of failures accepted here; the threshold is tested with the runner).
    out = tmp_path / "real" / "s.parquet"
    annotate_shard([shard], meta, annotator, out, family="dataman", shard="s", batch_size=4,
                   max_chars=100_000, max_failure_rate=1.0)
    real = pq.read_table(out).to_pandas()
    assert len(real) == 9 and real["status"].isin(["ok", "parse_error"]).all()
    assert (real["overall_score"].notna() == (real["status"] == "ok")).all()
    assert real.loc[real["status"] != "ok", "missing_reason"].str.contains("attempt").all()
    assert annotator.input_tokens > 0 and annotator.output_tokens > 0

    # The same rater's prompts answered by a script: a mix of parsed and unparseable rows.
    prompts = [r.prompt for r in annotator.rater.requests(texts)]
    scripted = ScriptedDataMan(generative_dir, RetryPolicy(2, 0.7), gpus=0)
    scripted.backend = ScriptedBackend(
        {p: [" 5"] if i % 3 == 0 else ["five", " 2"] if i % 3 == 1 else ["?"]
         for i, p in enumerate(prompts)})
    out = tmp_path / "scripted" / "s.parquet"
    annotate_shard([shard], meta, scripted, out, family="dataman", shard="s", batch_size=4,
                   max_chars=100_000, max_failure_rate=0.5)
    sidecar = pq.read_table(out)
    assert sidecar.column("id").to_pylist() == pq.read_table(meta).column("id").to_pylist()
    assert sidecar.column("overall_score").to_pylist() == [5, 2, None] * 3
    assert sidecar.column("status").to_pylist() == ["ok", "ok", "parse_error"] * 3
    reasons = sidecar.column("missing_reason").to_pylist()
    assert reasons[0] is None and "not an overall score" in reasons[2]
    # A third of the documents without ratings is more than the default 5% allows.
    scripted.failures.clear()
    with pytest.raises(StageError, match=r"annotate dataman s: 3 of 9 documents got no value "
                                         r"\(33.3%, above the family's max_failure_rate 5.0%\)"):
        annotate_shard([shard], meta, scripted, tmp_path / "strict" / "s.parquet",
                       family="dataman", shard="s", batch_size=4, max_chars=100_000)
