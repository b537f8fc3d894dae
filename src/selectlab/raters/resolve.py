"""Resolving the validated `raters:` config section into what one rater job needs.

Plain dict functions without torch: the workflow imports them while it builds the job graph.
`raters.defaults` applies to every rater and each rater's own entry overrides it; a rater is
trained only when the config has an entry for it. DataMan's `versions` (DataMan appendix B.2:
all-rating, score-only, domain-only) are trained in the same run, one job each: the `version`
that annotates as `dataman`, every other one as `dataman_<version>`. QuRating Table 6's
`setups` (appendix B.2) likewise train as `qurater_<setup>` beside the `qurater` that
annotates, each over `raters.qurater` with its own overrides. The resolved parameters go
to the job as JSON, so changing one rater's settings reruns that rater only, and their hash goes
on the card.
"""

from __future__ import annotations

import hashlib
import json

from selectlab import layout
from selectlab.raters.spec import (
    PROTOCOL,
    QURATER_SETUPS,
    RANDOM_ENCODER,
    RATERS,
    base_rater,
    dataman_instance,
    qurater_instance,
    qurater_setup_of,
)
from selectlab.resources import job_shape, schema_default

# How fast a job runs, not what it learns: passed apart from the params (`--throughput`), so
# changing it reruns nothing (docs/cluster.md).
THROUGHPUT_KEYS = ("forward_batch_size",)
HEAD_KEYS = ("backbone", "train_backbone", "window", "pool_layers", "dtype", "forward_batch_size",
             "batch_size", "epochs", "lr", "weight_decay", "validation_fraction", "patience",
             "heldout_fraction")
REQUIRED = {
    "heads": HEAD_KEYS,
    "generative": ("backbone", "version", "max_length", "inference", "dtype", "batch_size",
                   "epochs", "lr", "weight_decay", "heldout_fraction"),
    "pretrained": ("pretrained", "window", "forward_batch_size"),
}
CARD_FILE = layout.RATER_CARD


def dataman_versions(config: dict) -> tuple[str, list[str]]:
    """(the version that annotates, every version trained) of the configured DataMan."""
    section = config.get("raters") or {}
    entry = dict(section.get("defaults") or {}) | dict(section.get("dataman") or {})
    annotating = entry.get("version", "all")
    versions = list(entry.get("versions", [annotating]))
    if annotating not in versions:
        raise ValueError(f"raters.dataman: version {annotating!r} (the one that annotates) is "
                         f"not among the versions trained, {versions}")
    return annotating, versions


def qurater_setup(params: dict) -> str:
    """The QuRating Table 6 setup resolved QuRater params train: multi-task or separate
    models, from a pre-trained model or from scratch (random weights, or the random encoder)."""
    scratch = params.get("from_scratch", False) or params.get("backbone") == RANDOM_ENCODER
    return (f"{'separate' if params.get('separate') else 'multitask'}_"
            f"{'scratch' if scratch else 'pretrained'}")


def qurater_setups(config: dict) -> tuple[str, list[str]]:
    """(the setup of the `qurater` that annotates, the other Table 6 setups the run trains)."""
    section = config.get("raters") or {}
    entry = section.get("qurater") or {}
    annotating = qurater_setup(dict(section.get("defaults") or {}) | entry)
    others = [s for s in QURATER_SETUPS if s in (entry.get("setups") or {})]
    if annotating in others:
        raise ValueError(f"raters.qurater.setups.{annotating} is the setup raters.qurater "
                         "itself trains (the one that annotates): leave it out of `setups`")
    return annotating, others


def configured_raters(config: dict) -> list[str]:
    """Every rater the run trains, DataMan's extra versions as `dataman_<version>` and
    QuRating Table 6's other setups as `qurater_<setup>`."""
    section = config.get("raters") or {}
    names = []
    for name in RATERS:
        if name in section:
            names.append(name)
            if name == "dataman":
                annotating, versions = dataman_versions(config)
                names += [dataman_instance(v, annotating) for v in versions if v != annotating]
            if name == "qurater":
                names += [qurater_instance(s) for s in qurater_setups(config)[1]]
    return names


def _qurater_setup_params(config: dict, merged: dict, rater: str) -> dict:
    """A `qurater_<setup>` instance: raters.qurater with the setup's overrides, training
    separate models (one per criterion) or from scratch as its name says (QuRating B.2)."""
    setup = qurater_setup_of(rater)
    if setup not in qurater_setups(config)[1]:
        raise ValueError(f"{rater!r} is not a trained QuRater setup: raters.qurater.setups "
                         f"lists {qurater_setups(config)[1]}")
    merged |= config["raters"]["qurater"]["setups"][setup] or {}
    separate, scratch = setup.split("_")
    if separate == "separate":
        merged["separate"] = True
    if scratch == "scratch":
        merged["from_scratch"] = True
        if not merged.get("train_backbone"):
            raise ValueError(f"raters.qurater.setups.{setup}: a QuRater from scratch learns its "
                             "backbone's weights, so it needs train_backbone: true")
    elif merged.get("backbone") == RANDOM_ENCODER:
        raise ValueError(f"raters.qurater.setups.{setup} starts from a pre-trained model: give "
                         "it a `backbone` other than random_encoder")
    return merged


def _merged(config: dict, rater: str) -> dict:
    section = config.get("raters") or {}
    base = base_rater(rater)
    if base not in section:
        raise ValueError(f"rater {base!r} has no entry under `raters:` in the config")
    merged = dict(section.get("defaults") or {}) | dict(section[base] or {})
    if base == "qurater":
        merged.pop("setups", None)
        if rater != base:
            merged = _qurater_setup_params(config, merged, rater)
    if base == "dataman":
        merged.pop("versions", None)
        if rater != base:
            annotating, versions = dataman_versions(config)
            version = rater.removeprefix("dataman_")
            if version not in versions or version == annotating:
                raise ValueError(f"{rater!r} is not a trained DataMan version: versions "
                                 f"{versions}, {annotating!r} trains as 'dataman'")
            merged["version"] = version
    return merged


def rater_kind(config: dict, rater: str) -> str:
    """heads (trained on an encoder), generative (DataMan's full-scale LM) or pretrained."""
    merged = _merged(config, rater)
    if merged.get("pretrained"):
        return "pretrained"
    return "generative" if merged.get("objective") == "generative" else "heads"


def rater_params(config: dict, rater: str) -> dict:
    """Everything the training job reads, resources and throughput left out; `seed` defaults
    to the run's."""
    merged = _merged(config, rater)
    params = {k: v for k, v in merged.items() if k != "resources" and k not in THROUGHPUT_KEYS}
    params.setdefault("seed", int(config["seed"]))
    kind = rater_kind(config, rater)
    missing = [key for key in REQUIRED[kind] if key not in params | resolve_throughput(
        config, rater)]
    if missing:
        raise ValueError(f"raters.{rater} ({kind}) lacks {missing} (in its entry or in "
                         "raters.defaults)")
    if base_rater(rater) == "qurater" and "confident_margin" not in params:
        raise ValueError("raters.qurater needs confident_margin")
    return params


def resolve_throughput(config: dict, rater: str) -> dict:
    """Chunks per encoder forward pass (`selectlab raters train --throughput`): speed only,
    so kept out of the params and of the card's config hash."""
    merged = _merged(config, rater)
    return {key: merged[key] for key in THROUGHPUT_KEYS if key in merged}


def resources(config: dict, rater: str) -> dict:
    """The training job's shape: a QuRater setup's `resources` over the rater's, over those of
    `defaults`, key by key, over the schema's default."""
    section = config.get("raters") or {}
    _merged(config, rater)  # checks the rater
    entry = section[base_rater(rater)] or {}
    setup = (entry.get("setups") or {}).get(qurater_setup_of(rater)) or {}
    return job_shape(schema_default("raters.schema.yaml", "$defs", "resources"),
                     (section.get("defaults") or {}).get("resources"), entry.get("resources"),
                     setup.get("resources"))


def uses_pretrained(config: dict, rater: str) -> bool:
    """At full scale FineWeb-Edu and WanjuanCC are the public classifiers, not trained here."""
    return rater_kind(config, rater) == "pretrained"


def labels_protocol(rater: str) -> str:
    return PROTOCOL[base_rater(rater)]


def needs_labels(config: dict, rater: str) -> bool:
    return not uses_pretrained(config, rater)


def tokenizer_inputs(config: dict, root: str, rater: str) -> list[str]:
    """The run's tokenizer, for a rater that reads with it (a random-init encoder)."""
    return [layout.tokenizer(root)] if needs_tokenizer(config, rater) else []


def needs_tokenizer(config: dict, rater: str) -> bool:
    """A random-init encoder reads with the run's tokenizer."""
    return rater_kind(config, rater) == "heads" and _merged(config, rater).get("backbone") == (
        RANDOM_ENCODER)


def labels_input(config: dict, run_dir: str, rater: str) -> list[str]:
    """The judge labels a rater trains on (none for a wrapped public classifier)."""
    if not needs_labels(config, rater):
        return []
    protocol = labels_protocol(rater)
    if protocol not in config["judge"]["protocols"]:
        raise ValueError(f"rater {rater!r} learns from judge protocol {protocol!r}, which "
                         f"`judge.protocols` does not configure")
    return [layout.judge_labels(run_dir, protocol)]


def config_hash(params: dict) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()


def table_names(config: dict) -> list[str]:
    """Stems of the rater tables under tables/ for the configured raters."""
    raters = configured_raters(config)
    names = [f"rater_{r}" for r in ("qurater", "dataman", "prrc") if r in raters]
    if "dataman" in raters:
        names += ["rater_dataman_confusion", "rater_dataman_throughput"]
    if {"fineweb_edu", "wanjuan"} & set(raters):
        names.append("rater_classifiers")
    return names
