"""Checks of what the tests-only run recorded beside its results: the read report, the
judge's failure counts, MATES's stages and the FLOPs and hours of every model job.

Collected through tests/e2e/test_workflow.py, which runs the workflow once for all of them.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from selectlab.selection import mates_stages
from selectlab.selection.resolve import resolve_selection
from tests.e2e.workflow_run import read_archive


def test_read_report_counts_every_line(run_dir):
    report = pd.read_csv(run_dir / "tables/read_report.csv")
    skipped = report.drop(columns=["shard", "lines", "documents", "tokens", "damaged_files"])
    assert (report["lines"] == report["documents"] + skipped.sum(axis=1)).all()
    assert (report["damaged_files"] == 0).all()
    assert len(report) == len(list((run_dir / "corpus/reports").glob("*.json")))


def test_report_and_archive_state_judge_failures_and_corpus_inputs(run_dir, config):
    failures = pd.read_csv(run_dir / "tables/judge_failures.csv")
    summaries = {path.parent.name: pd.read_csv(path)
                 for path in (run_dir / "judgments").glob("*/summary.csv")}
    assert sorted(failures["protocol"]) == sorted(summaries)
    for row in failures.itertuples():
        overall = summaries[row.protocol].set_index("criterion").loc["all"]
        assert row.queries == overall["queries"] and row.backend_error == overall["backend_error"]
        assert row.failure_rate <= config["judge"].get("max_failure_rate", 0.05)
    members = read_archive(run_dir / f"archive/selectlab-{config['run']}.tar.gz")
    assert "tables/judge_failures.csv" in members
    assert "Judgments that failed, per judge protocol" in (run_dir / "report/report.html"
                                                           ).read_text()
    inputs = json.loads(members["provenance/provenance.json"])["corpus_inputs"]
    assert set(inputs) == set(config["corpus"]["embedded"]["sources"])
    assert inputs["web"]["debian"]["coreutils"] and inputs["code"]["files"]["files"] > 100


def test_mates_sees_the_planted_damage_and_selects_less_of_it_than_uniform(run_dir, config):
    """The corpus's recorded damage against MATES's probes and selections (stated margins: the
    tests-only model is tiny, so the effects are small; measured when written: probe AUC 0.58,
    Spearman with severity -0.13, influence model 0.49 on held-out probes, damaged share of the
    stage-2 selection 0.29, of the whole MATES selection 0.35, of uniform's 0.45)."""
    from scipy.stats import mannwhitneyu

    from selectlab.selection.overlap import corrupted_fraction

    truth = pd.read_parquet(run_dir / "corpus/ground_truth.parquet")
    (variant,) = mates_stages.mates_variants(config)
    directory = run_dir / f"mates/{variant}/stage2"
    probes = pd.concat(pd.read_parquet(p) for p in sorted(directory.glob("probes/part*.parquet")))
    damaged = (truth.set_index("id").loc[probes["id"], "operator"] != "none").to_numpy()
    influence = probes["influence"].to_numpy()
    # The oracle: one step on a damaged unit helps the clean reference set less.
    auc = mannwhitneyu(influence[~damaged], influence[damaged]).statistic / (
        (~damaged).sum() * damaged.sum())
    assert influence[damaged].mean() < influence[~damaged].mean() and auc > 0.52
    # The influence model: its predictions follow the oracle on probes it never trained on.
    heldout = json.loads((directory / "metrics.json").read_text())["metrics"]["heldout"]
    assert heldout["n"] >= 60 and heldout["spearman"] > 0.2
    # The selections: the stage chosen by predicted influence, and the whole MATES selection,
    # hold less damaged text than uniform sampling.
    uniform = corrupted_fraction(
        pd.read_parquet(run_dir / "selections/uniform/selection.parquet"), truth)
    stage_2 = mates_stages.mates_stage_name(variant, 2)
    by_influence = corrupted_fraction(
        pd.read_parquet(run_dir / f"selections/{stage_2}/selection.parquet"), truth)
    whole = corrupted_fraction(
        pd.read_parquet(run_dir / f"selections/{variant}/selection.parquet"), truth)
    assert by_influence < uniform - 0.05 and whole < uniform


def test_mates_stages_select_disjoint_shares_and_the_later_one_by_predicted_influence(
        run_dir, config):
    (variant,) = mates_stages.mates_variants(config)
    stages = mates_stages.mates_stage_names(config, variant)
    picked = [pd.read_parquet(run_dir / f"selections/{name}/selection.parquet") for name in stages]
    union = pd.read_parquet(run_dir / f"selections/{variant}/selection.parquet")
    assert union["id"].tolist() == [i for frame in picked for i in frame["id"]]
    assert not set(picked[0]["id"]) & set(picked[1]["id"])
    for name, frame in zip(stages, picked, strict=True):
        assert frame["n_tokens"].sum() >= resolve_selection(config, name)["budget_tokens"]
    # Probes: every part's units, none trained on in stage 1, each with a finite influence.
    directory = run_dir / f"mates/{variant}/stage2"
    probes = pd.concat(pd.read_parquet(p) for p in sorted(directory.glob("probes/part*.parquet")))
    assert len(probes) == config["mates"]["probes"] and probes["id"].is_unique
    assert not probes["id"].isin(picked[0]["id"]).any()
    assert np.isfinite(probes["influence"]).all() and probes["influence"].std() > 0
    # Stage 2 takes the highest predicted influence inside each source (top-k, temperature 0);
    # stage 1's documents have none.
    family = mates_stages.influence_family(variant, 2)
    scores = pd.concat(pd.read_parquet(p).merge(pd.read_parquet(
        run_dir / f"attributes/meta/{p.stem}.parquet")[["id", "set_name"]], on="id")
        for p in sorted((run_dir / f"attributes/{family}").glob("shard_*.parquet")))
    assert scores.loc[scores["id"].isin(picked[0]["id"]), "influence"].isna().all()
    chosen = scores["id"].isin(picked[1]["id"])
    for _, source in scores[scores["influence"].notna()].groupby("set_name"):
        inside = source["id"].isin(picked[1]["id"])
        if inside.any() and (~inside).any():
            assert source.loc[inside, "influence"].min() >= source.loc[
                ~inside, "influence"].quantile(0.5)
    assert chosen.sum() == len(picked[1])


def test_cost_tables_count_every_model_stage_with_the_flops_of_each_job(run_dir, config):
    from transformers import AutoConfig

    from selectlab.flops import config_shape, training_flops

    cost = pd.read_csv(run_dir / "tables/cost.csv")
    totals = cost[cost["item"] == "all"].set_index("stage")
    for stage in ("rater training", "annotation", "Meta-rater construction", "MATES selection",
                  "pre-training", "SFT", "evaluation"):
        assert float(totals.loc[stage, "flops"]) > 0, stage
    assert float(totals.loc["judging", "flops"]) == 0.0  # the simulated judge runs no model
    # Pre-training's FLOPs: 6ND + attention from the model's shape and the tokens it trained on.
    card = json.loads((run_dir / "models/uniform/final/training_card.json").read_text())
    shape = config_shape(AutoConfig.from_pretrained(run_dir / "models/uniform/final"),
                         config["pretrain"]["seq_len"])
    assert card["cost"]["flops"] == pytest.approx(training_flops(shape, card["tokens"]))
    uniform = cost[(cost["stage"] == "pre-training") & (cost["item"] == "uniform")]
    assert float(uniform["flops"].iloc[0]) == pytest.approx(card["cost"]["flops"], rel=1e-3)
    # SFT: each fine-tuned variant's fine-tuning (6ND + attention over every step's prompt and
    # response tokens, n_ctx = max_seq_len) and its answers (2ND over prompts and answers).
    spec = config["instruct"]["comparisons"]["qurating"]
    tuned = [spec["reference"], *spec["variants"]]
    sft = cost[cost["stage"] == "SFT"].set_index("item")
    assert sorted(sft.index) == sorted([*tuned, "all"])
    sft_settings = config["instruct"]["sft"]
    for variant in tuned:
        model_dir = run_dir / f"instruct/sft/{variant}/model"
        trained = json.loads((model_dir / "sft_card.json").read_text())["cost"]
        shape = config_shape(AutoConfig.from_pretrained(model_dir), sft_settings["max_seq_len"])
        assert trained["flops"] == pytest.approx(training_flops(shape, trained["tokens"]))
        # At most every pair of every epoch at its cap; more than the response tokens alone.
        assert trained["response_tokens"] < trained["tokens"] <= (
            sft_settings["epochs"] * config["instruct"]["data"]["train_pairs"]
            * sft_settings["max_seq_len"])
        answered = json.loads((run_dir / f"instruct/answers/{variant}.metrics.json")
                              .read_text())["cost"]
        answers = pd.read_parquet(run_dir / f"instruct/answers/{variant}.parquet")
        assert answered["answer_tokens"] == answers["answer_tokens"].sum()
        assert answered["kind"] == "inference" and answered["flops"] > 0
        assert float(sft.loc[variant, "flops"]) == pytest.approx(
            trained["flops"] + answered["flops"], rel=1e-3)
        assert int(sft.loc[variant, "jobs"]) == 2  # sft and generate
    # The reference-based judge of the answers runs no model: the tables say so, no FLOPs.
    assert "reference-based judge runs no model" in (run_dir / "tables/cost.md").read_text()
    throughput = pd.read_csv(run_dir / "tables/annotation_throughput.csv").set_index("family")
    assert throughput.loc["signals", "flops"] == 0 and throughput.loc["qurater", "flops"] > 0
    table2 = pd.read_csv(run_dir / "tables/cost_metarater_table2.csv").set_index("item")
    main = table2.filter(like="pre-training tiny", axis=0)
    assert float(main["ratio"].iloc[0]) == pytest.approx(1.0)
