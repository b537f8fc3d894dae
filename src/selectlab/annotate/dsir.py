"""DSIR importance weights from hashed unigram and bigram features (Xie et al., 2023).

Features. A text is lower-cased and split into word and punctuation runs by the regular
expression `\\w+|[^\\w\\s]+` (the word/punctuation split DSIR uses). Each token t gets a 64-bit
hash h(t): the first 8 bytes, little-endian, of BLAKE2b(t as UTF-8, digest size 8). A unigram
falls in bucket h(t) mod B; the bigram (a, b) in bucket mix(h(a) * 0x9E3779B97F4A7C15 + h(b))
mod B, where arithmetic wraps at 2^64 and mix is SplitMix64's finaliser. B = 10,000 buckets in
the papers. Hashes are memoised per token, and a batch of documents is featurised with one
vectorised pass over all its tokens.

Model. Bucket counts are summed over the target texts and over a seeded sample of the training
shards (the raw distribution). Smoothing (the family's `smoothing`):
    epsilon (default)  log(count[k] / total + 1e-8), as the reference implementation (the
                       `data-selection` package's HashedNgramDSIR) takes its log ratios;
    laplace            add-one smoothing, log((count[k] + 1) / (total + B)).
The log importance weight of a document is sum over its n-gram features of
(log p_target[bucket] - log p_raw[bucket]): the log of p_target(doc) / p_raw(doc) under the two
bag-of-n-grams models, not normalised by length.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
import pyarrow as pa

from selectlab.annotate.base import MISSING_REASON, Annotator
from selectlab.shards import Document, atomic_path
from selectlab.tokens import batched

TOKEN = re.compile(r"\w+|[^\w\s]+")
HASH_VERSION = "blake2b64-splitmix64-v1"
BIGRAM_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
MIX_2 = np.uint64(0x94D049BB133111EB)
DEFAULT_CACHE_TOKENS = 2_000_000
SMOOTHINGS = ("epsilon", "laplace")
REFERENCE_EPSILON = 1e-8  # data-selection: log(probs + 1e-8)


def token_hash(token: str) -> int:
    # surrogatepass: lone surrogates (from undecodable input) still hash, deterministically.
    data = token.encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def mix64(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, elementwise on uint64 (wrapping multiplication)."""
    values = values ^ (values >> np.uint64(30))
    values = values * MIX_1
    values = values ^ (values >> np.uint64(27))
    values = values * MIX_2
    return values ^ (values >> np.uint64(31))


def tokenize(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


class HashMemo(dict):
    """token -> token_hash(token), computed on first lookup."""

    def __missing__(self, token: str) -> int:
        value = self[token] = token_hash(token)
        return value


class NgramHasher:
    """Maps texts to unigram + bigram bucket ids; keeps a bounded memo of token hashes."""

    def __init__(self, buckets: int, cache_tokens: int = DEFAULT_CACHE_TOKENS):
        if buckets < 2:
            raise ValueError(f"DSIR needs at least 2 buckets, got {buckets}")
        self.buckets = buckets
        self.cache_tokens = cache_tokens
        self._hashes = HashMemo()

    def token_hashes(self, tokens: list[str]) -> np.ndarray:
        # Emptied between batches once full, so memory stays flat on an open-ended vocabulary.
        if len(self._hashes) > self.cache_tokens:
            self._hashes.clear()
        lookup = self._hashes.__getitem__
        return np.fromiter(map(lookup, tokens), dtype=np.uint64, count=len(tokens))

    def featurize(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(bucket id, document index) of every unigram and bigram of every text."""
        token_lists = [tokenize(text) for text in texts]
        lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
        hashes = self.token_hashes(list(chain.from_iterable(token_lists)))
        doc_of_token = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
        modulus = np.uint64(self.buckets)
        unigrams = hashes % modulus
        # A bigram is a pair of neighbouring tokens of the same document.
        same_doc = doc_of_token[:-1] == doc_of_token[1:]
        pairs = hashes[:-1][same_doc] * BIGRAM_MULTIPLIER + hashes[1:][same_doc]
        bigrams = mix64(pairs) % modulus
        buckets = np.concatenate([unigrams, bigrams]).astype(np.int64)
        docs = np.concatenate([doc_of_token, doc_of_token[:-1][same_doc]])
        return buckets, docs

    def count(self, texts: Iterable[str], batch_size: int = 256) -> tuple[np.ndarray, int]:
        """Bucket counts summed over `texts`, and the number of texts."""
        counts = np.zeros(self.buckets, dtype=np.int64)
        n_texts = 0
        for batch in batched(texts, batch_size):
            buckets, _ = self.featurize(batch)
            counts += np.bincount(buckets, minlength=self.buckets)
            n_texts += len(batch)
        return counts, n_texts


def log_distribution(counts: np.ndarray, smoothing: str = "epsilon") -> np.ndarray:
    """log of the smoothed distribution over buckets (see the module docstring)."""
    counts = np.asarray(counts, dtype=np.float64)
    if smoothing == "epsilon":
        return np.log(counts / counts.sum() + REFERENCE_EPSILON)
    if smoothing == "laplace":
        return np.log(counts + 1.0) - np.log(counts.sum() + len(counts))
    raise ValueError(f"DSIR smoothing must be one of {SMOOTHINGS}, got {smoothing!r}")


@dataclass
class DsirModel:
    targets: list[str]
    target_counts: np.ndarray  # (targets, buckets) int64
    raw_counts: np.ndarray  # (buckets,) int64

    @property
    def buckets(self) -> int:
        return int(self.raw_counts.shape[0])

    def log_ratios(self, smoothing: str = "epsilon") -> np.ndarray:
        """(targets, buckets): log p_target - log p_raw per bucket."""
        raw = log_distribution(self.raw_counts, smoothing)
        return np.stack([log_distribution(counts, smoothing) - raw
                         for counts in self.target_counts])

    def save(self, path: str | Path) -> None:
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as handle:
                np.savez(handle, targets=np.array(self.targets), target_counts=self.target_counts,
                         raw_counts=self.raw_counts, hash_version=np.array(HASH_VERSION))

    @classmethod
    def load(cls, path: str | Path) -> DsirModel:
        with np.load(path, allow_pickle=False) as data:
            version = str(data["hash_version"])
            if version != HASH_VERSION:
                raise ValueError(f"{path}: DSIR model hashed with {version!r}, this code hashes "
                                 f"with {HASH_VERSION!r}; re-run fit_dsir")
            return cls(targets=[str(t) for t in data["targets"]],
                       target_counts=data["target_counts"], raw_counts=data["raw_counts"])


def fit_dsir(targets: dict[str, Iterable[str]], raw_texts: Iterable[str], buckets: int,
             ) -> tuple[DsirModel, dict]:
    """Count the target and raw texts; returns the model (targets in name order) and what was
    counted per distribution."""
    hasher = NgramHasher(buckets)
    target_counts, card = [], {}
    for name, texts in sorted(targets.items()):
        counts, n_docs = hasher.count(texts)
        if n_docs == 0 or not counts.any():
            raise ValueError(f"DSIR target {name!r} has no documents with words")
        target_counts.append(counts)
        card[name] = {"documents": n_docs, "features": int(counts.sum())}
    raw_counts, n_raw = hasher.count(raw_texts)
    if n_raw == 0 or not raw_counts.any():
        raise ValueError("the DSIR raw sample has no documents with words")
    card["raw"] = {"documents": n_raw, "features": int(raw_counts.sum())}
    model = DsirModel(targets=sorted(targets), target_counts=np.stack(target_counts),
                      raw_counts=raw_counts)
    return model, card


def log_importance_weights(hasher: NgramHasher, log_ratios: np.ndarray,
                           texts: Sequence[str]) -> np.ndarray:
    """(targets, texts): each text's summed log ratio over its features."""
    buckets, docs = hasher.featurize(texts)
    return np.stack([np.bincount(docs, weights=ratio[buckets], minlength=len(texts))
                     for ratio in log_ratios])


class DsirAnnotator(Annotator):
    """Writes `dsir_{target}` for every target of the fitted model, in target-name order (as
    the model stores them), whatever order the config lists them in."""

    kind = "dsir"
    model_label = "hashed 1-2-grams"

    def __init__(self, model_path: str | Path, buckets: int, targets: Sequence[str],
                 smoothing: str = "epsilon"):
        if smoothing not in SMOOTHINGS:
            raise ValueError(f"DSIR smoothing must be one of {SMOOTHINGS}, got {smoothing!r}")
        self.model_path = Path(model_path)
        self.buckets = buckets
        self.targets = sorted(targets)
        self.smoothing = smoothing
        self._hasher = NgramHasher(buckets)
        self._log_ratios: np.ndarray | None = None

    def setup(self) -> None:
        model = DsirModel.load(self.model_path)
        if model.buckets != self.buckets or model.targets != self.targets:
            raise ValueError(f"{self.model_path} was fitted with {model.buckets} buckets and "
                             f"targets {model.targets}; the config asks for {self.buckets} and "
                             f"{self.targets}: re-run fit_dsir")
        self._log_ratios = model.log_ratios(self.smoothing)

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([(f"dsir_{name}", pa.float64()) for name in self.targets]
                         + [(MISSING_REASON, pa.string())])

    def annotate_batch(self, docs: Sequence[Document]) -> dict[str, list]:
        if self._log_ratios is None:
            raise RuntimeError("DsirAnnotator.setup() was not called")
        weights = log_importance_weights(self._hasher, self._log_ratios, [d.text for d in docs])
        columns = {f"dsir_{name}": row.tolist() for name, row in zip(self.targets, weights,
                                                                      strict=True)}
        return columns | {MISSING_REASON: [None] * len(docs)}
