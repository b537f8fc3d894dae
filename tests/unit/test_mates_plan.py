"""MATES as ordinary jobs: stage variants, budgets, learning-rate schedule, influence families."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest

from selectlab.annotate import resolve as annotate_cfg
from selectlab.config import load_config
from selectlab.mates import plan
from selectlab.mates.schedule import learning_rate_at
from selectlab.selection import mates_stages
from selectlab.selection import resolve as select_cfg
from selectlab.train import resolve as train_cfg

REPO = Path(__file__).resolve().parents[2]
RUN = "results/x"


@pytest.fixture
def config() -> dict:
    config = load_config(REPO / ".test" / "config.yaml")
    config["mates"]["stages"] = 3
    return config


def test_a_mates_variant_becomes_stage_variants_with_equal_budgets(config):
    assert mates_stages.mates_variants(config) == ["mates"]
    stages = mates_stages.mates_stage_names(config, "mates")
    assert stages == ["mates__stage1", "mates__stage2", "mates__stage3"]
    budgets = [select_cfg.resolve_selection(config, s)["budget_tokens"] for s in stages]
    assert sum(budgets) == select_cfg.resolve_selection(config, "mates")["budget_tokens"] == 60000
    assert budgets == [20000, 20000, 20000]
    first, second = (select_cfg.variant_entry(config, s) for s in stages[:2])
    assert first["method"] == "uniform" and "init_from" not in first["pretrain"]
    assert second["method"] == "rating_sample"
    assert second["params"] == {"score": "mates__influence2.influence", "tau": 0.0}
    assert train_cfg.init_variant(config, "mates__stage3") == "mates__stage2"
    assert select_cfg.selection_raters(config, "mates__stage2") == ["mates__influence2"]
    assert mates_stages.parse_stage_name(config, "mates__stage4") is None  # only 3 stages
    assert mates_stages.parse_stage_name(config, "uniform__stage1") is None


def test_stages_follow_the_runs_schedule_and_only_the_last_averages(config):
    train = train_cfg.resolve_pretrain(config, "mates")["settings"]
    settings = [train_cfg.resolve_pretrain(config, s)["settings"]
                for s in mates_stages.mates_stage_names(config, "mates")]
    assert settings[0]["lr"] == train["lr"]
    for k, (this, following) in enumerate(zip(settings, settings[1:], strict=False), start=1):
        end = this["lr"] * this["min_lr_ratio"]
        assert end == pytest.approx(learning_rate_at(k / 3, train))
        assert following["lr"] == pytest.approx(end)  # the next stage starts where this ended
        assert this["average_last"] == 1
    assert settings[-1]["lr"] * settings[-1]["min_lr_ratio"] == pytest.approx(
        train["lr"] * train["min_lr_ratio"])
    assert settings[-1]["average_last"] == train["average_last"]
    # The run's warmup, measured in one stage's steps.
    assert all(s["warmup_fraction"] == pytest.approx(train["warmup_fraction"] * 3)
               for s in settings)


def test_learning_rate_at_matches_the_training_loops_schedule():
    from selectlab.train.loop import TrainSettings, learning_rate

    train = {"lr": 1e-3, "min_lr_ratio": 0.1, "warmup_fraction": 0.05}
    loop = TrainSettings(seq_len=8, global_batch_sequences=1, **train)
    for step in (50, 100, 500, 999):  # after warmup (the loop counts a step from 1 there)
        assert learning_rate_at(step / 1000, train) == pytest.approx(
            learning_rate(step, 1000, loop), rel=0.02)


def test_influence_families_are_annotation_families_reading_the_model_and_earlier_stages(config):
    assert plan.family_names(config) == ["mates__influence2", "mates__influence3"]
    family = annotate_cfg.resolve_family(config, "mates__influence3")
    assert family["kind"] == "mates_influence" and family["stage"] == 3
    assert annotate_cfg.fitted_inputs(config, RUN, "mates__influence3") == [
        f"{RUN}/mates/mates/stage3/influence_model/rater_card.json",
        f"{RUN}/mates/mates/stage3/influence_model/model", f"{RUN}/tokenizer",
        f"{RUN}/selections/mates__stage1/selection.parquet",
        f"{RUN}/selections/mates__stage2/selection.parquet"]
    assert annotate_cfg.container_key(config, "mates__influence2") == "train"
    assert annotate_cfg.uses_model(config, "mates__influence2")
    assert "mates__influence2" not in annotate_cfg.family_names(config)  # never a final target


def test_probe_and_fit_params_carry_the_settings_that_shape_their_results(config):
    probe = plan.probe_params(config, "mates", 2)
    assert (probe["probes"], probe["parts"], probe["unit_tokens"]) == (320, 2, 512)
    assert probe["reference"] == "heldout:reference"
    train = train_cfg.resolve_pretrain(config, "mates")["settings"]
    assert probe["optimizer"]["lr"] == pytest.approx(learning_rate_at(1 / 3, train))
    fit = plan.influence_model_params(config, "mates", 2)
    assert fit["backbone"] == config["raters"]["defaults"]["backbone"]
    assert fit["heldout_fraction"] == 0.25 and "gpu" not in fit
    assert plan.reference_files(config, RUN, "mates") == [
        f"{RUN}/corpus/heldout/reference.jsonl.zst"]


def test_variant_params_override_the_section_and_bad_references_are_refused(config):
    changed = copy.deepcopy(config)
    changed["variants"]["mates"]["params"] = {"stages": 2, "temperature": 1.0}
    assert mates_stages.mates_settings(changed, "mates")["stages"] == 2
    assert select_cfg.variant_entry(changed, "mates__stage2")["params"]["tau"] == 1.0
    for reference in ("heldout:validation", "heldout:test"):
        changed["mates"]["reference"] = reference
        with pytest.raises(ValueError, match="reported"):
            mates_stages.mates_settings(changed, "mates")
    changed["mates"]["reference"] = "heldout:reference"
    del changed["corpus"]["embedded"]["heldout_docs_per_source"]["reference"]
    with pytest.raises(ValueError, match="no reference split"):
        mates_stages.mates_settings(changed, "mates")


def test_stage_budgets_split_exactly():
    assert mates_stages.stage_budgets(10, 3) == [3, 3, 4]
    assert sum(mates_stages.stage_budgets(30_000_000_001, 5)) == 30_000_000_001
    assert math.isclose(learning_rate_at(0.0, {"lr": 1.0, "warmup_fraction": 0.5}), 0.0)
