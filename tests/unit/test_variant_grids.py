"""Variant grids: config/paper.yaml states each paper's design as grids, and they expand into
exactly the 76 rows it spelt out before, plus the MATES row added since (names are output
paths); the schema checks grids and the variants they produce."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from selectlab.config import load_config, read_with_includes
from selectlab.config_errors import ConfigError
from selectlab.schema import validate_config
from selectlab.selection.grids import expand_variants, grid_variants, is_grid

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "config" / "schema"
# The rows of config/paper.yaml as written out before grids (main@6509020), in order, and the
# MATES row (issue 17) where it stands.
RECORDED = json.loads((Path(__file__).parent / "data" / "paper_variants.json").read_text())

QURATING = {
    "grid": {"criterion": {"writing_style": {}, "facts_and_trivia": {"label": "Facts & trivia"}},
             "mode": {"top": {"label": "top-k", "sign": "", "tau": 0},
                      "inverse": {"label": "inverse", "sign": "-", "tau": 2.0}}},
    "name": "{criterion}_{mode}",
    "variant": {"family": "qurating", "label": "{criterion.label} {mode.label}",
                "method": "rating_sample",
                "params": {"score": "{mode.sign}qurater.{criterion}", "tau": "{mode.tau}"}},
}


def raw_paper() -> dict:
    """config/paper.yaml over what it includes, its grids as written."""
    return read_with_includes(REPO / "config" / "paper.yaml")


def test_paper_grids_expand_into_the_recorded_rows_in_order():
    expanded = load_config(REPO / "config" / "paper.yaml")["variants"]
    recorded = RECORDED["variants"]
    assert len(recorded) == 77
    # The re-runs of shared rows on each paper's pool came after the recording.
    reruns = [name for name, entry in expanded.items() if "rerun_of" in entry]
    assert len(reruns) == 15 + 7
    assert [name for name in expanded if name not in reruns] == [row["name"] for row in recorded]
    for row in recorded:
        # JSON text, so 0 vs 0.0 and key order count too (jobs receive their params as JSON).
        assert json.dumps(expanded[row["name"]]) == json.dumps(row["entry"]), row["name"]


def test_paper_states_each_design_as_a_grid():
    variants = raw_paper()["variants"]
    grids = {key: entry for key, entry in variants.items() if is_grid(entry)}
    sizes = {key: len(expand_variants({key: entry})) for key, entry in grids.items()}
    assert sizes == {"qurating_criteria": 16, "qurating_curriculum": 2, "dataman_criteria": 13,
                     "overall_levels": 5, "dataman_cpt": 3, "prrc_criteria": 4,
                     "metarater_proxy_counts": 4}
    assert list(grids["qurating_criteria"]["grid"]["mode"]) == ["top", "t1", "t2", "inverse"]
    assert grids["overall_levels"]["grid"]["level"] == [1, 2, 3, 4, 5]
    assert len(variants) == 77 - sum(sizes.values()) + len(sizes) + 2  # and two reruns


def test_placeholders_fill_names_labels_and_typed_values():
    variants = expand_variants({"uniform": {"family": "baseline", "method": "uniform"},
                                "qurating": QURATING})
    assert list(variants) == ["uniform", "writing_style_top", "writing_style_inverse",
                              "facts_and_trivia_top", "facts_and_trivia_inverse"]
    inverse = variants["facts_and_trivia_inverse"]
    assert inverse["label"] == "Facts & trivia inverse"
    assert inverse["params"] == {"score": "-qurater.facts_and_trivia", "tau": 2.0}
    top = variants["writing_style_top"]
    assert top["label"] == "Writing style top-k"  # default label: name, capitalised
    assert top["params"]["tau"] == 0 and isinstance(top["params"]["tau"], int)
    levels = expand_variants({"levels": {"grid": {"level": [1, 5]}, "name": "l{level}",
                                         "variant": {"family": "f", "method": "score_level",
                                                     "params": {"level": "{level}",
                                                                "where": {"d": ["{level}"]}}}}})
    assert levels["l5"]["params"] == {"level": 5, "where": {"d": [5]}}


@pytest.mark.parametrize("change, message", [
    (lambda g: g.update(name="{criterion}"), "gives 'writing_style' twice"),
    (lambda g: g["variant"].update(label="{mode.colour}"), "has no 'colour'"),
    (lambda g: g["variant"].update(label="{size}"), "no axis 'size'"),
    (lambda g: g["grid"].update(mode=[]), "non-empty list or mapping"),
])
def test_bad_grids_are_clear_errors(change, message):
    grid = copy.deepcopy(QURATING)
    change(grid)
    with pytest.raises(ValueError, match=message):
        expand_variants({"qurating": grid})


def test_a_rerun_copies_rows_above_it_onto_other_settings():
    variants = {
        "uniform": {"family": "baseline", "label": "Uniform", "method": "uniform"},
        "qurating": QURATING,
        "datapajama": {"rerun": ["uniform", "writing_style_top"], "name": "{variant}_dp",
                       "with": {"family": "dataman_baseline", "pool": "dataman",
                                "label": "{label} (DataPajama)"}},
    }
    expanded = expand_variants(variants)
    assert list(expanded)[-2:] == ["uniform_dp", "writing_style_top_dp"]
    copy_ = expanded["writing_style_top_dp"]
    original = expanded["writing_style_top"]
    assert copy_ == original | {"family": "dataman_baseline", "pool": "dataman",
                                "label": "Writing style top-k (DataPajama)",
                                "rerun_of": "writing_style_top"}
    assert "rerun_of" not in original and "pool" not in original
    assert set(grid_variants(variants)) == {"writing_style_top", "writing_style_inverse",
                                            "facts_and_trivia_top", "facts_and_trivia_inverse",
                                            "uniform_dp", "writing_style_top_dp"}
    with pytest.raises(ValueError, match="'later' is not a variant declared above"):
        expand_variants({"early": {"rerun": ["later"], "name": "{variant}_x",
                                   "with": {"pool": "p"}},
                         "later": {"family": "f", "method": "uniform"}})
    with pytest.raises(ValueError, match="refers to another variant"):
        expand_variants({"u": {"family": "f", "method": "uniform"},
                         "c": {"family": "f", "method": "curriculum", "params": {"of": "u"}},
                         "r": {"rerun": ["c"], "name": "{variant}_x", "with": {"pool": "p"}}})


def test_a_name_given_twice_is_an_error():
    with pytest.raises(ValueError, match="'writing_style_top' is named twice"):
        expand_variants({"writing_style_top": {"family": "x", "method": "uniform"},
                         "qurating": QURATING})


def test_schema_checks_grids_and_the_variants_they_produce():
    config = raw_paper()
    validate(copy.deepcopy(config), str(SCHEMA / "config.schema.yaml"))
    validate(grid_variants(config["variants"]), str(SCHEMA / "variant_set.schema.yaml"))
    bad = copy.deepcopy(config)
    bad["variants"]["overall_levels"]["grid"]["level"] = []
    with pytest.raises(WorkflowError, match="overall_levels"):
        validate(bad, str(SCHEMA / "config.schema.yaml"))
    # A template that fills tau with text passes the grid's schema; its variants do not.
    bad = copy.deepcopy(config)
    bad["variants"]["qurating_criteria"]["grid"]["mode"]["t1"]["tau"] = "one"
    validate(copy.deepcopy(bad), str(SCHEMA / "config.schema.yaml"))
    with pytest.raises(WorkflowError, match=r"_t1'\]\['params'\]\['tau'\]"):
        validate(grid_variants(bad["variants"]), str(SCHEMA / "variant_set.schema.yaml"))


def test_the_workflows_validation_checks_grids_and_their_variants_alike():
    # The Snakefile validates with selectlab.schema (each schema file read once), not Snakemake's.
    config = raw_paper()
    validate_config(copy.deepcopy(config), SCHEMA / "config.schema.yaml")
    validate_config(grid_variants(config["variants"]), SCHEMA / "variant_set.schema.yaml")
    bad = copy.deepcopy(config)
    bad["variants"]["overall_levels"]["grid"]["level"] = []
    with pytest.raises(ConfigError, match="overall_levels"):
        validate_config(bad, SCHEMA / "config.schema.yaml")
    bad = copy.deepcopy(config)
    bad["variants"]["qurating_criteria"]["grid"]["mode"]["t1"]["tau"] = "one"
    validate_config(copy.deepcopy(bad), SCHEMA / "config.schema.yaml")
    with pytest.raises(ConfigError, match=r"4 problems(.|\n)*_t1.params.tau: 'one'"):
        validate_config(grid_variants(bad["variants"]), SCHEMA / "variant_set.schema.yaml")
