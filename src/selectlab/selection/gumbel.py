"""Sampling without replacement by Gumbel top-k.

Adding independent Gumbel(0, 1) noise to log-weights and sorting in decreasing order gives the
order of sequential sampling without replacement with probabilities proportional to the weights
(the Gumbel-max trick applied repeatedly). So a document's sort key is `logit + G`, and the
budgeted take that walks keys in decreasing order *is* the sequential draw, stopped when the
token quota is met. Keys are float32: 4 bytes per document.
"""

from __future__ import annotations

import numpy as np

# Uniform draws are kept inside (0, 1) so that -log(-log(u)) stays finite.
TINY = np.finfo(np.float32).tiny


def gumbel_noise(n: int, rng: np.random.Generator) -> np.ndarray:
    """n independent standard Gumbel draws as float32."""
    return gumbel_from_uniform(rng.random(n, dtype=np.float32))


def gumbel_from_uniform(u: np.ndarray) -> np.ndarray:
    """Standard Gumbel draws from uniform float32 draws (transformed in place): element by
    element, so a pool's draws come out the same shard by shard as all at once."""
    np.clip(u, TINY, np.float32(1.0) - np.finfo(np.float32).epsneg, out=u)
    np.log(u, out=u)
    np.negative(u, out=u)
    np.log(u, out=u)
    np.negative(u, out=u)
    return u


def gumbel_keys(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Sort keys whose decreasing order samples without replacement with p ~ exp(logits).

    Non-finite logits (-inf: excluded documents) stay -inf.
    """
    keys = gumbel_noise(len(logits), rng)
    keys += logits.astype(np.float32, copy=False)
    return keys


def tempered_logits(ratings: np.ndarray, tau: float) -> np.ndarray:
    """ratings / tau as float32; tau must be positive (tau = 0 is top-k, handled by callers)."""
    if tau <= 0:
        raise ValueError(f"temperature must be positive for sampling, got {tau}")
    return (ratings / np.float32(tau)).astype(np.float32, copy=False)


def gumbel_topk(logits: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of k items drawn without replacement with p ~ exp(logits), in draw order."""
    keys = gumbel_keys(logits, rng)
    k = min(k, int(np.isfinite(keys).sum()))
    top = np.argpartition(-keys, k - 1)[:k] if k > 0 else np.zeros(0, np.int64)
    return top[np.argsort(-keys[top], kind="stable")]
