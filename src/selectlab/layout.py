"""Every path under `results/{run}/`: the one place a file's location is written down.

Rules and library code both call these functions, so a path is spelled once. Each takes the
run directory (`run_dir("default")` = `results/default`) and the names that pick one file;
a name left out stays a Snakemake wildcard (`selection(root)` is
`results/x/selections/{variant}/selection.parquet`, `selection(root, "uniform")` one file).
docs/layout.md describes each path and is checked against `patterns()` by
tests/unit/test_layout.py.

To add a path: write one function here, decorated with `@path`, whose wildcard arguments
default to `"{name}"`; then add its row to docs/layout.md (the test says what is missing).
Directories the rules declare with `directory()` are paths like files (no trailing slash).
"""

from __future__ import annotations

import os
from collections.abc import Callable

RESULTS = "results"
CAPTIONS = "report"  # the report's caption files, report/{stem}.rst in the repository

SHARD, SPLIT, VARIANT, FAMILY, RATER = "{shard}", "{split}", "{variant}", "{family}", "{rater}"
PROTOCOL, SEARCH, PROXIES, NAME, EXT, ENV = ("{protocol}", "{search}", "{proxies}", "{name}",
                                             "{ext}", "{env}")
STAGE, PART = "{stage}", "{part}"
FRACTION, COMPARISON = "{fraction}", "{comparison}"

# Inside a rater directory (raters/{rater}/): what selectlab.raters.io writes and reads.
RATER_CARD, RATER_MODEL = "rater_card.json", "model"
# Inside a checkpoint directory (models/{variant}/checkpoints/): what selectlab.train.checkpoints
# writes and reads. A checkpoint is `step_` and its step in 7 digits.
CHECKPOINT_PREFIX, CHECKPOINT_STEP_DIGITS = "step_", 7
CHECKPOINT_META, CHECKPOINT_OWNER = "run.json", ".owner"
# Inside a final model directory (models/{variant}/final/): the training snapshots that
# selectlab.train.snapshots writes there.
SNAPSHOTS = "snapshots"

_PATHS: list[Callable[..., str]] = []


def path(function: Callable[..., str]) -> Callable[..., str]:
    """Registers a path function, so that `patterns()` (and the docs test) sees it."""
    _PATHS.append(function)
    return function


def run_dir(run: str) -> str:
    """results/{run}: the root every other function here takes."""
    return f"{RESULTS}/{run}"


def _under(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts])


def patterns() -> dict[str, str]:
    """Function name -> its path relative to the run directory, wildcards left in."""
    root = run_dir("{run}")
    return {function.__name__: function(root).removeprefix(root + "/") for function in _PATHS}


# ---- corpus ----------------------------------------------------------------------------------
@path
def raw_shard(root: str, shard: str = SHARD) -> str:
    """An embedded-corpus training shard (SlimPajama's files are read where they lie)."""
    return _under(root, "corpus", "raw", f"{shard}.jsonl.zst")


@path
def heldout(root: str, split: str = SPLIT) -> str:
    return _under(root, "corpus", "heldout", f"{split}.jsonl.zst")


@path
def dsir_target(root: str) -> str:
    """The embedded corpus's DSIR target split (`pool:` targets), apart from held-out and
    training documents."""
    return _under(root, "corpus", "dsir_target.jsonl.zst")


@path
def ground_truth(root: str) -> str:
    return _under(root, "corpus", "ground_truth.parquet")


@path
def corpus_build_stats(root: str) -> str:
    return _under(root, "corpus", "build_stats.json")


@path
def shard_read_report(root: str, shard: str = SHARD) -> str:
    return _under(root, "corpus", "reports", f"{shard}.json")


@path
def quarantine(root: str, shard: str = SHARD) -> str:
    return _under(root, "corpus", "quarantine", f"{shard}.jsonl")


@path
def tokens(root: str, shard: str = SHARD) -> str:
    return _under(root, "corpus", "tokens", f"{shard}.npy")


def tokens_dir(root: str) -> str:
    return os.path.dirname(tokens(root))


@path
def tokenizer(root: str) -> str:
    return _under(root, "tokenizer")


@path
def read_report(root: str) -> str:
    """The per-shard read reports as one table; selection waits on it for every shard."""
    return table(root, "read_report", "csv")


# ---- sidecars (annotation) -------------------------------------------------------------------
@path
def meta_sidecar(root: str, shard: str = SHARD) -> str:
    return sidecar(root, "meta", shard)


@path
def sidecar(root: str, family: str = FAMILY, shard: str = SHARD) -> str:
    return _under(root, "attributes", family, f"{shard}.parquet")


def attributes_dir(root: str) -> str:
    return _under(root, "attributes")


@path
def annotation_stats(root: str, family: str = FAMILY, shard: str = SHARD) -> str:
    """One annotation job's throughput record, beside its log."""
    return _under(root, "logs", "annotate", family, f"{shard}.json")


@path
def annotation_batch_stats(root: str, family: str = FAMILY, batch: str = "{batch}") -> str:
    """The throughput records of one job of annotate.shards_per_job shards (a JSON list)."""
    return _under(root, "logs", "annotate", family, f"{batch}_batch.json")


@path
def family_throughput(root: str, family: str = FAMILY, ext: str = EXT) -> str:
    return _under(root, "attributes", family, f"throughput.{ext}")


# ---- judge -----------------------------------------------------------------------------------
@path
def judge_sample(root: str, protocol: str = PROTOCOL) -> str:
    return _under(root, "judgments", protocol, "sample.parquet")


@path
def judgments(root: str, protocol: str = PROTOCOL) -> str:
    return _under(root, "judgments", protocol, "judgments.parquet")


@path
def judge_labels(root: str, protocol: str = PROTOCOL) -> str:
    return _under(root, "judgments", protocol, "labels.parquet")


@path
def judge_summary(root: str, protocol: str = PROTOCOL) -> str:
    return _under(root, "judgments", protocol, "summary.csv")


@path
def judge_cache(root: str, protocol: str = PROTOCOL) -> str:
    """Not a declared output: it survives a failed or rerun judge job."""
    return _under(root, "judgments", protocol, "cache.sqlite")


# ---- raters and fitted annotation models -----------------------------------------------------
@path
def rater_dir(root: str, rater: str = RATER) -> str:
    return _under(root, "raters", rater)


@path
def rater_model(root: str, rater: str = RATER) -> str:
    return _under(rater_dir(root, rater), RATER_MODEL)


@path
def rater_card(root: str, rater: str = RATER) -> str:
    return _under(rater_dir(root, rater), RATER_CARD)


@path
def rater_metrics(root: str, rater: str = RATER) -> str:
    return _under(rater_dir(root, rater), "metrics.json")


@path
def dsir_model(root: str, family: str = FAMILY) -> str:
    return _under(rater_dir(root, family), "model.npz")


@path
def reference_lm(root: str) -> str:
    """The offline reference LM, converted once from its GGUF file."""
    return rater_dir(root, "reference_lm")


# ---- analysis of the annotated corpus --------------------------------------------------------
@path
def analysis_sample(root: str) -> str:
    return _under(root, "analysis", "sample.parquet")


@path
def analysis_sample_summary(root: str) -> str:
    return _under(root, "analysis", "sample.json")


@path
def analysis_matrix(root: str, name: str = NAME) -> str:
    return _under(root, "analysis", f"{name}.csv")


# ---- selection -------------------------------------------------------------------------------
@path
def rank_dir(root: str, family: str = FAMILY) -> str:
    """One family's percentile-rank sidecars over the pool (selectlab.selection.ranks)."""
    return _under(root, "attributes", "ranks", family)


@path
def rank_sidecar(root: str, family: str = FAMILY, shard: str = SHARD) -> str:
    return _under(rank_dir(root, family), f"{shard}.parquet")


@path
def rank_summary(root: str, family: str = FAMILY) -> str:
    return _under(rank_dir(root, family), "ranks.json")


@path
def selection(root: str, variant: str = VARIANT) -> str:
    return _under(root, "selections", variant, "selection.parquet")


@path
def selection_manifest(root: str, variant: str = VARIANT) -> str:
    return _under(root, "selections", variant, "manifest.json")


@path
def packed(root: str, variant: str = VARIANT) -> str:
    return _under(root, "selections", variant, "train.npy")


@path
def metarater_weights(root: str, search: str = SEARCH, proxies: int | str = PROXIES) -> str:
    return _under(root, "metarater", search, f"n{proxies}", "weights.json")


# ---- pretraining and evaluation --------------------------------------------------------------
@path
def final_model(root: str, variant: str = VARIANT) -> str:
    return _under(root, "models", variant, "final")


@path
def train_log(root: str, variant: str = VARIANT) -> str:
    return _under(root, "models", variant, "train_log.csv")


@path
def checkpoints(root: str, variant: str = VARIANT) -> str:
    """Resume state; not a declared output, so Snakemake keeps it across failures."""
    return _under(root, "models", variant, "checkpoints")


def checkpoint_name(step: int) -> str:
    """The directory name of the checkpoint of `step` (step_0001000)."""
    return f"{CHECKPOINT_PREFIX}{step:0{CHECKPOINT_STEP_DIGITS}d}"


@path
def checkpoint(root: str, variant: str = VARIANT, step: str = "{step}") -> str:
    """One sharded checkpoint; `step` in its 7 digits (checkpoint_name)."""
    return _under(checkpoints(root, variant), f"{CHECKPOINT_PREFIX}{step}")


@path
def checkpoint_meta(root: str, variant: str = VARIANT, step: str = "{step}") -> str:
    """Written after every shard: a checkpoint without it is an unfinished save."""
    return _under(checkpoint(root, variant, step), CHECKPOINT_META)


@path
def checkpoint_owner(root: str, variant: str = VARIANT) -> str:
    """The claim of the training run that may write this variant's checkpoints."""
    return _under(checkpoints(root, variant), CHECKPOINT_OWNER)


@path
def lm_eval_data(root: str) -> str:
    """What fetch_eval_data put in the shared lm-eval cache; the ICL jobs wait on it."""
    return _under(root, "eval", "lm_eval_data.json")


def snapshot_name(fraction: str) -> str:
    """A snapshot directory's name; `fraction` as the curves name it (`str(float)`: "0.5")."""
    return f"f{fraction}"


@path
def snapshot(root: str, variant: str = VARIANT, fraction: str = FRACTION) -> str:
    """The weights part-way through training (a point of a curve figure), inside the final
    model directory, so they are part of the pretraining job's declared output."""
    return _under(final_model(root, variant), SNAPSHOTS, snapshot_name(fraction))


@path
def icl_tasks(root: str) -> str:
    return _under(root, "eval", "tasks")


@path
def perplexity(root: str, variant: str = VARIANT) -> str:
    return _under(root, "eval", variant, "perplexity.json")


@path
def perplexity_progress(root: str, variant: str = VARIANT) -> str:
    """What an interrupted perplexity job has scored; removed once perplexity.json is written."""
    return _under(root, "eval", variant, ".perplexity.json.progress")


@path
def icl(root: str, variant: str = VARIANT) -> str:
    return _under(root, "eval", variant, "icl.json")


@path
def icl_cache(root: str, variant: str = VARIANT) -> str:
    """lm-eval's result per (task, shots) of a model; not a declared output, so it survives a
    rerun of the model's evaluation."""
    return _under(root, "eval", variant, "icl_cache")


@path
def curve_icl(root: str, variant: str = VARIANT, fraction: str = FRACTION) -> str:
    """A training snapshot's ICL results (`fraction` as `snapshot_name` takes it)."""
    return _under(root, "eval", variant, "curve", fraction, "icl.json")


@path
def curve_icl_cache(root: str, variant: str = VARIANT, fraction: str = FRACTION) -> str:
    return _under(os.path.dirname(curve_icl(root, variant, fraction)), "icl_cache")


# ---- instruction following (QuRating Figure 3, DataMan Figure 2) -----------------------------
@path
def instruct_train(root: str) -> str:
    return _under(root, "instruct", "data", "train.parquet")


@path
def instruct_eval(root: str) -> str:
    return _under(root, "instruct", "data", "eval.parquet")


@path
def instruct_split(root: str) -> str:
    return _under(root, "instruct", "data", "split.json")


@path
def sft_model(root: str, variant: str = VARIANT) -> str:
    return _under(root, "instruct", "sft", variant, "model")


@path
def sft_log(root: str, variant: str = VARIANT) -> str:
    return _under(root, "instruct", "sft", variant, "sft_log.csv")


@path
def sft_checkpoints(root: str, variant: str = VARIANT) -> str:
    """Resume state; not a declared output, so Snakemake keeps it across failures."""
    return _under(root, "instruct", "sft", variant, "checkpoints")


@path
def answers(root: str, variant: str = VARIANT) -> str:
    return _under(root, "instruct", "answers", f"{variant}.parquet")


@path
def answer_judgments(root: str, comparison: str = COMPARISON) -> str:
    return _under(root, "instruct", "judgments", comparison, "judgments.parquet")


@path
def answer_judge_summary(root: str, comparison: str = COMPARISON) -> str:
    return _under(root, "instruct", "judgments", comparison, "summary.csv")


@path
def answer_judge_cache(root: str, comparison: str = COMPARISON) -> str:
    """Not a declared output: it survives a failed or rerun judge_answers job."""
    return _under(root, "instruct", "judgments", comparison, "cache.sqlite")


# ---- MATES: a `mates` variant's stages (its stage variants are ordinary variants) ----------
def mates_stage_dir(root: str, variant: str = VARIANT, stage: int | str = STAGE) -> str:
    return _under(root, "mates", variant, f"stage{stage}")


@path
def mates_probes(root: str, variant: str = VARIANT, stage: int | str = STAGE,
                 part: int | str = PART) -> str:
    """Oracle influence of one probe job's units, measured on the previous stage's model."""
    return _under(mates_stage_dir(root, variant, stage), "probes", f"part{part}.parquet")


@path
def mates_probe_metrics(root: str, variant: str = VARIANT, stage: int | str = STAGE,
                        part: int | str = PART) -> str:
    return _under(mates_stage_dir(root, variant, stage), "probes", f"part{part}.json")


@path
def influence_model_dir(root: str, variant: str = VARIANT, stage: int | str = STAGE) -> str:
    """The stage's data-influence model: a rater directory (selectlab.raters.load_rater)."""
    return _under(mates_stage_dir(root, variant, stage), "influence_model")


@path
def influence_model(root: str, variant: str = VARIANT, stage: int | str = STAGE) -> str:
    return _under(influence_model_dir(root, variant, stage), RATER_MODEL)


@path
def influence_model_card(root: str, variant: str = VARIANT, stage: int | str = STAGE) -> str:
    return _under(influence_model_dir(root, variant, stage), RATER_CARD)


@path
def mates_fit_metrics(root: str, variant: str = VARIANT, stage: int | str = STAGE) -> str:
    return _under(mates_stage_dir(root, variant, stage), "metrics.json")


# ---- cost: the estimate before running (the measured tables are `table`s) -----------------
@path
def cost_plan(root: str, name: str = NAME, ext: str = EXT) -> str:
    return _under(root, "cost", f"plan_{name}.{ext}")


# ---- tables, figures, report, provenance, archive --------------------------------------------
@path
def table(root: str, name: str = NAME, ext: str = EXT) -> str:
    return _under(root, "tables", f"{name}.{ext}")


@path
def paper_cells(root: str) -> str:
    """Every cell of the papers' own tables over replicates (what the comparison with the
    published numbers and the claims read)."""
    return table(root, "paper_cells", "csv")


@path
def figure(root: str, name: str = NAME) -> str:
    return _under(root, "figures", f"{name}.png")


@path
def html_report(root: str) -> str:
    return _under(root, "report", "report.html")


@path
def environment(root: str, env: str = ENV) -> str:
    return _under(root, "provenance", f"environment-{env}.txt")


@path
def provenance(root: str) -> str:
    return _under(root, "provenance", "provenance.json")


@path
def archive(root: str) -> str:
    return _under(root, "archive", f"selectlab-{os.path.basename(root.rstrip('/'))}.tar.gz")


# ---- logs ------------------------------------------------------------------------------------
@path
def log(root: str, rule: str = "{rule}") -> str:
    """The log of a rule that has one job."""
    return _under(root, "logs", f"{rule}.log")


@path
def job_log(root: str, rule: str = "{rule}", job: str = "{job}") -> str:
    """The log of one job of a rule, named by its wildcards (e.g. "{family}/{shard}")."""
    return _under(root, "logs", rule, f"{job}.log")


@path
def benchmark(root: str, rule: str = "{rule}", job: str = "{job}") -> str:
    """Snakemake's runtime and memory record of a heavy job, beside its log."""
    return _under(root, "logs", rule, f"{job}.benchmark.tsv")


# ---- outside a run directory -----------------------------------------------------------------
def caption(stem: str = "{stem}") -> str:
    """A report caption in the repository (report/{stem}.rst)."""
    return f"{CAPTIONS}/{stem}.rst"


def container_build_log(env: str = ENV) -> str:
    """Container builds serve every run, so their logs sit beside the run directories."""
    return f"{RESULTS}/containers/build_{env}.log"

