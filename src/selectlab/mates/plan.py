"""MATES (Yu et al., 2024) as ordinary jobs: what each job of a `mates` variant's stages needs.

Meta-rater's MATES baseline (Section 4.1, baseline 7) trains ModernBERT as the influence
predictor and keeps the top-k documents by predicted influence. MATES itself pre-trains in
stages (one data-influence model per stage, every 10k steps), starting from a uniform selection,
and samples each later stage by Gumbel top-k on the predicted influence (temperature 1).

A `mates` variant V with S stages becomes, per stage k = 1..S:

- a generated variant `V__stage{k}` (like Meta-rater's proxies; selectlab.selection.resolve)
  that the ordinary select, pack and pretrain rules run: stage 1 a uniform selection of
  budget/S tokens trained from scratch; stage k > 1 a selection of budget/S tokens by the
  influence that the stage-k model predicts, trained on from the final weights of stage k-1,
  the learning rate following the run's schedule across stages (selectlab.mates.schedule);
- for k > 1: probe jobs (`probe_jobs` in parallel) measuring the oracle influence of `probes`
  sampled units on the stage k-1 model, a fit job training the data-influence model on them,
  and an annotation family `V__influence{k}` scoring the pool (documents trained on in earlier
  stages are left out: null in the sidecar, never selected).

The variant V itself is assembled: its selection is the stages' documents in training order,
its model the last stage's, its training log every stage's steps.

No torch here: the workflow imports this module while it builds the job graph.
"""

from __future__ import annotations

from selectlab import layout
from selectlab.mates.schedule import learning_rate_at
from selectlab.resources import job_shape, schema_default
from selectlab.selection.mates_stages import (
    HELDOUT_REFERENCE,
    INFLUENCE_COLUMN,
    INFLUENCE_MARK,
    influence_family,
    influence_stages,
    mates_settings,
    mates_stage_name,
    mates_stage_names,
    mates_variants,
)
from selectlab.selection.resolve import resolve_selection, variant_seed
from selectlab.train.resolve import resolve_pretrain

COLUMN = INFLUENCE_COLUMN
FAMILY_KIND = "mates_influence"
# The job sizes of `mates.resources.{probe,fit}` default to these schema entries; the
# annotation jobs are sized like any model family's (annotate.schema.yaml model_resources).
SCHEMA = "variants.schema.yaml"
JOB_RESOURCES = {"probe": "mates_probe_resources", "fit": "mates_fit_resources"}
INFLUENCE_MODEL_JOB_KEYS = ("resources",)  # sizes, not settings of the model


def family_names(config: dict) -> list[str]:
    return [influence_family(v, k) for v in mates_variants(config)
            for k in influence_stages(config, v)]


def parse_family_name(config: dict, name: str) -> tuple[str, int] | None:
    variant, mark, stage = name.rpartition(INFLUENCE_MARK)
    if not mark or not stage.isdigit() or variant not in mates_variants(config):
        return None
    return (variant, int(stage)) if int(stage) in influence_stages(config, variant) else None


def probe_parts(config: dict, variant: str) -> list[int]:
    return list(range(mates_settings(config, variant)["probe_jobs"]))


def reference_files(config: dict, root: str, variant: str) -> list[str]:
    """The file(s) the reference set is read from."""
    reference = mates_settings(config, variant)["reference"]
    if reference == HELDOUT_REFERENCE:
        return [layout.heldout(root, "reference")]
    return [reference]


def assembly_params(config: dict, variant: str) -> dict:
    """What assembling the variant's selection from its stages needs."""
    return {"variant": variant, "settings": mates_settings(config, variant),
            "budget_tokens": resolve_selection(config, variant)["budget_tokens"]}


def probe_params(config: dict, variant: str, stage: int) -> dict:
    """What one probe job of `stage` (>= 2) needs: how many units, which part, the step."""
    spec = mates_settings(config, variant)
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
            "reference": spec["reference"], "reference_tokens": int(spec["reference_tokens"])}


def influence_model_params(config: dict, variant: str, stage: int) -> dict:
    """The data-influence model's settings: `raters.defaults` under `mates.influence_model`
    (the project's rater backbones; ModernBERT-base at full scale, as Meta-rater trains).
    Job sizes are left out, so resizing a job never refits a model."""
    spec = mates_settings(config, variant)
    defaults = dict((config.get("raters") or {}).get("defaults") or {})
    merged = defaults | dict(config["mates"].get("influence_model") or {})
    merged = {k: v for k, v in merged.items() if k not in INFLUENCE_MODEL_JOB_KEYS}
    return merged | {"seed": variant_seed(config, variant) + stage,
                     "heldout_fraction": float(spec["heldout_fraction"]),
                     "unit_tokens": int(spec["unit_tokens"])}


def family_entry(config: dict, name: str) -> dict | None:
    """A MATES influence family as an `annotate.families` entry (its `resources` those of
    `mates.resources.annotate`, its `files_per_job` mates.annotate_files_per_job), or None
    for another name."""
    parsed = parse_family_name(config, name)
    if parsed is None:
        return None
    variant, stage = parsed
    spec = mates_settings(config, variant)
    model = influence_model_params(config, variant, stage)
    entry = {"kind": FAMILY_KIND, "variant": variant, "stage": stage,
             "unit_tokens": int(spec["unit_tokens"]),
             "forward_batch_size": int(model.get("forward_batch_size", 64)),
             "resources": asked_resources(config, "annotate")}
    files = (config.get("mates") or {}).get("annotate_files_per_job")
    return entry | ({"files_per_job": files} if files else {})


def asked_resources(config: dict, job: str) -> dict | None:
    return ((config.get("mates") or {}).get("resources") or {}).get(job)


def job_shape_of(config: dict, job: str) -> dict:
    """The size of a probe or fit job: `mates.resources.<job>` over the schema's default."""
    return job_shape(schema_default(SCHEMA, "$defs", JOB_RESOURCES[job]),
                     asked_resources(config, job))


def probe_inputs(config: dict, root: str, variant: str, stage: int) -> dict[str, list[str]]:
    """A probe job's inputs: the previous stage's model, the reference set, and the earlier
    stages' selections (their documents are trained on already)."""
    return {"model": [layout.final_model(root, mates_stage_name(variant, stage - 1))],
            "reference": reference_files(config, root, variant),
            "earlier": earlier_selections(root, variant, stage)}


def probe_files(config: dict, root: str, variant: str, stage: int) -> list[str]:
    """Every probe job's oracle influence of a stage (the fit job's input)."""
    return [layout.mates_probes(root, variant, stage, part)
            for part in probe_parts(config, variant)]


def stage_inputs(config: dict, root: str, variant: str) -> dict[str, list[str]]:
    """What assembling the variant reads: each stage's selection, manifest, model and log."""
    stages = mates_stage_names(config, variant)
    return {"selections": [layout.selection(root, s) for s in stages],
            "manifests": [layout.selection_manifest(root, s) for s in stages],
            "models": [layout.final_model(root, s) for s in stages],
            "logs": [layout.train_log(root, s) for s in stages]}


def cost_inputs(config: dict, root: str) -> list[str]:
    """Every probe job's and fit job's metrics of every MATES variant (the cost tables')."""
    files = []
    for variant in mates_variants(config):
        for stage in influence_stages(config, variant):
            files += [layout.mates_probe_metrics(root, variant, stage, part)
                      for part in probe_parts(config, variant)]
            files.append(layout.mates_fit_metrics(root, variant, stage))
    return files


def earlier_selections(root: str, variant: str, stage: int) -> list[str]:
    """The selections of stages before `stage`: their documents are trained on already."""
    return [layout.selection(root, mates_stage_name(variant, k)) for k in range(1, stage)]


def family_fitted_inputs(root: str, name: str, params: dict) -> list[str]:
    """What a MATES family's annotation reads: the influence model's card and weights, the run's
    tokenizer (documents are cut to the probed unit) and the earlier stages' selections."""
    variant, stage = params["variant"], params["stage"]
    return [layout.influence_model_card(root, variant, stage),
            layout.influence_model(root, variant, stage), layout.tokenizer(root),
            *earlier_selections(root, variant, stage)]
