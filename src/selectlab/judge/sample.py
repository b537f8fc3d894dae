"""Which documents, pairs and snippets the judge sees.

Documents are drawn per protocol from the training shards' meta sidecars, stratified by source
(`set_name`) in proportion to each source's document count, with a seed derived from the run's
seed and the protocol's name so the three protocols draw independent samples. Texts then come
from the raw shards through the validating reader, reading only shards that hold a drawn id.

QuRating pairs: the drawn documents are paired by repeated random matchings (each round pairs
every document once, no pair twice), and each pair gets one snippet length in tokens of the run's
tokenizer, as in the paper's judgment data: in half of the pairs a length uniform in
[min, max], in the other half exactly max. Both documents contribute a snippet of that length
from a random start; a document shorter than that contributes all of its text.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from selectlab.shards import Document, ReadReport, iter_documents


def protocol_seed(seed: int, protocol: str) -> int:
    return (seed * 1_000_003 + zlib.crc32(protocol.encode())) % (2**32)


def read_meta(meta_files: Sequence[str | Path]) -> pd.DataFrame:
    """The meta sidecars as one table with a `shard` column (the file's stem)."""
    frames = []
    for path in meta_files:
        frame = pd.read_parquet(path, columns=["id", "set_name", "source_detail", "n_tokens"])
        frames.append(frame.assign(shard=Path(path).name.removesuffix(".parquet")))
    if not frames:
        raise ValueError("no meta sidecars given")
    meta = pd.concat(frames, ignore_index=True)
    check_unique_ids(meta)
    return meta


def check_unique_ids(meta: pd.DataFrame) -> None:
    """Judgments, their cache and the sample's texts are keyed by document id: two documents
    with one id would get each other's text and answers."""
    repeated = meta[meta["id"].duplicated(keep=False)]
    if repeated.empty:
        return
    examples = "; ".join(f"{doc_id!r} in {sorted(set(group['shard']))}" for doc_id, group
                         in list(repeated.groupby("id", sort=True))[:3])
    raise ValueError(f"{repeated['id'].nunique()} document ids occur more than once among the "
                     f"candidate shards (e.g. {examples}): ids must be unique in the pool")


def proportional_allocation(counts: Mapping[str, int], total: int) -> dict[str, int]:
    """Split `total` over strata in proportion to `counts` (largest remainder), capped by size."""
    available = sum(counts.values())
    total = min(total, available)
    quotas = {name: total * count / available for name, count in counts.items()}
    allocation = {name: int(quota) for name, quota in quotas.items()}
    by_remainder = sorted(counts, key=lambda name: (allocation[name] - quotas[name], name))
    for name in by_remainder[: total - sum(allocation.values())]:
        allocation[name] += 1
    return allocation


def stratified_sample(meta: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """`n` documents (all if fewer), stratified by `set_name`, in a seeded random order."""
    counts = meta.groupby("set_name").size().to_dict()
    allocation = proportional_allocation(counts, n)
    rng = np.random.default_rng(seed)
    parts = [group.iloc[rng.choice(len(group), size=allocation[name], replace=False)]
             for name, group in meta.groupby("set_name", sort=True)]
    drawn = pd.concat(parts, ignore_index=True)
    return drawn.iloc[rng.permutation(len(drawn))].reset_index(drop=True)


def load_documents(ids_by_shard: Mapping[str, set[str]],
                   shard_files: Mapping[str, Sequence[str]],
                   max_doc_chars: int, id_root: str | Path | None = None) -> dict[str, Document]:
    """The documents with the wanted ids, read through the validating reader."""
    found: dict[str, Document] = {}
    for shard, wanted in ids_by_shard.items():
        if shard not in shard_files:
            raise ValueError(f"shard {shard!r} has a meta sidecar but no raw files")
        report = ReadReport(shard=shard)
        for doc in iter_documents(shard_files[shard], report, max_chars=max_doc_chars,
                                  id_root=id_root):
            if doc.id in wanted:
                found[doc.id] = doc
    missing = {i for ids in ids_by_shard.values() for i in ids} - set(found)
    if missing:
        raise ValueError(f"{len(missing)} sampled ids are not in the raw shards (e.g. "
                         f"{sorted(missing)[:3]}); meta sidecars and raw shards disagree")
    return found


def random_pairs(ids: Sequence[str], n_pairs: int, seed: int) -> list[tuple[str, str]]:
    """`n_pairs` distinct unordered pairs from repeated random perfect matchings of `ids`."""
    if len(ids) < 2:
        raise ValueError("pairing needs at least two documents")
    limit = len(ids) * (len(ids) - 1) // 2
    if n_pairs > limit:
        raise ValueError(f"{n_pairs} pairs requested but {len(ids)} documents give only {limit}")
    rng = random.Random(seed)
    pairs: list[tuple[str, str]] = []
    seen: set[frozenset[str]] = set()
    while len(pairs) < n_pairs:
        order = list(ids)
        rng.shuffle(order)
        added = 0
        for a, b in zip(order[0::2], order[1::2], strict=False):
            if frozenset((a, b)) not in seen and len(pairs) < n_pairs:
                seen.add(frozenset((a, b)))
                pairs.append((a, b))
                added += 1
        if added == 0 and len(seen) >= limit:
            break
    return pairs


def snippet_length(rng: random.Random, low: int, high: int) -> int:
    """Half the pairs get a length uniform in [low, high], the other half exactly `high`."""
    return rng.randint(low, high) if rng.random() < 0.5 else high


@dataclass(frozen=True)
class Snippet:
    text: str
    start: int  # first token
    tokens: int


def cut_snippet(token_ids: Sequence[int], length: int, rng: random.Random, decode) -> Snippet:
    """`length` consecutive tokens from a random start (all tokens if the text is shorter)."""
    if len(token_ids) <= length:
        return Snippet(decode(list(token_ids)), 0, len(token_ids))
    start = rng.randint(0, len(token_ids) - length)
    return Snippet(decode(list(token_ids[start:start + length])), start, length)


def clip_to_tokens(token_ids: Sequence[int], max_tokens: int, decode) -> tuple[str, int]:
    """The text of the first `max_tokens` tokens, and how many tokens that is."""
    kept = list(token_ids[:max_tokens])
    return decode(kept), len(kept)


def _encode(tokenizer, texts: list[str]) -> list[list[int]]:
    return tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []


def _decoder(tokenizer):
    return lambda ids: tokenizer.decode(ids, skip_special_tokens=True)


def _drawn_documents(meta: pd.DataFrame, n: int, seed: int,
                     shard_files: Mapping[str, Sequence[str]], max_doc_chars: int,
                     id_root: str | Path | None) -> tuple[pd.DataFrame, dict[str, Document]]:
    drawn = stratified_sample(meta, n, seed)
    ids_by_shard = drawn.groupby("shard")["id"].agg(set).to_dict()
    return drawn, load_documents(ids_by_shard, shard_files, max_doc_chars, id_root)


def pointwise_sample(protocol: str, meta: pd.DataFrame, shard_files: Mapping[str, Sequence[str]],
                     *, documents: int, max_text_tokens: int, seed: int, tokenizer,
                     max_doc_chars: int, id_root: str | Path | None = None) -> pd.DataFrame:
    """`sample.parquet` for a pointwise protocol: one row per document, text clipped in tokens."""
    seed = protocol_seed(seed, protocol)
    drawn, docs = _drawn_documents(meta, documents, seed, shard_files, max_doc_chars, id_root)
    token_ids = _encode(tokenizer, [docs[i].text for i in drawn["id"]])
    decode = _decoder(tokenizer)
    texts, kept = [], []
    for doc_id, ids in zip(drawn["id"], token_ids, strict=True):
        if len(ids) <= max_text_tokens:
            texts.append(docs[doc_id].text)
            kept.append(len(ids))
        else:
            text, n = clip_to_tokens(ids, max_text_tokens, decode)
            texts.append(text)
            kept.append(n)
    return pd.DataFrame({
        "protocol": protocol,
        "doc_id": drawn["id"],
        "shard": drawn["shard"],
        "set_name": drawn["set_name"],
        "source_detail": drawn["source_detail"],
        "doc_tokens": [len(ids) for ids in token_ids],
        "text_tokens": kept,
        "text": texts,
    })


def pair_sample(meta: pd.DataFrame, shard_files: Mapping[str, Sequence[str]], *,
                documents: int, pairs: int, snippet_tokens: Sequence[int], seed: int,
                tokenizer, max_doc_chars: int, protocol: str = "qurating",
                id_root: str | Path | None = None) -> pd.DataFrame:
    """`sample.parquet` for QuRating: one row per pair with both snippets."""
    low, high = int(snippet_tokens[0]), int(snippet_tokens[1])
    if not 0 < low <= high:
        raise ValueError(f"snippet_tokens must be [min, max] with 0 < min <= max, got "
                         f"{list(snippet_tokens)}")
    seed = protocol_seed(seed, protocol)
    drawn, docs = _drawn_documents(meta, documents, seed, shard_files, max_doc_chars, id_root)
    info = drawn.set_index("id")
    token_ids = dict(zip(drawn["id"], _encode(tokenizer, [docs[i].text for i in drawn["id"]]),
                         strict=True))
    decode = _decoder(tokenizer)
    rng = random.Random(seed)
    rows = []
    for pair_id, (a, b) in enumerate(random_pairs(list(drawn["id"]), pairs, seed)):
        length = snippet_length(rng, low, high)
        snippet_a = cut_snippet(token_ids[a], length, rng, decode)
        snippet_b = cut_snippet(token_ids[b], length, rng, decode)
        rows.append({
            "protocol": protocol, "pair_id": pair_id, "doc_a": a, "doc_b": b,
            "set_name_a": info.at[a, "set_name"], "set_name_b": info.at[b, "set_name"],
            "source_detail_a": info.at[a, "source_detail"],
            "source_detail_b": info.at[b, "source_detail"],
            "snippet_tokens": length,
            "start_a": snippet_a.start, "tokens_a": snippet_a.tokens, "text_a": snippet_a.text,
            "start_b": snippet_b.start, "tokens_b": snippet_b.tokens, "text_b": snippet_b.text,
        })
    return pd.DataFrame(rows)
