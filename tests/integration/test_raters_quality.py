"""Raters trained through the real workflow on simulated judgments track corruption, and the
selections made with their scores hold less damaged text than uniform sampling.

Corpus: the tests-only corpus (.test/config.yaml) with twice its documents per source (1,975
training documents in two shards), judge samples enlarged so the raters have something to learn
from (QuRating: 400 documents in 800 pairs, snippets of 96-192 tokens; DataMan, PRRC and
FineWeb-Edu: 500 documents; WanjuanCC: 300), under a run name of its own
(results/raters_quality/, removed afterwards). The fixture runs the workflow up to the trained
raters and the selections of SELECTIONS (annotation and selection only, no pretraining).

Raters, on held-out documents: training-shard documents that no judge protocol sampled (about
500; 400 of them are used), so no rater saw them, scored with `load_rater` as the annotation stage
does. Each rater's main scores must fall with the corpus's recorded corruption severity:
Spearman(score, severity) below the threshold listed in MAIN_SCORES. Advertisement is the
exception with the opposite sign: it must RISE with the severity of spam insertion (the only
operator that adds advertising; other documents count as severity 0). Here the raters reach
about -0.15 to -0.35 (+0.45 for advertisement), the default corpus about -0.2 to -0.4; the
thresholds leave room. QuRater's held-out pairwise accuracy (confident pairs) must be at least
0.7 per criterion, against 0.5 for chance.

Selections, over the whole pool with a 150k-token budget (about a fifth of the pool's tokens):
the corrupted fraction of a selection is the share of its documents that the corpus builder
damaged (`corrupted_fraction` against corpus/ground_truth.parquet). Uniform sampling's is taken
as the mean over four seeds (each near the pool's 40%). Every quality selection must stay below
it by its margin in SELECTIONS. The margins come from runs with three corpus and workflow seeds:
top-k on scores that damage lowers directly (DataMan's coherence and Overall Score, PRRC's
cleanliness, FineWeb-Edu, writing style, the QuRating + PRRC intersection) came out 0.11-0.25
below uniform, so they must beat it by 0.08. Educational value is mostly a property of the kind
of text in the simulated judge (its pedagogy prior), which damage moves less, so its selections
gain less: 0.05-0.15 for top-k, 0.02-0.08 at tau=2; their margins are 0.03 and 0.01.

DataMan's Overall Score levels (uniform inside a level, source x domain strata): the simulated
judge rates holistically and leniently, as LLM judges do, so the rater's levels fill upwards:
l=4 and l=5 reach the budget, l=1 holds a handful of documents (a short level, reported in its
manifest, not up-sampled), l=2 and l=3 a few hundred. Single low levels are small and noisy (l=2
held more damage than l=1 in two of three seeds, l=4 more than l=2 in one), so neighbouring
levels are compared in pairs: the mean corrupted fraction of l=3 and l=4 must lie PAIR_STEP
below that of l=1 and l=2; l=5 must lie TOP_STEP below every lower level and LEVEL_SPREAD below
l=1. Observed over three corpus and workflow seeds: l=1 0.69-0.82, l=2 0.57-0.79, l=3 0.59-0.64,
l=4 0.43-0.58, l=5 0.19-0.22; pair means 0.69-0.75 against 0.51-0.59.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from selectlab.raters import load_rater
from selectlab.raters.metrics import spearman
from selectlab.selection.overlap import corrupted_fraction
from selectlab.shards import ReadReport, iter_documents

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
RUN = "raters_quality"
RATERS = ("qurater", "dataman", "prrc", "fineweb_edu", "wanjuan")
PROTOCOLS = ("qurating", "dataman", "prrc", "fineweb_edu", "wanjuan")
HELDOUT_DOCS = 400
# rater -> {score column: (sign, threshold)}: sign * Spearman must exceed threshold
MAIN_SCORES = {
    "qurater": {"writing_style": (-1, 0.1), "educational_value": (-1, 0.1)},
    "dataman": {"overall_score": (-1, 0.1)},
    "prrc": {"readability": (-1, 0.1), "cleanliness": (-1, 0.1)},
    "fineweb_edu": {"edu_score": (-1, 0.1)},
    "wanjuan": {"fluency": (-1, 0.1), "advertisement": (+1, 0.2)},
}
MIN_PAIRWISE_ACCURACY = 0.7

BUDGET_TOKENS = 150_000
UNIFORM_SEEDS = {"uniform": 1234, "uniform_seed1": 101, "uniform_seed2": 102,
                 "uniform_seed3": 103}
DATAMAN_STRATA = ["set_name", "dataman.domain"]
QURATING_PRRC = ["qurater.writing_style", "qurater.facts_and_trivia",
                 "qurater.educational_value", "qurater.required_expertise",
                 "prrc.professionalism", "prrc.readability", "prrc.reasoning", "prrc.cleanliness"]


def sample(score: str, tau: float) -> dict:
    return {"family": "qurating", "method": "rating_sample", "params": {"score": score, "tau": tau}}


def top(score: str, strata: list[str] | None = None) -> dict:
    params = {"score": score} | ({"strata": strata} if strata else {})
    return {"family": "quality", "method": "topk", "params": params}


# quality variant -> (variant config, margin below uniform's corrupted fraction)
SELECTIONS = {
    "educational_value_t2": (sample("qurater.educational_value", 2.0), 0.01),
    "educational_value_top": (sample("qurater.educational_value", 0), 0.03),
    "writing_style_top": (sample("qurater.writing_style", 0), 0.08),
    "dataman_coherence": (top("dataman.coherence", DATAMAN_STRATA), 0.08),
    "overall_score_top": (top("dataman.overall_score", DATAMAN_STRATA), 0.08),
    "prrc_cleanliness_top": (top("prrc.cleanliness"), 0.08),
    "fineweb_edu_top": (top("fineweb_edu.edu_score"), 0.08),
    "intersection_qurating_prrc": (
        {"family": "quality", "method": "intersection", "params": {"scores": QURATING_PRRC}},
        0.08),
}
LEVELS = (1, 2, 3, 4, 5)
PAIR_STEP = 0.05  # the mean of l=3 and l=4 below the mean of l=1 and l=2
TOP_STEP = 0.1  # l=5 below each lower level
LEVEL_SPREAD = 0.3  # l=5 below l=1


def level_name(level: int) -> str:
    return f"overall_l{level}"


def selection_variants() -> dict[str, dict]:
    variants = {name: {"family": "baseline", "method": "uniform", "seed": seed}
                for name, seed in UNIFORM_SEEDS.items()}
    variants |= {name: variant for name, (variant, _) in SELECTIONS.items()}
    for level in LEVELS:
        variants[level_name(level)] = {
            "family": "dataman_level", "method": "score_level",
            "params": {"score": "dataman.overall_score", "level": level,
                       "strata": DATAMAN_STRATA}}
    return variants


def quality_config(path: Path) -> Path:
    config = yaml.safe_load((REPO / ".test" / "config.yaml").read_text())
    config["run"] = RUN
    for source in config["corpus"]["embedded"]["sources"].values():
        source["max_docs"] *= 2
    protocols = config["judge"]["protocols"]
    protocols["qurating"] |= {"documents": 400, "pairs": 800, "snippet_tokens": [96, 192]}
    for name in ("dataman", "prrc", "fineweb_edu"):
        protocols[name]["documents"] = 500
    protocols["wanjuan"]["documents"] = 300
    config["selection"]["budget_tokens"] = BUDGET_TOKENS
    config["variants"] = selection_variants()
    config.pop("metarater", None)
    config.pop("instruct", None)  # its comparison names variants this config replaces
    config["evaluation"].pop("protocols", None)  # so do the papers' tables
    # Corruption is recorded per document: every row selects documents (the full pool), which
    # every rater rates.
    config["corpus"].pop("pools", None)
    config["corpus"].pop("pool_by_family", None)
    for family in config["annotate"]["families"].values():
        family["pools"] = ["full"]
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    config = quality_config(tmp_path_factory.mktemp("config") / "config.yaml")
    run_dir = REPO / "results" / RUN
    shutil.rmtree(run_dir, ignore_errors=True)
    targets = [f"results/{RUN}/raters/{r}/rater_card.json" for r in RATERS]
    targets += [f"results/{RUN}/selections/{v}/selection.parquet" for v in selection_variants()]
    env = os.environ | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run([sys.executable, "-m", "snakemake", "--configfile", str(config),
                             "--cores", "2", *targets],
                            cwd=REPO, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-5000:]
    yield run_dir
    shutil.rmtree(run_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def heldout(run_dir) -> pd.DataFrame:
    """Documents no protocol sampled, with their recorded damage, a fixed random subset."""
    judged: set[str] = set()
    for protocol in PROTOCOLS:
        sample = pd.read_parquet(run_dir / "judgments" / protocol / "sample.parquet")
        for column in ("doc_id", "doc_a", "doc_b"):
            if column in sample:
                judged |= set(sample[column])
    docs = [d for path in sorted((run_dir / "corpus" / "raw").glob("*.jsonl.zst"))
            for d in iter_documents([path], ReadReport(shard=path.name), max_chars=10**6)
            if d.id not in judged]
    assert len(docs) >= HELDOUT_DOCS
    truth = pd.read_parquet(run_dir / "corpus" / "ground_truth.parquet").set_index("id")
    frame = pd.DataFrame({"id": [d.id for d in docs], "text": [d.text for d in docs]})
    frame = frame.sample(n=HELDOUT_DOCS, random_state=0)
    frame["severity"] = truth.loc[frame["id"], "severity"].to_numpy()
    operator = truth.loc[frame["id"], "operator"].to_numpy()
    frame["spam_severity"] = np.where(operator == "spam_insertion", frame["severity"], 0.0)
    assert (frame["severity"] > 0).sum() > 100
    return frame.reset_index(drop=True)


@pytest.mark.parametrize("rater", RATERS)
def test_scores_track_corruption_on_documents_no_rater_saw(run_dir, heldout, rater):
    scores = load_rater(run_dir / "raters" / rater).score(heldout["text"].tolist())
    assert all(reason is None for reason in scores["missing_reason"])
    for column, (sign, threshold) in MAIN_SCORES[rater].items():
        target = heldout["spam_severity"] if column == "advertisement" else heldout["severity"]
        rho = spearman(np.asarray(scores[column], dtype=float), target)
        assert sign * rho > threshold, f"{rater}.{column}: Spearman {rho:.3f}"


def test_qurater_held_out_pairwise_accuracy_is_well_above_chance(run_dir):
    metrics = json.loads((run_dir / "raters" / "qurater" / "metrics.json").read_text())
    for criterion, result in metrics["metrics"].items():
        assert result["pairs"] >= 20, criterion
        assert result["pairwise_accuracy"] >= MIN_PAIRWISE_ACCURACY, (criterion, result)


@pytest.fixture(scope="module")
def corrupted(run_dir) -> dict[str, float]:
    """Corrupted fraction (by documents) of every selection of the run."""
    truth = pd.read_parquet(run_dir / "corpus" / "ground_truth.parquet")
    return {name: corrupted_fraction(
                pd.read_parquet(run_dir / "selections" / name / "selection.parquet"), truth)
            for name in selection_variants()}


def manifest(run_dir: Path, name: str) -> dict:
    return json.loads((run_dir / "selections" / name / "manifest.json").read_text())


def test_uniform_selections_hold_the_pools_share_of_damage(run_dir, corrupted):
    truth = pd.read_parquet(run_dir / "corpus" / "ground_truth.parquet")
    pool = float((truth["operator"] != "none").mean())
    for name in UNIFORM_SEEDS:
        assert manifest(run_dir, name)["budget_reached"], name
        assert abs(corrupted[name] - pool) < 0.08, (name, corrupted[name], pool)


@pytest.mark.parametrize("name", list(SELECTIONS))
def test_quality_selections_hold_less_damaged_text_than_uniform(run_dir, corrupted, name):
    uniform = float(np.mean([corrupted[u] for u in UNIFORM_SEEDS]))
    margin = SELECTIONS[name][1]
    record = manifest(run_dir, name)
    assert record["budget_reached"] and not record["short_strata"], record["short_strata"]
    assert corrupted[name] < uniform - margin, (
        f"{name}: corrupted fraction {corrupted[name]:.3f}, uniform {uniform:.3f}, "
        f"margin {margin}")


def test_overall_score_levels_order_damage_from_l1_to_l5(run_dir, corrupted):
    fraction = {level: corrupted[level_name(level)] for level in LEVELS}
    for level in (4, 5):
        assert manifest(run_dir, level_name(level))["budget_reached"], level
    bottom = manifest(run_dir, level_name(1))
    assert not bottom["budget_reached"] and bottom["short_strata"] and not bottom["upsampled"]
    low, middle = (fraction[1] + fraction[2]) / 2, (fraction[3] + fraction[4]) / 2
    assert low > middle + PAIR_STEP, fraction
    assert min(fraction[level] for level in (1, 2, 3, 4)) > fraction[5] + TOP_STEP, fraction
    assert fraction[5] < fraction[1] - LEVEL_SPREAD, fraction
