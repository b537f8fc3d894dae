"""Replicates: k seeds of one selection variant, each a whole independent chain."""

from __future__ import annotations

import copy

import pytest

from selectlab.config import load_config
from selectlab.replicates import (
    all_replicate_names,
    base_variant,
    parse_replicate_name,
    replicate_names,
    replicate_seed,
)
from selectlab.selection import resolve as select_cfg
from selectlab.train import resolve as train_cfg
from tests.conftest import REPO

EMBEDDED = load_config(REPO / "config" / "config.yaml")


def with_replicates(k: int, **per_variant: int) -> dict:
    config = copy.deepcopy(EMBEDDED)
    config["replicates"] = k
    for name, count in per_variant.items():
        config["variants"][name]["replicates"] = count
    return config


def test_names_and_counts():
    config = with_replicates(3, uniform_plus50=1)
    assert replicate_names(config, "uniform") == ["uniform", "uniform__rep1", "uniform__rep2"]
    assert replicate_names(config, "uniform_plus50") == ["uniform_plus50"]
    assert "uniform__rep2" in all_replicate_names(config)
    assert not any(n.startswith("uniform_plus50__") for n in all_replicate_names(config))
    assert parse_replicate_name("overall_l5__rep2") == ("overall_l5", 2)
    assert parse_replicate_name("overall_l5__rep0") is None
    assert parse_replicate_name("all25__proxy003") is None
    assert base_variant("overall_l5__rep2") == "overall_l5" and base_variant("x") == "x"
    assert replicate_names(EMBEDDED, "dsir_wikipedia") == ["dsir_wikipedia"]  # unset: one run
    # A MATES variant's stages are named after it: it runs once, and cannot ask for more.
    assert replicate_names(config, "mates") == ["mates"]
    config["variants"]["mates"]["replicates"] = 2
    with pytest.raises(ValueError, match="runs once"):
        replicate_names(config, "mates")


def test_each_replicate_has_its_own_selection_and_model_seed():
    config = with_replicates(3)
    seeds = {select_cfg.resolve_selection(config, n)["seed"]
             for n in replicate_names(config, "uniform") + replicate_names(config, "overall_l5")}
    assert len(seeds) == 6  # no two selections share a seed, across variants either
    models = {variant: [train_cfg.resolve_pretrain(config, n)["settings"]["seed"]
                        for n in replicate_names(config, variant)]
              for variant in ("uniform", "overall_l5")}
    # Replicate i of every variant trains with the same model seed (rows differ only in their
    # data), replicate 0 with the run's; the replicates' model seeds differ.
    assert models["uniform"] == models["overall_l5"]
    assert models["uniform"][0] == config["seed"] and len(set(models["uniform"])) == 3
    for name in replicate_names(config, "overall_l5"):
        selection = select_cfg.resolve_selection(config, name)
        assert selection["method"] == "score_level"  # everything else is the variant's
    # A variant with a set seed: its replicates shift it.
    config["variants"]["uniform"]["seed"] = 11
    assert select_cfg.variant_seed(config, "uniform__rep1") == replicate_seed(11, 1) != 11
    with pytest.raises(ValueError, match="replicate"):
        select_cfg.variant_entry(config, "uniform__rep3")


def test_a_replicate_reorders_and_continues_its_own_chain():
    config = with_replicates(2)
    curriculum = "curriculum_expertise_up__rep1"
    assert select_cfg.selection_params(config, curriculum)["of"] == "uniform__rep1"
    assert select_cfg.selection_upstream(config, "results/x", curriculum) == [
        "results/x/selections/uniform__rep1/selection.parquet"]
    assert train_cfg.init_variant(config, "cpt_technology__rep1") == "overall_l5__rep1"
    # A base with a single run is shared by every replicate built on it.
    single_base = with_replicates(2, overall_l5=1)
    assert train_cfg.init_variant(single_base, "cpt_technology__rep1") == "overall_l5"
