"""Checkpoint merging only where a paper did it: DataMan (Appendix C) merges the last three of
its checkpoints saved every 1,000 steps; QuRating and Meta-rater keep the final weights."""

from __future__ import annotations

from pathlib import Path

import pytest

from selectlab.config import load_config
from selectlab.selection import resolve as selection
from selectlab.train import resolve as train
from selectlab.train.averaging import checkpoints_to_keep, merged_steps

REPO = Path(__file__).resolve().parents[2]
DATAMAN_FAMILIES = {"dataman", "dataman_level", "dataman_domain", "budget_60b"}


def test_dataman_merges_the_last_three_regular_checkpoints():
    # 30B tokens in batches of 2,048 x 1,024 tokens: 14,305 steps, checkpoints every 1,000
    steps = 30_000_000_000 // (2048 * 1024)
    assert steps == 14_305
    assert merged_steps(steps, 1000, 3) == [12_000, 13_000, 14_000]
    assert checkpoints_to_keep(steps, 1000, 3) == 4  # and the final one, to resume from
    assert merged_steps(15_000, 1000, 3) == [13_000, 14_000, 15_000]
    assert checkpoints_to_keep(15_000, 1000, 3) == 3


def test_no_merge_keeps_the_final_weights_and_short_runs_merge_what_they_have():
    assert merged_steps(14_305, 1000, 1) == [14_305]
    assert merged_steps(2_500, 1000, 3) == [1_000, 2_000]
    assert merged_steps(700, 1000, 3) == [700]
    with pytest.raises(ValueError):
        merged_steps(0, 1000, 3)


@pytest.mark.parametrize("config_path", ["config/paper.yaml", "config/config.yaml"])
def test_only_dataman_families_average_checkpoints(config_path):
    config = load_config(REPO / config_path)
    families = set()
    for name, variant in config["variants"].items():
        settings = train.resolve_pretrain(config, name)["settings"]
        expected = 3 if variant["family"] in DATAMAN_FAMILIES else 1
        assert settings["average_last"] == expected, name
        families.add(variant["family"])
    assert {"dataman", "dataman_level"} <= families
    for search in selection.metarater_searches(config):
        proxy = selection.proxy_names(config, search)[0]
        assert train.resolve_pretrain(config, proxy)["settings"]["average_last"] == 1


def test_a_variants_own_setting_wins_over_its_familys():
    config = load_config(REPO / "config" / "paper.yaml")
    config["variants"]["dataman_accuracy"]["pretrain"] = {"average_last": 5}
    assert train.resolve_pretrain(config, "dataman_accuracy")["settings"]["average_last"] == 5
    config["pretrain_by_family"]["qurating"] = {"average_last": 2}
    assert train.resolve_pretrain(config, "writing_style_t2")["settings"]["average_last"] == 2
