"""Saved raters: one directory, one card (`selectlab.raters.load.load_rater` loads any kind).

    raters/{rater}/rater_card.json   what it is: kind, rater, columns, heads, backbone, window,
                                     training data size, held-out metrics, config hash, judge
    raters/{rater}/model/            weights: heads.safetensors, and backbone/ when the backbone
                                     is the rater's own (random-init or fine-tuned); a frozen
                                     public backbone (MiniLM, a local path) is only named

`load_rater(dir).score(texts)` (selectlab.raters.load) returns the sidecar columns of the rater's
family (docs/layout.md) plus `missing_reason`, one value per text in input order: floats for
scores and probabilities (NaN when missing), pandas nullable Int64 for class labels, strings
(None when missing) for the DataMan domain and status. A text without a single token is not
scored; its `missing_reason` says so. Three kinds of rater share this interface: trained heads
on a backbone (`heads`, this module), a wrapped public classifier (`pretrained_classifier`,
pretrained.py), a fine-tuned generative DataMan (`generative`, dataman_generative.py).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from selectlab.layout import RATER_MODEL
from selectlab.raters.backbone import Backbone, BackboneSpec, RandomEncoderShape, load_backbone
from selectlab.raters.heads import RaterHeads, sidecar_values
from selectlab.raters.resolve import CARD_FILE
from selectlab.raters.spec import (
    CLASSES,
    DOMAIN,
    MISSING_REASON,
    RANDOM_ENCODER,
    STATUS,
    Head,
    sidecar_columns,
)

MODEL_DIR = RATER_MODEL
HEADS_FILE = "heads.safetensors"
BACKBONE_DIR = "backbone"
FORMAT_VERSION = 1
NO_TOKENS = "text has no tokens"


class Rater(ABC):
    """A loaded rater: `columns` are its sidecar score columns, `card` its rater_card.json."""

    rater: str
    columns: list[str]
    card: dict

    @abstractmethod
    def score(self, texts: Sequence[str]) -> dict[str, object]:
        """Sidecar columns (and `missing_reason`) for `texts`, one value per text, in order."""


def write_card(out_dir: str | Path, card: dict) -> Path:
    path = Path(out_dir) / CARD_FILE
    path.write_text(json.dumps(card, indent=2, sort_keys=True, default=_jsonable) + "\n")
    return path


def read_card(rater_dir: str | Path) -> dict:
    path = Path(rater_dir) / CARD_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{rater_dir} is not a saved rater: {CARD_FILE} is missing")
    card = json.loads(path.read_text())
    if card.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path}: unsupported rater card format {card.get('format')!r}")
    return card


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} to a rater card")


def heads_from_card(card: dict) -> list[Head]:
    return [Head(h["name"], h["kind"], tuple(h["classes"])) for h in card["heads"]]


def heads_record(heads: Sequence[Head]) -> list[dict]:
    return [{"name": h.name, "kind": h.kind, "classes": list(h.classes)} for h in heads]


def finish_columns(rater: str, heads: Sequence[Head], values: dict[str, np.ndarray],
                   scored: np.ndarray, reasons: Sequence[str | None]) -> dict[str, object]:
    """The returned columns, in sidecar order: nulls where a text was not scored, class labels
    as nullable integers, then `missing_reason`."""
    out: dict[str, object] = {}
    class_labels = {h.name: h for h in heads if h.kind == CLASSES}
    for name, column in values.items():
        head = class_labels.get(name)
        if head is not None and name != DOMAIN:
            out[name] = pd.array(np.where(scored, column, 0), dtype="Int64")
            out[name][~scored] = pd.NA
        elif name == DOMAIN or column.dtype == object:
            out[name] = np.array([v if ok else None for v, ok in zip(column, scored, strict=True)],
                                 dtype=object)
        else:
            out[name] = np.where(scored, column.astype(np.float64), np.nan)
    if rater == "dataman" and STATUS not in out:
        out[STATUS] = np.array(["ok" if ok else "missing" for ok in scored], dtype=object)
    ordered = {column: out[column] for column in sidecar_columns(rater, list(heads))}
    ordered[MISSING_REASON] = np.array(list(reasons), dtype=object)
    return ordered


class HeadRater(Rater):
    """Trained heads on a backbone's chunk-averaged text vector."""

    def __init__(self, rater: str, backbone: Backbone, heads: RaterHeads, card: dict,
                 forward_batch_size: int = 64):
        self.rater = rater
        self.backbone = backbone
        self.heads = heads
        self.card = card
        self.forward_batch_size = forward_batch_size
        self.columns = sidecar_columns(rater, heads.specs)

    @property
    def feature_key(self) -> str | None:
        """Equal for raters whose `features` are interchangeable (same frozen public backbone,
        window and pooling), so a caller may compute them once; None for a rater's own
        backbone."""
        return self.card["backbone"].get("feature_key")

    def features(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(float32 vectors, which texts had tokens): the input of `score_features`."""
        with torch.inference_mode():
            vectors, has_tokens = self.backbone.features(texts, self.forward_batch_size)
        return vectors.float().cpu().numpy(), has_tokens

    def raw_outputs(self, features: np.ndarray) -> dict[str, np.ndarray]:
        with torch.inference_mode():
            out = self.heads(torch.as_tensor(features, device=self.heads.shift.device))
        return {name: value.float().cpu().numpy() for name, value in out.items()}

    def score_features(self, features: np.ndarray, has_tokens: np.ndarray) -> dict[str, object]:
        values = sidecar_values(self.heads.specs, self.raw_outputs(features),
                                with_probabilities=self.rater == "prrc")
        reasons = [None if ok else NO_TOKENS for ok in has_tokens]
        return finish_columns(self.rater, self.heads.specs, values, has_tokens, reasons)

    def score(self, texts: Sequence[str]) -> dict[str, object]:
        return self.score_features(*self.features(texts))


def backbone_record(spec: BackboneSpec, backbone: Backbone, *, trained: bool) -> dict:
    """What the card says of the backbone. Its weights are saved with the rater whenever they
    are the rater's own: fine-tuned, or drawn from a seed (the random encoder, from scratch);
    a frozen public backbone is only named."""
    saved = trained or spec.source == RANDOM_ENCODER or spec.from_scratch
    record = {"source": spec.source, "label": backbone.label, "window": spec.window,
              "pool_layers": list(spec.pool_layers), "dtype": spec.dtype,
              "causal": backbone.causal, "trained": trained, "saved": saved,
              "random_encoder": vars(spec.random_encoder), "seed": spec.seed,
              "from_scratch": spec.from_scratch}
    if not saved:
        record["feature_key"] = json.dumps(
            {k: record[k] for k in ("source", "window", "pool_layers", "dtype")}, sort_keys=True)
    return record


def save_head_rater(out_dir: str | Path, rater: HeadRater, *, save_backbone: bool) -> Path:
    """Write heads (and the backbone when it is the rater's own) and the card."""
    from safetensors.torch import save_file

    model_dir = Path(out_dir) / MODEL_DIR
    model_dir.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in rater.heads.state_dict().items()}
    save_file(state, model_dir / HEADS_FILE)
    if save_backbone:
        rater.backbone.save(model_dir / BACKBONE_DIR)
    return write_card(out_dir, rater.card)


def spec_from_record(record: dict) -> BackboneSpec:
    return BackboneSpec(source=record["source"], window=record["window"],
                        pool_layers=tuple(record["pool_layers"]), dtype=record["dtype"],
                        random_encoder=RandomEncoderShape(**record["random_encoder"]),
                        seed=record["seed"], from_scratch=record.get("from_scratch", False))


def load_head_rater(rater_dir: Path, card: dict, device: str,
                    forward_batch_size: int) -> HeadRater:
    from safetensors.torch import load_file

    record = card["backbone"]
    saved = rater_dir / MODEL_DIR / BACKBONE_DIR if record["saved"] else None
    backbone = load_backbone(spec_from_record(record), saved_dir=saved,
                             causal=record["causal"], device=device)
    heads = RaterHeads(backbone.dim, heads_from_card(card))
    heads.load_state_dict(load_file(rater_dir / MODEL_DIR / HEADS_FILE))
    heads.to(device).eval()
    return HeadRater(card["rater"], backbone, heads, card, forward_batch_size)


def metrics_record(card: dict) -> dict:
    """What metrics.json holds: the card's metrics with the facts a table needs beside them."""
    return {"rater": card["rater"], "name": card.get("name", card["rater"]),
            "version": card.get("version"), "throughput": card.get("throughput"),
            "kind": card["kind"], "metrics": card["metrics"],
            "training": {k: v for k, v in card.get("training", {}).items()
                         if k not in ("history", "settings")},
            "backbone": card.get("backbone", {}).get("label"),
            "window": card.get("backbone", {}).get("window"),
            "judge": card.get("judge", {}), "config_hash": card["config_hash"],
            "cost": card.get("cost")}
