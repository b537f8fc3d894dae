"""Training one rater from its judge labels, end to end: split, train, evaluate, save.

`train_head_rater` serves every rater with heads on a backbone (QuRater, DataMan's small-scale
classifier, PRRC, FineWeb-Edu- and WanjuanCC-style heads). Documents (or, for QuRater, pairs)
are split into a held-out part and a training part with the rater's seed, and the training
part into the examples fitted and a validation share for early stopping, by the same unit
(pair or document) and before DataMan's up-sampling: no pair or document is on two sides. The
held-out part is never trained on and gives the metrics saved in metrics.json and the card.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from selectlab.devices import select_device
from selectlab.raters import pointwise, qurater
from selectlab.raters.backbone import BackboneSpec, RandomEncoderShape, load_backbone
from selectlab.raters.heads import RaterHeads, sidecar_values
from selectlab.raters.io import (
    FORMAT_VERSION,
    HeadRater,
    backbone_record,
    heads_record,
    metrics_record,
    save_head_rater,
)
from selectlab.raters.spec import PROTOCOL, dataman_version_heads, heads
from selectlab.raters.throughput import measured, throughput_record
from selectlab.raters.train import TrainSettings, fit_frozen, fit_full, split_validation

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prepared:
    """A rater's training problem: texts, objective, example split, and what it evaluates."""

    texts: list[str]
    objective: object
    train: np.ndarray  # example indices trained on (after filters and up-sampling)
    validation: np.ndarray  # early stopping's examples, never trained on
    heldout: np.ndarray
    data: object
    summary: dict


def backbone_spec(params: dict) -> BackboneSpec:
    return BackboneSpec(source=params["backbone"], window=params["window"],
                        pool_layers=tuple(params["pool_layers"]), dtype=params["dtype"],
                        random_encoder=RandomEncoderShape(**params.get("random_encoder", {})),
                        seed=params["seed"], from_scratch=bool(params.get("from_scratch")))


def train_settings(params: dict) -> TrainSettings:
    return TrainSettings(epochs=params["epochs"], lr=params["lr"],
                         weight_decay=params["weight_decay"], batch_size=params["batch_size"],
                         forward_batch_size=params["forward_batch_size"],
                         patience=params["patience"], seed=params["seed"],
                         autocast_dtype=params["dtype"])


def split_documents(n: int, heldout_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    n_held = int(round(n * heldout_fraction))
    return np.sort(order[n_held:]), np.sort(order[:n_held])


def prepare_pairs(labels: pd.DataFrame, rater_heads, params: dict) -> Prepared:
    data, dropped = qurater.pair_data(labels, tuple(h.name for h in rater_heads))
    objective = qurater.PairwiseObjective(data)
    train, heldout = qurater.split_pairs(data, params["heldout_fraction"], params["seed"],
                                         universe=qurater.judged_pairs(labels))
    # QuRating B.2: training, validation and evaluation keep only confident judgments
    sure = train[qurater.confident(data.p_b_better[train], params["confident_margin"])]
    fit, validation = split_validation(sure, objective.units_of(sure),
                                       params["validation_fraction"], params["seed"])
    summary = dropped | {"pairs": len(np.unique(data.pair_key)), "pair_rows": len(data),
                         "texts": len(data.texts), "train_rows": int(len(train)),
                         "train_rows_confident": int(len(sure)),
                         "fit_rows": int(len(fit)), "validation_rows": int(len(validation)),
                         "heldout_rows": int(len(heldout))}
    return Prepared(data.texts, objective, fit, validation, heldout, data, summary)


def prepare_points(rater: str, labels: pd.DataFrame, rater_heads, params: dict) -> Prepared:
    # every DataMan version reads all targets: up-sampling needs the Overall Score
    data, dropped = pointwise.point_data(labels, heads("dataman") if rater == "dataman"
                                         else rater_heads)
    train, heldout = split_documents(len(data), params["heldout_fraction"], params["seed"])
    fit, validation = split_validation(train, train, params["validation_fraction"],
                                       params["seed"])
    summary = dropped | {"documents": len(data), "train_documents": int(len(train)),
                         "fit_documents": int(len(fit)),
                         "validation_documents": int(len(validation)),
                         "heldout_documents": int(len(heldout))}
    factor = params.get("upsample_low_scores", 1)
    if rater == "dataman" and factor > 1:
        # after the split, so that no copy of a document is also a validation document
        scores = pointwise.overall_scores(data, heads("dataman"))
        fit = pointwise.upsample_low_scores(fit, scores, factor)
        summary["train_examples_upsampled"] = int(len(fit))
    return Prepared(data.texts, pointwise.PointwiseObjective(data, rater_heads), fit, validation,
                    heldout, data, summary)


def drop_tokenless(prepared: Prepared, has_tokens: np.ndarray) -> Prepared:
    """Examples that read a text without tokens cannot be scored: counted and left out."""
    def keep(examples: np.ndarray) -> np.ndarray:
        ok = [has_tokens[prepared.objective.texts_of(np.array([e]))].all() for e in examples]
        return examples[np.asarray(ok, dtype=bool)] if len(examples) else examples

    train, validation = keep(prepared.train), keep(prepared.validation)
    heldout = keep(prepared.heldout)
    dropped = (len(prepared.train) - len(train) + len(prepared.validation) - len(validation)
               + len(prepared.heldout) - len(heldout))
    summary = prepared.summary | {"texts_without_tokens": int((~has_tokens).sum()),
                                  "examples_dropped_without_tokens": int(dropped)}
    return Prepared(prepared.texts, prepared.objective, train, validation, heldout,
                    prepared.data, summary)


def evaluate(rater: str, head_rater: HeadRater, prepared: Prepared, features: np.ndarray,
             params: dict) -> dict:
    outputs = head_rater.raw_outputs(features)
    if rater == "qurater":
        return qurater.evaluate(outputs, prepared.data, prepared.heldout,
                                params["confident_margin"])
    predicted = sidecar_values(head_rater.heads.specs, outputs, with_probabilities=False)
    return pointwise.evaluate(rater, head_rater.heads.specs, predicted, prepared.data,
                              prepared.heldout)


def rater_heads_of(rater: str, params: dict):
    """The heads a rater trains: DataMan's version's, or the configured criteria's."""
    if rater == "dataman":
        return dataman_version_heads(params.get("version", "all"))
    criteria = params.get("criteria")
    return heads(rater, tuple(criteria) if criteria else None)


def train_head_rater(rater: str, labels_path: str | Path, params: dict, out_dir: str | Path, *,
                     name: str | None = None, tokenizer_dir: str | Path | None = None,
                     gpus: int = 0, judge_notes: list[str] | None = None,
                     config_hash: str = "") -> dict:
    """Train, evaluate on the held-out part, save to `out_dir`; returns the metrics record.
    `name` is the trained instance (`dataman_score`), `rater` what it is (`dataman`)."""
    started = time.perf_counter()
    torch.manual_seed(params["seed"])
    labels = pd.read_parquet(labels_path)
    rater_heads = rater_heads_of(rater, params)
    prepared = (prepare_pairs(labels, rater_heads, params) if rater == "qurater"
                else prepare_points(rater, labels, rater_heads, params))
    spec = backbone_spec(params)
    trainable = bool(params["train_backbone"])
    device = select_device(gpus)
    backbone = load_backbone(spec, tokenizer_dir=tokenizer_dir, trainable=trainable,
                             device=device)
    settings = train_settings(params)
    head_module = RaterHeads(backbone.dim, rater_heads).to(device)
    prepared = drop_tokenless(prepared, backbone.plan(prepared.texts).has_chunks)
    if not len(prepared.train):
        raise ValueError(f"{rater}: no training examples left (see {prepared.summary})")
    if trainable:
        history = fit_full(backbone, head_module, prepared.texts, prepared.objective,
                           prepared.train, prepared.validation, settings)
        timing = {"fit": time.perf_counter() - started}
        features = _features(backbone, prepared.texts, settings)
    else:
        # Computed once, outside inference mode's tensors, so the heads can train on them.
        features = _features(backbone, prepared.texts, settings).clone()
        timing = {"features": time.perf_counter() - started}
        history = fit_frozen(features, head_module, prepared.objective, prepared.train,
                             prepared.validation, settings)
        timing["fit"] = time.perf_counter() - started - timing["features"]
    head_module.eval()
    backbone.eval()
    card = {
        "format": FORMAT_VERSION, "kind": "heads", "rater": rater, "name": name or rater,
        "version": params.get("version", "all") if rater == "dataman" else None,
        "family": rater,
        "protocol": PROTOCOL[rater], "heads": heads_record(rater_heads),
        "backbone": backbone_record(spec, backbone, trained=trainable),
        "training": prepared.summary | {"history": history.as_dict(),
                                        "settings": vars(settings)},
        "config_hash": config_hash, "params": params,
        "judge": {"simulated": bool(judge_notes), "notes": list(judge_notes or [])},
    }
    head_rater = HeadRater(rater, backbone, head_module, card, settings.forward_batch_size)
    card["columns"] = head_rater.columns
    card["metrics"] = evaluate(rater, head_rater, prepared, features.cpu().numpy(), params)
    if rater == "dataman":
        card["throughput"] = scoring_throughput(head_rater, prepared, device)
    timing["total"] = time.perf_counter() - started
    card["timing_s"] = {k: round(v, 2) for k, v in timing.items()}
    card["cost"] = training_cost(backbone, prepared, trainable, history.as_dict()["epochs_run"],
                                 timing["total"], gpus, device)
    save_head_rater(out_dir, head_rater, save_backbone=card["backbone"]["saved"])
    log.info("%s: %s", rater, card["metrics"])
    return metrics_record(card)


def training_cost(backbone, prepared: Prepared, trained: bool, epochs: int, seconds: float,
                  gpus: int, device: str) -> dict:
    """FLOPs of the job (selectlab.flops): fine-tuning trains the backbone on the training texts
    every epoch and then reads every text once more for the features; a frozen backbone only
    reads every text once (the heads' own products are negligible)."""
    from selectlab.flops import (
        chunked_tokens,
        cost_record,
        inference_flops,
        module_shape,
        training_flops,
    )

    shape = module_shape(backbone.model, backbone.window)
    per_text = np.asarray(chunked_tokens(backbone, prepared.texts), dtype=np.int64)
    read = int(per_text.sum())
    trained_tokens = int(per_text[np.unique(prepared.objective.texts_of(prepared.train))].sum())
    flops = inference_flops(shape, read) + (
        training_flops(shape, trained_tokens * epochs) if trained else 0.0)
    return cost_record("train" if trained else "inference", flops, seconds=seconds, gpus=gpus,
                       device=device, shape=shape,
                       tokens=read + (trained_tokens * epochs if trained else 0))


def scoring_throughput(head_rater: HeadRater, prepared: Prepared, device: str) -> dict:
    """The held-out documents scored again from their text (DataMan Table 10's speeds)."""
    texts = [prepared.texts[i] for i in np.unique(prepared.objective.texts_of(prepared.heldout))]
    tokens = float(head_rater.backbone.plan(texts).weight.sum())
    with torch.inference_mode(), measured(device) as timing:
        head_rater.score(texts)
    return throughput_record(len(texts), int(tokens), 0, timing)


def _features(backbone, texts: list[str], settings: TrainSettings) -> torch.Tensor:
    with torch.inference_mode():
        return backbone.features(texts, settings.forward_batch_size)[0].float()
