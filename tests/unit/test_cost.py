"""Cost tables from jobs' records, and the plan-time estimate of a configuration."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from selectlab.config import load_config
from selectlab.cost.measured import measured_costs
from selectlab.cost.plan import plan_frames
from selectlab.cost.roles import CONSTRUCTION, EVALUATION, PRETRAINING, table_roles
from selectlab.cost.tables import metarater_table2, stage_table, variant_table
from selectlab.flops import inference_flops, preset_shape, training_flops

REPO = Path(__file__).resolve().parents[2]
THROUGHPUT = yaml.safe_load((REPO / "profiles/slurm/throughput.yaml").read_text())


def cost(flops, hours=0.0, tokens=10):
    return {"flops": flops, "metarater_flops": flops / 10, "gpu_hours": hours,
            "wall_hours": hours or 1.0, "tokens": tokens, "device": "cuda" if hours else "cpu"}


def write(path: Path, payload) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(payload, pd.DataFrame):
        payload.to_csv(path, index=False)
    else:
        path.write_text(json.dumps(payload))
    return path


@pytest.fixture
def run(tmp_path) -> dict:
    models = []
    for name, flops in (("uniform", 100.0), ("mates__stage1", 40.0), ("mates__stage2", 60.0),
                        ("s__proxy000", 1.0), ("s__proxy001", 1.0)):
        write(tmp_path / f"models/{name}/final/training_card.json", {"cost": cost(flops, 2.0)})
        models.append(tmp_path / f"models/{name}/final")
    write(tmp_path / "models/mates/final/training_card.json", {"stages": []})  # the copy
    evaluations = [write(tmp_path / f"eval/{v}/perplexity.json", {"cost": cost(5.0)})
                   for v in ("uniform", "mates", "meta", "s__proxy000", "s__proxy001")]
    raters = [write(tmp_path / "raters/prrc/metrics.json", {"rater": "prrc",
                                                            "cost": cost(30.0, 1.0)})]
    annotation = [write(tmp_path / "tables/annotation_throughput.csv", pd.DataFrame([
        {"family": "prrc", "flops": 50.0, "metarater_flops": 5.0, "gpu_hours": 3.0,
         "wall_hours": 3.0, "input_tokens": 9, "device": "cuda:0"}])),
        write(tmp_path / "attributes/mates__influence2/throughput.csv", pd.DataFrame([
            {"family": "mates__influence2", "flops": 7.0, "metarater_flops": 0.7,
             "gpu_hours": 0.0, "wall_hours": 1.0, "input_tokens": 9, "device": "cpu"}]))]
    judgments = [write(tmp_path / "judgments/prrc/summary.csv", pd.DataFrame([
        {"criterion": "all", "prompt_tokens": 8, "completion_tokens": 2, "flops": 20.0,
         "gpu_hours": 4.0, "wall_hours": 1.0, "device": "cuda"}]))]
    mates = [write(tmp_path / "mates/mates/stage2/probes/part0.json",
                   {"variant": "mates", "stage": 2, "part": 0, "cost": cost(3.0)}),
             write(tmp_path / "mates/mates/stage2/metrics.json", {"cost": cost(2.0)})]
    roles = {"models": {"uniform": {"stage": PRETRAINING, "item": "uniform",
                                    "variant": "uniform", "preset": "p"},
                        "mates__stage1": {"stage": PRETRAINING, "item": "mates",
                                          "variant": "mates", "preset": "p"},
                        "mates__stage2": {"stage": PRETRAINING, "item": "mates",
                                          "variant": "mates", "preset": "p"},
                        "s__proxy000": {"stage": CONSTRUCTION, "item": "s", "variant": "",
                                        "preset": "small"},
                        "s__proxy001": {"stage": CONSTRUCTION, "item": "s", "variant": "",
                                        "preset": "small"}},
             "evaluations": {v: {"stage": EVALUATION, "item": v, "variant": v}
                             for v in ("uniform", "mates", "meta")}
             | {p: {"stage": CONSTRUCTION, "item": "s", "variant": ""}
                for p in ("s__proxy000", "s__proxy001")},
             "mates_families": {"mates__influence2": "mates"}, "variants": ["uniform", "mates",
                                                                            "meta"],
             "variant_searches": {"meta": "s"}, "main_preset": "p"}
    sft = [write(tmp_path / f"instruct/sft/{v}/model/sft_card.json", {"cost": cost(8.0)}).parent
           for v in ("uniform", "mates")]
    generation = [write(tmp_path / f"instruct/answers/{v}.metrics.json",
                        {"variant": v, "cost": cost(0.5)}) for v in ("uniform", "mates")]
    costs = measured_costs(models=models + [tmp_path / "models/mates/final"],
                           evaluations=evaluations, raters=raters, annotation=annotation,
                           judgments=judgments, mates=mates, sft=sft, generation=generation,
                           roles=roles)
    return {"costs": costs, "roles": roles}


def test_every_job_lands_in_its_stage_and_the_totals_add_up(run):
    table = stage_table(run["costs"]).set_index(["stage", "item"])
    assert table.loc[("judging", "prrc"), "flops"] == 20.0
    assert table.loc[("rater training", "prrc"), "flops"] == 30.0
    assert table.loc[("annotation", "prrc"), "flops"] == 50.0
    assert table.loc[("MATES selection", "mates"), "flops"] == 3.0 + 2.0 + 7.0
    assert table.loc[("MATES selection", "mates"), "jobs"] == 3
    assert table.loc[("Meta-rater construction", "all"), "flops"] == 1.0 + 1.0 + 5.0 + 5.0
    assert table.loc[("pre-training", "mates"), "flops"] == 100.0  # both stages, no copy
    assert table.loc[("SFT", "uniform"), "flops"] == 8.0 + 0.5  # fine-tuning and answers
    assert table.loc[("SFT", "all"), "jobs"] == 4
    assert table.loc[("all", "all"), "flops"] == pytest.approx(
        20 + 30 + 50 + 12 + 12 + 200 + 2 * 8.5 + 15)
    sft = run["costs"][run["costs"]["stage"] == "SFT"].set_index("job")
    assert sft.loc["sft mates", "variant"] == sft.loc["generate mates", "item"] == "mates"
    assert list(table.index.get_level_values("stage").unique()) == [
        "judging", "rater training", "annotation", "Meta-rater construction",
        "MATES selection", "pre-training", "SFT", "evaluation", "all"]
    assert table.loc[("all", "all"), "gpu_hours"] == pytest.approx(4 + 1 + 3 + 5 * 2.0)


def test_variants_carry_their_own_selection_cost_and_table_2_gives_ratios(run):
    variants = variant_table(run["costs"], ["uniform", "mates", "meta"], {"meta": "s"})
    by = variants.set_index("variant")
    assert by.loc["uniform", "selection_flops"] == 0.0
    assert by.loc["mates", "selection_flops"] == 12.0  # probes, fit and influence annotation
    assert by.loc["meta", "selection_flops"] == 12.0  # its search's proxies, shared
    assert by.loc["mates", "sft_flops"] == 8.5 and by.loc["meta", "sft_flops"] == 0.0
    assert by.loc["mates", "total_flops"] == 12.0 + 100.0 + 8.5 + 5.0
    table2 = metarater_table2(run["costs"], run["roles"]["models"], ["uniform", "mates", "meta"],
                              "p").set_index("item")
    assert table2.loc["quality scores rating", "flops"] == 100.0
    assert table2.loc["quality scores rating", "ratio"] == 1.0  # uniform's pre-training: 100
    assert table2.loc["Meta-rater construction", "ratio"] == pytest.approx(0.12)
    # Every record here has metarater_flops = flops / 10: the ratio is the same.
    assert table2.loc["Meta-rater construction", "metarater_ratio"] == pytest.approx(0.12)


def test_the_paper_plan_costs_every_stage_with_the_hand_computed_pretraining():
    config = load_config(REPO / "config/paper.yaml")
    frames = plan_frames(config, THROUGHPUT)
    jobs, stages = frames["jobs"], frames["stages"].set_index("stage")
    assert set(stages.index) == {"judging", "rater training", "annotation",
                                 "Meta-rater construction", "MATES selection", "pre-training",
                                 "SFT", "evaluation", "all"}
    uniform = jobs[jobs["job"] == "pretrain uniform"].iloc[0]
    shape = preset_shape(config["models"]["presets"]["llama_1b3"], 32000, 1024)
    assert uniform["flops"] == pytest.approx(training_flops(shape, 30_000_000_000))
    assert uniform["gpu_hours"] == pytest.approx(uniform["flops"] / (312e12 * 0.4) / 3600)
    qurating = jobs[jobs["item"] == "qurating"].iloc[0]
    assert "2,000,000 queries" in qurating["job"]  # 250k pairs x 4 criteria x 2 orders
    annotation = jobs[jobs["stage"] == "annotation"].set_index("item")
    # Eight families rate the full pool's documents; DSIR, the reference LM and the QuRater
    # also QuRatedPajama and DataPajama, DataMan only DataPajama.
    assert (annotation["jobs"] == 925).all() and len(annotation) == 8 + 3 + 4
    assert "dataman" not in annotation.index and "dataman [dataman]" in annotation.index
    # QuRating's pass: its 260B tokens (a 0.4147 share of the stream of 627B tokens and one
    # EOS per document), not the 627B the full pool's pass reads.
    qurated = annotation.loc["qurater [qurating]", "tokens"] * 925  # tokens are per job
    assert qurated == pytest.approx((627e9 + 590e6) * 0.4147)
    assert qurated / (annotation.loc["qurater", "tokens"] * 925) == pytest.approx(0.4151,
                                                                               abs=1e-3)
    probes = jobs[jobs["job"].str.startswith("probe mates")]
    assert len(probes) == 4 and (probes["jobs"] == 8).all()  # stages 2-5, 8 jobs each
    raters = jobs[jobs["stage"] == "rater training"].set_index("item")
    # QuRating Table 6: a separate setup trains four models, each reading every text.
    assert raters.loc["qurater_separate_scratch", "flops"] == pytest.approx(
        4 * raters.loc["qurater_multitask_scratch", "flops"])
    assert raters.loc["qurater_multitask_scratch", "flops"] == pytest.approx(
        raters.loc["qurater", "flops"])
    table2 = frames["table2"].set_index("item")
    assert table2.filter(like="pre-training llama_1b3", axis=0)["ratio"].iloc[0] == 1.0
    assert stages.loc["all", "flops"] == pytest.approx(jobs["total_flops"].sum())


def test_the_tests_only_plan_runs_on_cpu_from_the_embedded_sources():
    frames = plan_frames(load_config(REPO / ".test/config.yaml"), THROUGHPUT)
    stages = frames["stages"].set_index("stage")
    assert stages.loc["all", "flops"] > 0 and stages.loc["all", "gpu_hours"] == 0.0
    assert stages.loc["judging", "flops"] == 0.0  # the simulated judge runs no model
    assert stages.loc["MATES selection", "jobs"] == 2 + 1 + 2  # probes, fit, annotation


def test_the_plan_fine_tunes_and_answers_with_every_instruct_variant():
    config = load_config(REPO / ".test/config.yaml")
    jobs = plan_frames(config, THROUGHPUT)["jobs"]
    sft = jobs[jobs["stage"] == "SFT"].set_index("job")
    assert list(sft.index) == ["sft uniform", "generate uniform", "sft uniform_plus50",
                               "generate uniform_plus50"]
    # 400 pairs in batches of 16: 25 steps an epoch, 10 epochs, 4,000 examples of at most 128
    # tokens; 40 answers of a 96-token prompt (128 - 32) and 32 new tokens.
    shape = preset_shape(config["models"]["presets"]["tiny"], 2048, 128)
    assert sft.loc["sft uniform", "tokens"] == 4000 * 128
    assert sft.loc["sft uniform", "flops"] == pytest.approx(training_flops(shape, 512_000))
    assert sft.loc["generate uniform", "tokens"] == 40 * (96 + 32)
    assert sft.loc["generate uniform", "flops"] == pytest.approx(
        inference_flops(shape, 40 * 128))
    paper = plan_frames(load_config(REPO / "config/paper.yaml"), THROUGHPUT)["jobs"]
    tuned = paper[paper["job"] == "sft uniform"].iloc[0]
    assert tuned["tokens"] == 3 * 78 * 128 * 1024  # 10,000 pairs: 78 whole batches of 128
    assert tuned["gpus"] == 1 and tuned["gpu_hours"] > 0


def test_the_cost_tables_say_answer_judging_has_no_flops():
    (offline,) = table_roles(load_config(REPO / ".test/config.yaml"))["notes"]
    assert "reference-based judge runs no model" in offline
    (paper,) = table_roles(load_config(REPO / "config/paper.yaml"))["notes"]
    assert "openai judge gpt-4-0314" in paper and "cost_usd" in paper
    assert "{" not in paper  # the roles are a rule's param: braces would read as wildcards


def test_table_roles_place_proxies_and_mates_stages(tmp_path):
    config = load_config(REPO / ".test/config.yaml")
    roles = table_roles(config)
    assert roles["models"]["mates__stage2"]["variant"] == "mates"
    assert roles["models"]["model_free__proxy003"]["stage"] == CONSTRUCTION
    assert "mates" not in roles["models"]  # its model is a copy of the last stage's
    assert roles["mates_families"] == {"mates__influence2": "mates"}
    assert roles["variant_searches"] == {"metarater_model_free": "model_free"}
