"""The data-influence model: a rater that regresses a unit's oracle influence from its text.

MATES fine-tunes a small BERT on the probed (unit, influence) pairs and predicts the influence
of every candidate; Meta-rater trains ModernBERT for it. Here it is the project's own rater
machinery (selectlab.raters): one regression head on a rater backbone (frozen MiniLM with a
trained head offline, a fine-tuned ModernBERT at full scale), saved as a rater directory that
`selectlab.raters.load_rater` loads, so annotation scores the pool with it like any rater.

Targets are the probes' influences standardised with the training probes' mean and standard
deviation, so the sidecar's `influence` is in standard deviations of the stage's oracle
influence. A share of the probes (`heldout_fraction`) is never trained on: the Spearman and
Pearson correlations of the predictions with the oracle on them go into metrics.json.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from selectlab.mates.plan import COLUMN

log = logging.getLogger(__name__)
RATER = "mates"


def read_probes(paths: Sequence[str | Path]) -> pd.DataFrame:
    probes = pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)
    if probes["id"].duplicated().any():
        raise ValueError("a unit was probed twice: the probe parts overlap")
    finite = np.isfinite(probes["influence"].to_numpy(dtype=float))
    if not finite.all():
        log.warning("%d probes without a finite influence left out", int((~finite).sum()))
    return probes[finite].reset_index(drop=True)


def correlations(oracle: np.ndarray, predicted: np.ndarray) -> dict:
    from selectlab.raters.metrics import spearman

    if len(oracle) < 3:
        return {"n": int(len(oracle)), "spearman": None, "pearson": None}
    return {"n": int(len(oracle)), "spearman": spearman(oracle, predicted),
            "pearson": float(np.corrcoef(oracle, predicted)[0, 1])}


def fit_influence_model(probe_paths: Sequence[str | Path], params: dict, out_dir: str | Path, *,
                        gpus: int = 0, config_hash: str = "") -> dict:
    """Train on the probes, check on the held-out ones, save the rater; returns metrics."""
    import torch

    from selectlab.devices import select_device
    from selectlab.flops import (
        chunked_tokens,
        cost_record,
        inference_flops,
        module_shape,
        training_flops,
    )
    from selectlab.raters.backbone import load_backbone
    from selectlab.raters.build import backbone_spec, split_documents, train_settings
    from selectlab.raters.heads import RaterHeads
    from selectlab.raters.io import (
        FORMAT_VERSION,
        HeadRater,
        backbone_record,
        heads_record,
        save_head_rater,
    )
    from selectlab.raters.pointwise import PointData, PointwiseObjective
    from selectlab.raters.spec import REGRESSION, Head
    from selectlab.raters.train import fit_frozen, fit_full, split_validation

    started = time.perf_counter()
    torch.manual_seed(params["seed"])
    probes = read_probes(probe_paths)
    train, heldout = split_documents(len(probes), params["heldout_fraction"], params["seed"])
    oracle = probes["influence"].to_numpy(dtype=np.float64)
    mean, sd = float(oracle[train].mean()), float(oracle[train].std()) or 1.0
    heads = [Head(COLUMN, REGRESSION)]
    texts = probes["text"].astype(str).tolist()
    data = PointData(texts, probes["id"].to_numpy(), {COLUMN: (oracle - mean) / sd})
    objective = PointwiseObjective(data, heads)
    device = select_device(gpus)
    spec = backbone_spec(params)
    trainable = bool(params["train_backbone"])
    backbone = load_backbone(spec, trainable=trainable, device=device)
    head_module = RaterHeads(backbone.dim, heads).to(device)
    settings = train_settings(params)
    plan = backbone.plan(texts)
    train = train[plan.has_chunks[train]]
    if len(train) < 2:
        raise ValueError(f"{len(train)} probes to train the influence model on")
    # Early stopping watches a validation part of the training probes, as the raters' does.
    fit, validation = split_validation(train, train, params["validation_fraction"],
                                       params["seed"])
    if trainable:
        history = fit_full(backbone, head_module, texts, objective, fit, validation, settings)
    else:
        with torch.inference_mode():
            features = backbone.features(texts, settings.forward_batch_size)[0].float()
        history = fit_frozen(features.clone(), head_module, objective, fit, validation,
                             settings)
    head_module.eval()
    backbone.eval()
    card = {"format": FORMAT_VERSION, "kind": "heads", "rater": RATER, "family": RATER,
            "protocol": "oracle influence (MATES probes)", "heads": heads_record(heads),
            "backbone": backbone_record(spec, backbone, trained=trainable),
            "target": {"column": COLUMN, "mean": mean, "sd": sd,
                       "unit": "standard deviations of the stage's oracle influence"},
            "training": {"probes": int(len(probes)), "train_probes": int(len(train)),
                         "heldout_probes": int(len(heldout)), "history": history.as_dict(),
                         "settings": vars(settings)},
            "config_hash": config_hash, "params": params, "judge": {"simulated": False}}
    rater = HeadRater(RATER, backbone, head_module, card, settings.forward_batch_size)
    card["columns"] = rater.columns
    predicted = np.asarray(rater.score([texts[i] for i in heldout])[COLUMN], dtype=np.float64)
    keep = np.isfinite(predicted)
    card["metrics"] = {"heldout": correlations(oracle[heldout][keep], predicted[keep])}
    seconds = time.perf_counter() - started
    shape = module_shape(backbone.model, spec.window)
    tokens_per_text = np.asarray(chunked_tokens(backbone, texts))
    read = int(tokens_per_text.sum())
    epochs = int(history.as_dict()["epochs_run"])
    # Fine-tuning trains the backbone on the training texts every epoch; a frozen backbone
    # reads every text once (the heads' own products are negligible). Scoring the held-out
    # probes reads them once more.
    flops = (training_flops(shape, int(tokens_per_text[train].sum()) * epochs) if trainable
             else inference_flops(shape, read)) + inference_flops(
                 shape, int(tokens_per_text[heldout].sum()))
    card["cost"] = cost_record("train" if trainable else "inference", flops, seconds=seconds,
                               gpus=gpus, device=device, shape=shape, tokens=read)
    save_head_rater(out_dir, rater, save_backbone=card["backbone"]["saved"])
    log.info("influence model: held-out %s", card["metrics"]["heldout"])
    return {"rater": RATER, "kind": "heads", "metrics": card["metrics"],
            "training": {k: v for k, v in card["training"].items() if k != "history"},
            "backbone": backbone.label, "window": spec.window, "target": card["target"],
            "cost": card["cost"], "config_hash": config_hash}
