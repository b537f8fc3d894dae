"""Plan-time checks: readable schema errors and every name the config refers to."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from selectlab.config import load_config
from selectlab.config_errors import ConfigError
from selectlab.crossref import check_config, family_columns, problems
from selectlab.schema import check_schema, schema_problems

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "config" / "schema" / "config.schema.yaml"


@pytest.fixture(scope="module")
def default() -> dict:
    return load_config(REPO / "config" / "config.yaml")


@pytest.mark.parametrize("name", ["config/config.yaml", "config/paper.yaml", ".test/config.yaml"])
def test_the_shipped_configs_pass(name):
    config = load_config(REPO / name)
    assert schema_problems(config, SCHEMA) == []
    assert problems(config) == []


def test_schema_errors_are_one_line_each_with_key_value_and_expectation(default):
    config = copy.deepcopy(default)
    config["pretrain"]["micro_batch_sequence"] = 4
    config["judge"]["backend"]["kind"] = "vlm"
    config["corpus"]["reader"]["max_doc_chars"] = -3
    with pytest.raises(ConfigError) as error:
        check_schema(config, SCHEMA)
    lines = str(error.value).splitlines()
    assert lines[0] == "config does not match the schema: 3 problems, found before any job ran:"
    assert lines[1] == "  corpus.reader.max_doc_chars: -3 is not valid; expected a number >= 1"
    assert lines[2] == ("  judge.backend.kind: 'vlm' is not valid; expected one of 'simulated', "
                        "'transformers', 'vllm', 'openai'")
    assert lines[3].startswith("  pretrain: 'micro_batch_sequence' is not a known key (did you "
                               "mean 'micro_batch_sequences'?); expected one of the keys ")
    assert len(lines) == 4


def test_every_misspelt_reference_is_named_with_a_suggestion(default):
    config = copy.deepcopy(default)
    config["variants"]["educational_value_t2"]["params"]["score"] = "qurater.educational_valu"
    config["variants"]["semdedup"]["params"]["embedding"] = "embeding.embedding"
    config["variants"]["metarater_all"]["params"]["search"] = "model_fre"
    config["variants"]["uniform"]["pretrain"] = {"preset": "tiyn"}
    config["evaluation"]["baseline"] = "unifrom"
    found = problems(config)
    assert found == [
        "variants.uniform.pretrain.preset: 'tiyn' is not a model preset (models.presets) (did "
        "you mean 'tiny'?); known: tiny",
        "variants.semdedup.params.embedding: 'embeding' is not a score family (an annotation "
        "family of annotate.families, or meta) (did you mean 'embedding'?); known: dataman, "
        "dsir, embedding, fineweb_edu, meta, prrc, qurater, refppl, signals, wanjuan",
        "variants.metarater_all.params.search: 'model_fre' is not a Meta-rater search "
        "(metarater.searches) (did you mean 'model_free'?); known: model_free",
        "variants.educational_value_t2.params.score: 'qurater.educational_valu' is not a column "
        "of family 'qurater' (did you mean 'qurater.educational_value'?); qurater writes: "
        "writing_style, facts_and_trivia, educational_value, required_expertise",
        f"evaluation.baseline: 'unifrom' is not a variant (did you mean 'uniform'?); known: "
        f"{', '.join(sorted(config['variants']))}",
    ]


def test_sizes_that_cannot_work_together(default, tmp_path):
    config = copy.deepcopy(default)
    config["pretrain"]["micro_batch_sequences"] = 16
    config["variants"]["criteria_mix"] = {"family": "qurating", "method": "weighted_topk",
                                          "params": {"scores": ["qurater.writing_style",
                                                                "qurater.educational_value"],
                                                     "weights": [1.0]}}
    config["variants"]["uniform_plus50"]["budget_tokens"] = 10**9
    reports = tmp_path / "corpus" / "reports"
    reports.mkdir(parents=True)
    (reports / "shard_00000.json").write_text('{"tokens": 500000}')
    with pytest.raises(ConfigError) as error:
        check_config(config, tmp_path)
    text = str(error.value)
    assert "pretrain: global_batch_sequences 8 is not a multiple of micro_batch_sequences 16 x " \
           "1 process(es) of preset 'tiny'" in text
    assert "variants.criteria_mix.params.weights: 1 weights for 2 scores; give one weight per " \
           "score" in text
    assert "variants.uniform_plus50: a budget of 1,500,000,000 tokens is larger than the whole " \
           "pool (500,000 tokens)" in text


def test_family_columns_follow_the_configured_families(default):
    columns = family_columns(default)
    assert columns["dsir"] == ["dsir_wikipedia", "dsir_book", "dsir_math"]
    assert columns["refppl"] == ["ref_nll", "ref_ppl", "ref_tokens"]
    assert "doc_word_count" in columns["signals"] and "n_tokens" in columns["meta"]
    assert "overall_score" in columns["dataman"] and "domain" in columns["dataman"]
