"""DataMan's full-scale path: answer-only loss, low-score up-sampling, rating strings, and a tiny
causal LM trained, saved, loaded and run through the judge's transformers backend."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from selectlab.judge import dataman
from selectlab.raters import dataman_generative as gen
from selectlab.raters.load import load_rater
from selectlab.raters.pointwise import upsample_low_scores
from selectlab.raters.spec import DATAMAN_VERSIONS


@pytest.fixture
def tokenizer(tiny_tokenizer_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_tokenizer_dir)


def rating_row(overall: int, domain: str = "H") -> dict:
    return {key: overall for key in dataman.CRITERIA} | {"domain": domain}


@pytest.mark.parametrize("version", DATAMAN_VERSIONS)
def test_loss_covers_exactly_the_answer_and_eos(tokenizer, version):
    target = gen.render_target(rating_row(4), version)
    example = gen.encode_example(tokenizer, "a quick brown fox jumps over the lazy dog", target,
                                 version, max_length=2000)
    answer = tokenizer(target, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    unmasked = [i for i, label in enumerate(example.labels) if label != gen.IGNORE]
    assert len(example.input_ids) == len(example.labels)
    assert unmasked == list(range(len(example.input_ids) - len(answer), len(example.input_ids)))
    assert [example.labels[i] for i in unmasked] == answer
    assert [example.input_ids[i] for i in unmasked] == answer


def test_long_documents_are_clipped_never_the_answer(tokenizer):
    target = gen.render_target(rating_row(2), "score")
    long_text = " ".join(["word"] * 500)
    before, cue = gen.prompt_parts("score")
    limit = len(tokenizer(before + cue, add_special_tokens=False)["input_ids"]) + 40
    example = gen.encode_example(tokenizer, long_text, target, "score", max_length=limit)
    assert len(example.input_ids) == limit
    assert sum(label != gen.IGNORE for label in example.labels) == len(
        tokenizer(target, add_special_tokens=False)["input_ids"]) + 1
    with pytest.raises(ValueError, match="no room"):
        gen.encode_example(tokenizer, long_text, gen.render_target(rating_row(2), "all"), "all",
                           max_length=20)


def test_collate_pads_labels_with_the_ignore_index(tokenizer):
    a = gen.Encoded([1, 2, 3], [gen.IGNORE, 2, 3])
    b = gen.Encoded([4], [4])
    batch = gen.collate([a, b], pad_id=0)
    assert batch["labels"].tolist() == [[gen.IGNORE, 2, 3], [4, gen.IGNORE, gen.IGNORE]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]


def test_low_scores_are_up_sampled_by_the_configured_factor():
    scores = np.array([1, 5, 2, 3, 4, 2, np.inf])  # the last has no overall score
    train = np.array([0, 1, 2, 3, 6])  # document 5 is held out: never repeated
    out = upsample_low_scores(train, scores, factor=4)
    counts = {i: int((out == i).sum()) for i in range(7)}
    assert counts == {0: 4, 1: 1, 2: 4, 3: 1, 4: 0, 5: 0, 6: 1}
    assert upsample_low_scores(train, scores, factor=1).tolist() == train.tolist()
    with pytest.raises(ValueError):
        upsample_low_scores(train, scores, factor=0)


@pytest.mark.parametrize("version", DATAMAN_VERSIONS)
def test_rating_strings_parse_back_to_the_ratings(version):
    row = rating_row(3, domain="C") | {"coherence": 5}
    parsed = gen.parse_target(gen.render_target(row, version), version)
    assert parsed.ok
    expected = {"all": row, "score": {"overall_score": 3}, "domain": {"domain": "C"}}[version]
    assert parsed.value == expected


def test_malformed_generations_are_parse_errors():
    assert not gen.parse_target("6", "score").ok
    assert not gen.parse_target("", "domain").ok
    assert not gen.parse_target(" Z", "domain").ok
    assert not gen.parse_target("Accuracy: 3", "all").ok


@pytest.fixture
def tiny_causal_lm(tmp_path_factory, tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    out = tmp_path_factory.mktemp("causal_lm")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, intermediate_size=64,
                         max_position_embeddings=512, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    LlamaForCausalLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def test_tiny_lm_trains_saves_and_scores_through_the_judge_backend(tmp_path, tiny_causal_lm):
    rng = np.random.default_rng(0)
    rows = [{"doc_id": f"d{i}", "text": f"document number {i} " * (1 + i % 3),
             "set_name": "RedPajamaWikipedia"} | rating_row(int(rng.integers(1, 6)))
            for i in range(12)]
    labels = tmp_path / "labels.parquet"
    pd.DataFrame(rows).to_parquet(labels)
    params = {"backbone": str(tiny_causal_lm), "version": "score", "max_length": 256,
              "inference": {"kind": "transformers", "dtype": "float32"}, "dtype": "float32",
              "batch_size": 4, "epochs": 2, "lr": 1e-3, "weight_decay": 0.0,
              "heldout_fraction": 0.25, "seed": 0, "upsample_low_scores": 4}
    record = gen.train_generative(labels, params, tmp_path / "rater", judge_notes=["sim"])
    card = json.loads((tmp_path / "rater" / "rater_card.json").read_text())
    assert card["kind"] == "generative" and card["version"] == "score"
    assert len(card["training"]["epoch_losses"]) == 2
    from selectlab.raters.build import split_documents

    train, held = split_documents(12, 0.25, seed=0)
    low = sum(rows[i]["overall_score"] < 3 for i in train)
    assert card["training"]["train_examples"] == len(train) + 3 * low
    assert card["training"]["heldout_documents"] == len(held) == 3
    assert 0.0 <= record["metrics"]["parsed_share"] <= 1.0
    # DataMan Table 10's row of this version: the held-out documents scored once more
    speed = record["throughput"]
    assert speed["documents"] == 3 and speed["input_tokens"] > 0 and speed["seconds"] > 0
    assert speed["docs_per_s"] == pytest.approx(3 / speed["seconds"], rel=0.05)
    assert speed["output_tokens"] > 0 and speed["memory_kind"] == "rss"
    assert record["version"] == "score" and record["name"] == "dataman"
    rater = load_rater(tmp_path / "rater")
    assert rater.columns == ["overall_score", "status"]
    scored = rater.score(["a new text", "another one"])
    assert set(scored) == {"overall_score", "status", "missing_reason"}
    for status, value, reason in zip(scored["status"], scored["overall_score"],
                                     scored["missing_reason"], strict=True):
        if status == "ok":
            assert 1 <= value <= 5 and reason is None
        else:
            assert value is pd.NA and reason
