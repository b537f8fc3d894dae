"""Linear heads over a backbone's text vector, and what their outputs become in a sidecar.

Before the heads, features are standardised with a shift and scale fitted on the training
texts (frozen backbones give features of very different scales; the identity when the
backbone is fine-tuned). Standardisation and heads are both affine, so a text's outputs are
the chunk-length-weighted mean of its chunks' outputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from selectlab.raters.spec import BINARY, CLASSES, Head, probability_columns


class RaterHeads(torch.nn.Module):
    def __init__(self, dim: int, heads: Sequence[Head]):
        super().__init__()
        self.specs = list(heads)
        self.register_buffer("shift", torch.zeros(dim))
        self.register_buffer("scale", torch.ones(dim))
        self.linear = torch.nn.ModuleDict(
            {h.name: torch.nn.Linear(dim, h.outputs) for h in self.specs})

    def fit_normalizer(self, features: torch.Tensor) -> None:
        """Standardise each feature to mean 0 and sd 1 over `features` (training texts); a
        feature that does not vary there is only centred."""
        self.shift.copy_(features.mean(dim=0))
        sd = features.std(dim=0, correction=0)
        self.scale.copy_(torch.where(sd > 1e-6, sd, torch.ones_like(sd)))

    def forward(self, features: torch.Tensor) -> dict[str, torch.Tensor]:
        x = (features - self.shift) / self.scale
        out = {}
        for h in self.specs:
            y = self.linear[h.name](x)
            out[h.name] = y if h.kind == CLASSES else y.squeeze(-1)
        return out


def sidecar_values(heads: Sequence[Head], outputs: dict[str, np.ndarray],
                   with_probabilities: bool) -> dict[str, np.ndarray]:
    """Sidecar columns from raw head outputs (numpy, one row per text).

    Scores and regression values pass through; binary heads become probabilities; class heads
    become their most likely label and, when asked, one probability column per class.
    """
    columns: dict[str, np.ndarray] = {}
    for h in heads:
        raw = outputs[h.name]
        if h.kind == BINARY:
            columns[h.name] = 1.0 / (1.0 + np.exp(-raw))
        elif h.kind == CLASSES:
            shifted = np.exp(raw - raw.max(axis=1, keepdims=True))
            probs = shifted / shifted.sum(axis=1, keepdims=True)
            columns[h.name] = np.asarray(h.classes, dtype=object)[probs.argmax(axis=1)]
            if all(isinstance(c, int) for c in h.classes):
                columns[h.name] = columns[h.name].astype(np.int64)
            if with_probabilities:
                for k, name in enumerate(probability_columns(h)):
                    columns[name] = probs[:, k]
        else:
            columns[h.name] = raw.astype(np.float64)
    return columns
