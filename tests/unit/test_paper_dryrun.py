"""A dry run of the full-scale config (config/paper.yaml) through profiles/slurm.

The SlimPajama listing is faked with empty files (planning only lists them) and the config's
paths are pointed at it; everything else is config/paper.yaml as shipped. The planned jobs show
that every paper row is pretrained and evaluated once, that Meta-rater's proxies are planned per
search, and that GPU work asks for GPUs while the rest does not.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from selectlab.annotate import resolve as annotate_cfg
from selectlab.config import load_config, read_with_includes
from selectlab.selection import resolve as cfg

REPO = Path(__file__).resolve().parents[2]
TRAIN_FILES, GROUP_SIZE = 6, 2  # three shards
# Rules whose jobs run models; annotation and rater training only for model-backed entries.
GPU_RULES = {"judge", "pretrain", "eval_perplexity", "eval_icl", "eval_curve", "sft",
             "generate", "mates_probe", "mates_fit"}
MODEL_KINDS = {"refppl", "embedding", "rater", "rater_generative", "mates_influence"}


def fake_slimpajama(root: Path) -> None:
    """chunk*/example_*.jsonl.zst files, empty: planning globs them, nothing reads them."""
    for split, count in (("train", TRAIN_FILES), ("validation", 2), ("test", 2)):
        for index in range(count):
            path = root / split / f"chunk{index % 3 + 1}" / f"example_{split}_{index}.jsonl.zst"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()


def paper_config(tmp: Path) -> dict:
    config = read_with_includes(REPO / "config" / "paper.yaml")
    slimpajama = config["corpus"]["slimpajama"]
    for split in ("train", "validation", "test"):
        slimpajama[f"{split}_dir"] = str(tmp / "slimpajama" / split)
    slimpajama["group_size"] = GROUP_SIZE
    # DSIR's file targets (the papers' target sets) are globbed while planning, so they must
    # exist.
    for target in ("wikipedia", "book", "math"):
        part = tmp / "dsir_targets" / target / "part-0.jsonl"
        part.parent.mkdir(parents=True)
        part.touch()
        config["annotate"]["families"]["dsir"]["targets"][target] = str(part.parent / "*.jsonl")
    # MATES's reference set (LAMBADA at full scale) is an input of its probe jobs.
    lambada = tmp / "lambada.jsonl"
    lambada.touch()
    config["mates"]["reference"] = str(lambada)
    return config


def parse_value(text: str):
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def parse_jobs(text: str) -> list[SimpleNamespace]:
    """Rule, inputs, wildcards, resources and shell command of every job of a dry run."""
    jobs: list[SimpleNamespace] = []
    for line in text.splitlines():
        if re.match(r"^(local)?rule \w+:$", line):
            jobs.append(SimpleNamespace(rule=line.split()[-1].rstrip(":"), wildcards={},
                                        resources={}, shell="", inputs=[]))
        elif jobs and line.startswith("    input: "):
            jobs[-1].inputs = line.split(": ", 1)[1].split(", ")
        elif jobs and line.startswith("    wildcards: "):
            pairs = line.split(": ", 1)[1].split(", ")
            jobs[-1].wildcards = dict(pair.split("=", 1) for pair in pairs)
        elif jobs and line.startswith("    resources: "):
            pairs = line.split(": ", 1)[1].split(", ")
            jobs[-1].resources = {k: parse_value(v) for k, v in (p.split("=", 1) for p in pairs)}
        elif jobs and line.startswith("Shell command: "):
            jobs[-1].shell = line.split(": ", 1)[1]
    return jobs


def planning_env(tmp: Path) -> dict:
    """What a dry run through profiles/slurm needs beside the config in `tmp`: the report's
    captions, an apptainer on PATH, the partitions file; the environment to run it in."""
    # The report's captions are read from report/ beside the results, as in the repository.
    (tmp / "report").symlink_to(REPO / "report")
    stub = tmp / "bin" / "apptainer"  # Snakemake checks for apptainer before it plans
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\necho 'apptainer version 1.3.4'\n")
    stub.chmod(0o755)
    path = f"{stub.parent}:{Path(sys.executable).parent}:{os.environ['PATH']}"
    # The plan-time GPU memory check of every pretraining job (a dry run has no executor
    # settings; the plugin's variable names the file).
    partitions = str(REPO / "profiles/slurm/partitions.yaml")
    return os.environ | {"PATH": path, "SNAKEMAKE_SLURM_PARTITIONS": partitions}


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> SimpleNamespace:
    tmp = tmp_path_factory.mktemp("paper")
    fake_slimpajama(tmp / "slimpajama")
    config = paper_config(tmp)
    (tmp / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = planning_env(tmp)
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "all", "paper_figures", "--dry-run",
         "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp),
         "--profile", str(REPO / "profiles" / "slurm"), "--configfile", str(tmp / "config.yaml")],
        cwd=tmp, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    # The config as the workflow saw it: variant grids expanded.
    return SimpleNamespace(config=load_config(tmp / "config.yaml"),
                           jobs=parse_jobs(result.stdout + result.stderr))


def per_variant(plan, rule: str) -> Counter:
    return Counter(job.wildcards["variant"] for job in plan.jobs if job.rule == rule)


def asks_for_gpus(job) -> bool:
    return job.resources.get("gpu", 0) >= 1 or "gres" in job.resources


def test_every_paper_row_is_pretrained_and_evaluated_once(plan):
    variants = list(plan.config["variants"])
    # 77 rows, plus DataMan's 15 re-runs of QuRating's rows on DataPajama and Meta-rater's 7
    # re-runs of shared rows on the full SlimPajama.
    assert len(variants) == 77 + 15 + 7
    staged = [f"mates__stage{k}" for k in range(1, 6)]  # MATES runs in 5 stages
    for rule in ("select", "pack", "pretrain", "eval_perplexity", "eval_icl"):
        counts = per_variant(plan, rule)
        trained = staged if rule in ("select", "pack", "pretrain") else ["mates"]
        rows = [name for name in variants if name != "mates"] + trained
        assert all(counts[name] == 1 for name in rows), rule
    # Only the paper rows are evaluated in context; proxies are scored by perplexity alone.
    assert set(per_variant(plan, "eval_icl")) == set(variants)
    # Meta-rater Figure 1's three models are also evaluated at 1/4, 1/2 and 3/4 of training.
    curves = Counter((job.wildcards["variant"], job.wildcards["fraction"])
                     for job in plan.jobs if job.rule == "eval_curve")
    assert curves == {(v, f): 1 for v in ("uniform_slimpajama", "educational_value_top_slimpajama",
                                          "metarater_all")
                      for f in ("0.25", "0.5", "0.75")}


def test_each_papers_rows_select_from_its_own_pool(plan):
    selects = {job.wildcards["variant"]: job for job in plan.jobs if job.rule == "select"}
    pools = {"qurating": ["uniform", "educational_value_t2", "criteria_mix",
                          "curriculum_expertise_up"],
             "dataman": ["uniform_datapajama", "educational_value_t2_datapajama",
                         "dataman_accuracy", "overall_l1", "cpt_law", "overall_l5_60b"],
             "full": ["uniform_slimpajama", "educational_value_top_slimpajama", "metarater_all",
                      "semdedup", "uniform_7b2_150b", "all25__proxy000"]}
    for pool, variants in pools.items():
        for variant in variants:
            # The pool's ready file lists its shards (selectlab.corpus.pools.listed_shards).
            ready = "read_report.csv" if pool == "full" else f"corpus/pools/{pool}.json"
            assert any(path.endswith(ready) for path in selects[variant].inputs), variant
            assert re.search(rf"--pool \S+/{re.escape(ready)} ", selects[variant].shell), variant
    # QuRating's and DataMan's pools are 1024-token sequences, a fixed 260/627 and 447/627.
    cuts = {(job.wildcards["pool"], job.wildcards["batch"]): job for job in plan.jobs
            if job.rule == "cut_pool"}
    assert set(cuts) == {(pool, f"group_{i:05d}") for pool in ("qurating", "dataman")
                         for i in range(3)}
    assert '"sequence_tokens":1024,"share":0.4147,"unit":"sequence"' in \
        cuts["qurating", "group_00000"].shell
    assert '"sequence_tokens":1024,"share":0.7129,"unit":"sequence"' in \
        cuts["dataman", "group_00000"].shell
    # Sequence units hold their EOS tokens: packing adds none for them, one per document else.
    packs = {job.wildcards["variant"]: job.shell for job in plan.jobs if job.rule == "pack"}
    assert "--units-hold-eos" in packs["uniform"] and "--units-hold-eos" in packs["overall_l5"]
    assert "--units-hold-eos" not in packs["uniform_slimpajama"]
    # Each family annotates the pools its rows select from, and only those.
    annotated = Counter((job.wildcards["family"], job.wildcards["pool"]) for job in plan.jobs
                        if job.rule == "annotate_pool")
    assert annotated == {(family, pool): 3 for family, pool in [
        ("dsir", "qurating"), ("dsir", "dataman"), ("refppl", "qurating"),
        ("refppl", "dataman"), ("qurater", "qurating"), ("qurater", "dataman"),
        ("dataman", "dataman")]}
    full = {job.wildcards["family"] for job in plan.jobs if job.rule == "annotate"}
    assert "dataman" not in full and {"qurater", "prrc", "signals"} <= full


def test_metarater_proxies_are_planned_per_search(plan):
    searches = cfg.metarater_searches(plan.config)
    trained = {name for name in per_variant(plan, "pretrain") if cfg.parse_proxy_name(name)}
    for search in searches:
        planned = {name for name in trained if cfg.parse_proxy_name(name)[0] == search}
        # Each search's largest fit uses all its proxies (all25: N = 32 ... 512).
        assert planned == set(cfg.proxy_names(plan.config, search)), search
    assert len(trained) == sum(spec["proxies"] for spec in searches.values()) == 1280
    assert set(per_variant(plan, "eval_perplexity")) >= trained
    fits = Counter(job.wildcards["search"] for job in plan.jobs if job.rule == "fit_metarater")
    assert fits == {"prrc4": 1, "model11": 1, "all25": 5, "all25_46m": 1}


def test_gpu_work_asks_for_gpus_and_cpu_work_does_not(plan):
    # FineWeb-Edu, WanjuanCC: wrapped public; DataMan's three versions (appendix B.2) and
    # QuRating Table 6's four QuRater setups each train
    trained_raters = {"qurater", "qurater_separate_pretrained", "qurater_multitask_scratch",
                      "qurater_separate_scratch", "dataman", "dataman_score", "dataman_domain",
                      "prrc"}
    seen = Counter()
    for job in plan.jobs:
        if job.rule in GPU_RULES:
            gpu = True
        elif job.rule in ("annotate", "annotate_pool"):
            family = annotate_cfg.family_config(plan.config, job.wildcards["family"])
            gpu = family["kind"] in MODEL_KINDS
        elif job.rule == "train_rater":
            gpu = job.wildcards["rater"] in trained_raters
        else:
            gpu = False
        assert asks_for_gpus(job) == gpu, (job.rule, job.wildcards, job.resources)
        seen[job.rule, gpu] += 1
    assert seen["judge", True] == 3 and seen["train_rater", True] == 8
    # Six model families of the full pool (DataMan rates DataPajama only) and MATES's four
    # influence families (stages 2-5) per shard; the other pools' shards in annotate_pool.
    assert seen["annotate", True] == (6 + 4) * 3 and seen["annotate", False] == 2 * 3
    assert seen["annotate_pool", True] == 5 * 3 and seen["annotate_pool", False] == 2 * 3
    assert seen["mates_probe", True] == 4 * 8 and seen["mates_fit", True] == 4
    for rule in ("tokenize_shard", "select", "pack", "tables", "figures", "prepare_heldout"):
        assert seen[rule, False] > 0, rule


def test_main_model_asks_for_more_than_a_proxy(plan):
    pretrain = {job.wildcards["variant"]: job.resources
                for job in plan.jobs if job.rule == "pretrain"}
    main, proxy = pretrain["uniform"], pretrain["all25__proxy000"]
    assert (proxy["gpu"], main["gpu"]) == (1, 8)
    assert main["runtime"] > proxy["runtime"] and main["mem_mb"] > proxy["mem_mb"]
    # The 3.3B and 7.2B runs span nodes: GPUs per node through gres, one launcher per node.
    huge = pretrain["uniform_7b2_150b"]
    assert huge["nodes"] == 8 and huge["gres"] == "gpu:8" and huge["mpi"] == "srun"
    # Every pretraining job passed the memory check against the partition's 80 GB GPUs.
    assert all(0 < resources["gpu_mem_mb"] < 81920 for resources in pretrain.values())
    assert huge["gpu_mem_mb"] > main["gpu_mem_mb"]


def test_no_job_uses_the_simulated_judge(plan):
    judges = [job for job in plan.jobs if job.rule == "judge"]
    assert sorted(job.wildcards["protocol"] for job in judges) == ["dataman", "prrc",
                                                                   "qurating"]
    for job in judges:
        assert '"kind":"vllm"' in job.shell and "--ground-truth" not in job.shell
        assert job.resources["gpu"] == plan.config["judge"]["resources"]["gpu"]
    assert not any("simulated" in job.shell for job in plan.jobs)
    assert not any(job.rule == "build_corpus" for job in plan.jobs)


def test_held_out_splits_are_500m_tokens_counted_by_the_run_tokenizer(plan):
    # QuRating/DataMan: SlimPajama's validation and test sets, 500M tokens each.
    jobs = [job for job in plan.jobs if job.rule == "prepare_heldout"]
    assert sorted(job.wildcards["split"] for job in jobs) == ["test", "validation"]
    for job in jobs:
        assert '"tokens_per_split":500000000' in job.shell
        assert job.inputs == ["results/paper/tokenizer"]
        assert "--tokenizer results/paper/tokenizer" in job.shell


def test_paper_figures_names_every_paper_table_and_figure(plan):
    (job,) = [job for job in plan.jobs if job.rule == "paper_figures"]
    names = {Path(path).name for path in job.inputs}
    assert {"main.md", "perplexity_by_source.md", "icl_by_task.md", "selection_overlap.md",
            "rater_qurater.md", "rater_dataman.md", "rater_dataman_confusion.md",
            "rater_dataman_throughput.md", "rater_prrc.md", "rater_classifiers.md",
            "annotation_throughput.md",
            "analysis_dataman_corpus.md", "analysis_dataman_domain_means.md",
            "analysis_dataman_vs_nll_spearman.md", "cost.md", "cost_variants.md",
            "cost_metarater_table2.md"} <= names
    assert "winrate.md" in names and "winrate.png" in names
    assert {"ppl_vs_icl.png", "loss_curves.png", "selection_overlap.png", "metarater_fit.png",
            "metarater_weights.png", "metarater_proxies.png", "metarater_pca.png",
            "analysis_spearman.png", "analysis_dataman_pearson.png",
            "analysis_dataman_vs_nll.png"} <= names
    # Each paper's own tables, the comparison with their numbers and the claims lead.
    assert {"qurating_table1.md", "qurating_table6.md", "qurating_table9.md", "dataman_table1.md",
            "dataman_table2.md",
            "dataman_table12.md", "dataman_table13.md", "dataman_table14.md",
            "dataman_table15.md", "metarater_table1.md", "metarater_table3.md",
            "metarater_table4.md", "metarater_table13.md", "metarater_table19.md",
            "metarater_figure1.md", "metarater_figure2.md", "metarater_figure3.md",
            "vs_published.md", "claims.md"} <= names
    assert {"metarater_figure1.png", "metarater_figure2.png", "metarater_figure3.png",
            "dataman_figure6.png", "paper_spread.png"} <= names
    # From the judge's labels (QuRating Fig. 5, DataMan Table 6 and Fig. 5) and QuRating
    # Fig. 7 as scatter plots.
    assert {"analysis_qurating_label_pearson.png", "analysis_dataman_label_pearson.png",
            "analysis_dataman_finetune.md", "analysis_qurater_vs_nll.png"} <= names
    distributions = {n for n in names if n.startswith("analysis_distribution_")}
    assert len(distributions) == 8  # every annotation family but the embedding
    weights = [path for path in job.inputs if path.endswith("weights.json")]
    assert len(weights) == len(cfg.metarater_fits(plan.config)) == 8
    # QuRating Table 6 reads the trained QuRater's metrics.
    (tables,) = [job for job in plan.jobs if job.rule == "paper_tables"]
    assert "results/paper/raters/qurater/metrics.json" in tables.inputs
    # Every input is written by a planned job (the dry run would have failed otherwise).
    assert all(path.startswith("results/paper/") for path in job.inputs)


def test_paper_rows_are_fine_tuned_answered_and_judged_by_gpt4(plan):
    specs = plan.config["instruct"]["comparisons"]
    rows = {v for spec in specs.values() for v in [spec["reference"], *spec["variants"]]}
    assert len(specs["qurating"]["variants"]) == 24 and len(specs["dataman"]["variants"]) == 14
    for rule in ("sft", "generate"):
        assert per_variant(plan, rule) == {name: 1 for name in rows}, rule
    sft = next(job for job in plan.jobs if job.rule == "sft")
    assert (sft.resources["gpu"], sft.resources["mem_mb"]) == (1, 64000)
    assert '"max_seq_len":1024' in sft.shell and '"lr":2e-05' in sft.shell
    generate = next(job for job in plan.jobs if job.rule == "generate")
    assert generate.resources["gpu"] == 1 and '"backend":"vllm"' in generate.shell
    judges = {job.wildcards["comparison"]: job for job in plan.jobs
              if job.rule == "judge_answers"}
    assert set(judges) == {"qurating", "dataman"}
    for name, job in judges.items():
        assert '"model":"gpt-4-0314"' in job.shell and '"kind":"openai"' in job.shell
        answers = [Path(path).stem for path in job.inputs if "/answers/" in path]
        assert answers == [specs[name]["reference"], *specs[name]["variants"]]
    (data,) = [job for job in plan.jobs if job.rule == "instruct_data"]
    assert '"kind":"sharegpt"' in data.shell and "--corpus" not in data.shell
