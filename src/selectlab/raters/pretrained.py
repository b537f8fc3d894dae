"""Public classifiers used as they are: FineWeb-Edu's educational scorer, WanjuanCC's
advertisement and fluency classifiers, from local model directories (full scale).

`wrap_pretrained` writes a thin rater directory: a card that names each column's classifier
directory; no weights are copied. Loading gives a rater with the same `score(texts)` as a
trained one. Each classifier reads a text in chunks of `window` tokens like every rater here;
a one-output classifier (FineWeb-Edu's regression head) gives its raw output, a two-class one
the probability of class `positive_index` (the card records which), and a text's value is the
chunk-length-weighted mean over its chunks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from selectlab.raters.backbone import pad_batch, position_ids, special_tokens, window_content
from selectlab.raters.chunks import plan_chunks, weighted_mean
from selectlab.raters.io import (
    FORMAT_VERSION,
    MODEL_DIR,
    NO_TOKENS,
    Rater,
    finish_columns,
    metrics_record,
    write_card,
)
from selectlab.raters.spec import PROTOCOL, heads


class ChunkedClassifier:
    """One sequence-classification model scoring texts chunk by chunk."""

    def __init__(self, path: str, window: int, positive_index: int, device: str):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        if not Path(path).is_dir():
            raise FileNotFoundError(f"classifier directory {path} does not exist")
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForSequenceClassification.from_pretrained(path).to(device).eval()
        self.outputs = int(self.model.config.num_labels)
        if self.outputs not in (1, 2):
            raise ValueError(f"{path}: expected a 1-output (regression) or 2-class classifier, "
                             f"got {self.outputs} outputs")
        if self.outputs == 2 and positive_index not in (0, 1):
            raise ValueError(f"positive_index must be 0 or 1, got {positive_index}")
        self.positive_index = positive_index
        self.prefix, self.suffix = special_tokens(self.tokenizer)
        self.content_size = window_content(
            window, len(self.prefix) + len(self.suffix),
            getattr(self.model.config, "max_position_embeddings", None))
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else 0)
        self.device = device

    def chunk_values(self, chunks: Sequence[Sequence[int]]) -> np.ndarray:
        ids, mask = pad_batch([self.prefix + list(c) + self.suffix for c in chunks], self.pad_id)
        ids, mask = ids.to(self.device), mask.to(self.device)
        with torch.inference_mode():
            logits = self.model(input_ids=ids, attention_mask=mask,
                                position_ids=position_ids(mask)).logits.float()
        if self.outputs == 1:
            return logits[:, 0].cpu().numpy()
        return logits.softmax(dim=-1)[:, self.positive_index].cpu().numpy()

    def score(self, texts: Sequence[str], batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        ids = self.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]
        plan = plan_chunks(ids, self.content_size)
        values = np.zeros(len(plan.chunks))
        order = np.argsort(-plan.weight, kind="stable")
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            values[rows] = self.chunk_values([plan.chunks[i] for i in rows])
        return weighted_mean(values, plan), plan.has_chunks


class PretrainedClassifierRater(Rater):
    def __init__(self, rater: str, classifiers: dict[str, ChunkedClassifier], card: dict,
                 forward_batch_size: int):
        self.rater = rater
        self.classifiers = classifiers
        self.card = card
        self.columns = list(classifiers)
        self.forward_batch_size = forward_batch_size

    @classmethod
    def from_card(cls, card: dict, device: str, forward_batch_size: int):
        classifiers = {column: ChunkedClassifier(entry["path"], card["window"],
                                                 entry["positive_index"], device)
                       for column, entry in card["classifiers"].items()}
        return cls(card["rater"], classifiers, card, forward_batch_size)

    def score(self, texts: Sequence[str]) -> dict[str, object]:
        values, scored = {}, np.ones(len(texts), dtype=bool)
        for column, classifier in self.classifiers.items():
            values[column], has_tokens = classifier.score(texts, self.forward_batch_size)
            scored &= has_tokens
        reasons = [None if ok else NO_TOKENS for ok in scored]
        return finish_columns(self.rater, heads(self.rater), values, scored, reasons)


def classifier_entries(rater: str, pretrained: dict) -> dict[str, dict]:
    """column -> {path, positive_index} from the config's `pretrained` mapping, checked."""
    expected = [h.name for h in heads(rater)]
    unknown = sorted(set(pretrained) - set(expected))
    if unknown or set(pretrained) != set(expected):
        raise ValueError(f"{rater}: `pretrained` must name a classifier for each of {expected}, "
                         f"got {sorted(pretrained)}")
    return {column: {"path": str(pretrained[column]["path"]),
                     "positive_index": int(pretrained[column].get("positive_index", 1))}
            for column in expected}


def wrap_pretrained(rater: str, params: dict, out_dir: str | Path, *,
                    config_hash: str = "") -> dict:
    """Write the thin rater directory for public classifiers; returns the metrics record."""
    entries = classifier_entries(rater, params["pretrained"])
    for column, entry in entries.items():
        if not Path(entry["path"]).is_dir():
            raise FileNotFoundError(f"{rater}.{column}: classifier directory {entry['path']} "
                                    "does not exist")
    card = {"format": FORMAT_VERSION, "kind": "pretrained_classifier", "rater": rater,
            "family": rater, "protocol": PROTOCOL[rater], "columns": list(entries),
            "classifiers": entries, "window": params["window"],
            "backbone": {"label": ", ".join(e["path"] for e in entries.values()),
                         "window": params["window"]},
            "training": {"pretrained": True}, "metrics": {}, "config_hash": config_hash,
            "params": params, "judge": {"simulated": False, "notes": []}}
    # No weights of its own: the model directory stays empty, the card names the classifiers.
    (Path(out_dir) / MODEL_DIR).mkdir(parents=True, exist_ok=True)
    write_card(out_dir, card)
    return metrics_record(card)
