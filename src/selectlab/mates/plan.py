"""MATES (Yu et al., 2024) as ordinary jobs: the stages of a `mates` variant and their settings.

Meta-rater's MATES baseline (Section 4.1, baseline 7) trains ModernBERT as the influence
predictor and keeps the top-k documents by predicted influence. MATES itself pre-trains in
stages (one data-influence model per stage, every 10k steps), starting from a uniform selection,
and samples each later stage by Gumbel top-k on the predicted influence (temperature 1).

A `mates` variant V with S stages becomes, per stage k = 1..S:

- a generated variant `V__stage{k}` (like Meta-rater's proxies) that the ordinary select, pack and
  pretrain rules run: stage 1 a uniform selection of budget/S tokens trained from scratch; stage
  k > 1 a selection of budget/S tokens by the influence that the stage-k model predicts, trained
  on from the final weights of stage k-1, the learning rate following the run's schedule across
  stages (each stage decays from the schedule's value at its start to that at its end; a fresh
  optimizer re-warms over the run's warmup length);
- for k > 1: probe jobs (`probe_jobs` in parallel) measuring the oracle influence of `probes`
  sampled units on the stage k-1 model, a fit job training the data-influence model on them,
  and an annotation family `V__influence{k}` scoring the pool (documents trained on in earlier
  stages are left out: null in the sidecar, never selected).

The variant V itself is assembled: its selection is the stages' documents in training order,
its model the last stage's, its training log every stage's steps.

No torch here: the workflow imports this module while it builds the job graph.
"""

from __future__ import annotations

import math
import re

STAGE_MARK = "__stage"
FAMILY_MARK = "__influence"
METHOD = "mates"
COLUMN = "influence"
FAMILY_KIND = "mates_influence"
STAGE_FAMILY = "mates_stage"  # row group of the generated stage variants (never in the tables)
HELDOUT_REFERENCE = "heldout:reference"
# A variant's params may override these keys of the `mates` section.
VARIANT_KEYS = ("stages", "probes", "probe_jobs", "temperature")
RESOURCE_DEFAULTS = {"probe": {"gpu": 0, "mem_mb": 4000, "runtime": 60},
                     "fit": {"gpu": 0, "mem_mb": 4000, "runtime": 60},
                     "annotate": {"gpu": 0, "mem_mb": 8000, "runtime": 240}}


def mates_variants(config: dict) -> list[str]:
    return [name for name, v in config["variants"].items() if v["method"] == METHOD]


def settings(config: dict, variant: str) -> dict:
    """The `mates` section with the variant's own overrides (stages, probes, ...)."""
    section = config.get("mates")
    if not section:
        raise ValueError(f"variant {variant!r} uses method mates but the config has no "
                         "`mates` section")
    entry = config["variants"][variant]
    overrides = {k: v for k, v in (entry.get("params") or {}).items() if k in VARIANT_KEYS}
    merged = {k: v for k, v in section.items() if k not in ("influence_model", "resources")}
    merged |= overrides
    if merged["stages"] < 2:
        raise ValueError(f"variant {variant!r}: MATES needs at least 2 stages")
    if merged["reference"].startswith("heldout:") and merged["reference"] != HELDOUT_REFERENCE:
        raise ValueError(f"mates.reference {merged['reference']!r}: the only held-out split it "
                         f"may name is {HELDOUT_REFERENCE!r} (validation and test are reported)")
    if merged["reference"] == HELDOUT_REFERENCE and not reference_split_configured(config):
        raise ValueError("mates.reference is heldout:reference, but the corpus writes no "
                         "reference split: set corpus.embedded.heldout_docs_per_source.reference"
                         " (embedded corpus) or give a JSONL file")
    return merged


def reference_split_configured(config: dict) -> bool:
    corpus = config["corpus"]
    return corpus["mode"] == "embedded" and bool(
        corpus["embedded"]["heldout_docs_per_source"].get("reference"))


def reference_files(config: dict, run_dir: str, variant: str) -> list[str]:
    """The file(s) the reference set is read from."""
    reference = settings(config, variant)["reference"]
    if reference == HELDOUT_REFERENCE:
        return [f"{run_dir}/corpus/heldout/reference.jsonl.zst"]
    return [reference]


def stage_name(variant: str, stage: int) -> str:
    return f"{variant}{STAGE_MARK}{stage}"


def family_name(variant: str, stage: int) -> str:
    """The sidecar family holding the influence predicted for `stage` (>= 2)."""
    return f"{variant}{FAMILY_MARK}{stage}"


def parse_stage_name(config: dict, name: str) -> tuple[str, int] | None:
    """(variant, stage) of a generated stage variant's name, or None."""
    variant, mark, stage = name.rpartition(STAGE_MARK)
    if not mark or not stage.isdigit() or variant not in mates_variants(config):
        return None
    stage = int(stage)
    return (variant, stage) if 1 <= stage <= settings(config, variant)["stages"] else None


def stage_names(config: dict, variant: str) -> list[str]:
    return [stage_name(variant, k) for k in range(1, settings(config, variant)["stages"] + 1)]


def stage_name_patterns(config: dict) -> list[str]:
    """Regular expressions of every stage variant name (wildcard constraints)."""
    return [re.escape(variant) + STAGE_MARK + "[0-9]+" for variant in mates_variants(config)]


def selected_stages(config: dict, variant: str) -> list[int]:
    """The stages chosen by predicted influence (every stage after the uniform first)."""
    return list(range(2, settings(config, variant)["stages"] + 1))


def family_names(config: dict) -> list[str]:
    return [family_name(v, k) for v in mates_variants(config) for k in selected_stages(config, v)]


def parse_family_name(config: dict, name: str) -> tuple[str, int] | None:
    variant, mark, stage = name.rpartition(FAMILY_MARK)
    if not mark or not stage.isdigit() or variant not in mates_variants(config):
        return None
    return (variant, int(stage)) if int(stage) in selected_stages(config, variant) else None


def probe_parts(config: dict, variant: str) -> list[int]:
    return list(range(settings(config, variant)["probe_jobs"]))


def stage_budgets(total: int, stages: int) -> list[int]:
    """Equal shares of the token budget (MATES: equal 10k-step stages); the last takes the
    rounding remainder."""
    share = total // stages
    return [share] * (stages - 1) + [total - share * (stages - 1)]


def learning_rate_at(fraction: float, train: dict) -> float:
    """The run's schedule (train.loop.learning_rate: linear warmup, cosine to
    min_lr_ratio x lr) at a fraction of all training steps."""
    lr, warmup = float(train["lr"]), float(train.get("warmup_fraction", 0.05))
    floor = lr * float(train.get("min_lr_ratio", 0.1))
    if fraction < warmup:
        return lr * fraction / warmup
    progress = min(1.0, (fraction - warmup) / max(1e-12, 1.0 - warmup))
    return floor + (lr - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def stage_schedule(train: dict, stage: int, stages: int) -> dict:
    """Training settings that make stage `stage` follow the run's schedule over its share.

    Stage 1 warms up as the run would (its warmup, measured in this stage's steps) and decays
    to the schedule's value at 1/S; a later stage starts a fresh optimizer from the previous
    stage's weights, re-warms over the run's warmup length, peaks at the schedule's value at its
    start and decays to that at its end. Only the last stage averages checkpoints (the run's
    `average_last`); earlier ones hand their last weights on.
    """
    start, end = (stage - 1) / stages, stage / stages
    warmup = min(1.0, float(train.get("warmup_fraction", 0.05)) * stages)
    peak = float(train["lr"]) if stage == 1 else learning_rate_at(start, train)
    return {"lr": peak, "warmup_fraction": warmup,
            "min_lr_ratio": min(1.0, learning_rate_at(end, train) / peak),
            **({} if stage == stages else {"average_last": 1})}


def stage_entry(config: dict, variant: str, stage: int) -> dict:
    """Stage `stage` of a MATES variant as a variant entry (selected, packed and trained by the
    ordinary rules)."""
    from selectlab.config import resolve_pretrain, resolve_selection, variant_seed

    spec = settings(config, variant)
    entry = config["variants"][variant]
    budget = stage_budgets(resolve_selection(config, variant)["budget_tokens"],
                           spec["stages"])[stage - 1]
    trained = resolve_pretrain(config, variant)["settings"]
    pretrain = dict(entry.get("pretrain") or {}) | stage_schedule(trained, stage, spec["stages"])
    if stage == 1:
        method, params = "uniform", {}
    else:
        method = "rating_sample"
        params = {"score": f"{family_name(variant, stage)}.{COLUMN}",
                  "tau": float(spec["temperature"])}
        pretrain["init_from"] = stage_name(variant, stage - 1)
    return {"family": entry["family"], "label": f"{entry.get('label', variant)} stage {stage}",
            "method": method, "params": params, "seed": variant_seed(config, variant) + stage - 1,
            "budget_tokens": budget, "pretrain": pretrain}


def assembly_params(config: dict, variant: str) -> dict:
    """What assembling the variant's selection from its stages needs."""
    from selectlab.config import resolve_selection

    return {"variant": variant, "settings": settings(config, variant),
            "budget_tokens": resolve_selection(config, variant)["budget_tokens"]}


def reference_spec(config: dict, variant: str) -> dict:
    spec = settings(config, variant)
    return {"reference": spec["reference"], "reference_tokens": int(spec["reference_tokens"])}


def probe_params(config: dict, variant: str, stage: int) -> dict:
    """What one probe job of `stage` (>= 2) needs: how many units, which part, the step."""
    from selectlab.config import resolve_pretrain, variant_seed

    spec = settings(config, variant)
    trained = resolve_pretrain(config, variant)["settings"]
    return {"variant": variant, "stage": stage, "probes": int(spec["probes"]),
            "parts": int(spec["probe_jobs"]), "unit_tokens": int(spec["unit_tokens"]),
            "seq_len": int(trained["seq_len"]),
            "seed": variant_seed(config, variant) * 1000 + stage,
            # One AdamW step of the training recipe at the schedule's rate where stage-1 ends.
            "optimizer": {"lr": learning_rate_at((stage - 1) / spec["stages"], trained),
                          "beta1": trained.get("beta1", 0.9), "beta2": trained.get("beta2", 0.95),
                          "weight_decay": trained.get("weight_decay", 0.1),
                          "grad_clip": trained.get("grad_clip", 1.0)},
            "dtype": trained.get("dtype", "bf16"), "max_shards": spec.get("probe_shards"),
            "max_doc_chars": int(config["corpus"]["reader"]["max_doc_chars"]),
            **reference_spec(config, variant)}


def influence_model_params(config: dict, variant: str, stage: int) -> dict:
    """The data-influence model's settings: `raters.defaults` under `mates.influence_model`
    (the project's rater backbones; ModernBERT-base at full scale, as Meta-rater trains)."""
    from selectlab.config import variant_seed

    spec = settings(config, variant)
    defaults = dict((config.get("raters") or {}).get("defaults") or {})
    merged = defaults | dict(config["mates"].get("influence_model") or {})
    merged = {k: v for k, v in merged.items() if k not in ("gpu", "mem_mb", "runtime")}
    return merged | {"seed": variant_seed(config, variant) + stage,
                     "heldout_fraction": float(spec["heldout_fraction"]),
                     "unit_tokens": int(spec["unit_tokens"])}


def family_entry(config: dict, name: str) -> dict | None:
    """A MATES influence family as an `annotate.families` entry, or None for another name."""
    parsed = parse_family_name(config, name)
    if parsed is None:
        return None
    variant, stage = parsed
    spec = settings(config, variant)
    model = influence_model_params(config, variant, stage)
    return {"kind": FAMILY_KIND, "variant": variant, "stage": stage,
            "unit_tokens": int(spec["unit_tokens"]),
            "forward_batch_size": int(model.get("forward_batch_size", 64)),
            "resources": resources(config, "annotate")}


def resources(config: dict, job: str) -> dict:
    asked = ((config.get("mates") or {}).get("resources") or {}).get(job, {})
    return RESOURCE_DEFAULTS[job] | dict(asked)


def mates_dir(run_dir: str, variant: str, stage: int) -> str:
    return f"{run_dir}/mates/{variant}/stage{stage}"


def influence_model_dir(run_dir: str, variant: str, stage: int) -> str:
    return f"{mates_dir(run_dir, variant, stage)}/influence_model"


def earlier_selections(run_dir: str, variant: str, stage: int) -> list[str]:
    """The selections of stages before `stage`: their documents are trained on already."""
    return [f"{run_dir}/selections/{stage_name(variant, k)}/selection.parquet"
            for k in range(1, stage)]


def family_fitted_inputs(run_dir: str, name: str, params: dict) -> list[str]:
    """What a MATES family's annotation reads: the influence model's card and weights, the run's
    tokenizer (documents are cut to the probed unit) and the earlier stages' selections."""
    variant, stage = params["variant"], params["stage"]
    model = influence_model_dir(run_dir, variant, stage)
    return [f"{model}/rater_card.json", f"{model}/model", f"{run_dir}/tokenizer",
            *earlier_selections(run_dir, variant, stage)]
