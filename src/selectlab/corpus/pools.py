"""Selection pools: which units a paper's rows select from, cut from the tokenized shards.

Each paper selected from its own pool, in its own unit:
- QuRating: a 260B-token random subset of SlimPajama in 1024-token Llama sequences
  (QuRatedPajama; QuRating section 5.1), rated as the length-weighted mean of 512-token
  segments (the rater's `window`).
- DataMan: SlimPajama segmented into 1024-token documents, 447B tokens (DataPajama; DataMan
  section 5.1).
- Meta-rater: the full 627B SlimPajama, rated per document (its Appendix C chooses a 4k rater
  window because 4,096 tokens cover over 95% of SlimPajama's documents: documents are the unit).

The run's tokenized shards are the `full` pool: every valid document of every shard, addressed by
the shard's own name. Any other pool is cut from them, shard by shard, into a pool shard named
`{shard}__{pool}` with its own meta sidecar and token array, so annotation, selection and packing
read a pool shard exactly as they read a tokenized shard:

- unit `sequence`: each source's documents of the shard, in reader order, form one token stream
  with an EOS after every document; the stream is cut into windows of `sequence_tokens` tokens
  (only each source's last window in a shard is shorter). A window's tokens, EOS included, are
  stored contiguously, so a 1024-token unit packs into exactly one 1024-token training row.
  Its id is `{document id}#{t}`: the document it starts in and the token of it it starts at.
- unit `document`: the shard's documents as they are (a subset pool of documents).

`share` keeps a deterministic subset: the units whose 64-bit key (a hash of the unit id, stable
across machines and runs) falls below `share` of the key range. Neither QuRating's 260B subset
nor the selection of DataPajama's 447B from the 627B is published, so the pools are random
subsets of the same size, documented as such in config/paper.yaml. With `draw: nested` (the
default) every pool reads the same key, so of two pools of one unit the smaller share is a subset
of the larger (QuRating's pool lies inside DataMan's: the papers' rows that both run differ only
by the pool's size); `draw: independent` salts the key with the pool's name, so each pool is its
own random draw and two pools overlap by the product of their shares.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from selectlab.corpus.pool_names import FULL, POOL_SEPARATOR, pool_shard  # noqa: F401
from selectlab.shards import Document, ReadReport, atomic_path

UNITS = ("document", "sequence")
DRAWS = ("nested", "independent")
POOL_KEY = b"selectlab.pool"  # the pool's settings in its meta sidecars' parquet metadata
# Between the documents one sequence unit holds there is an EOS token; raters read a blank line.
DOCUMENT_BREAK = "\n\n"
META_FIELDS = [("id", pa.string()), ("set_name", pa.string()), ("source_detail", pa.string()),
               ("n_chars", pa.int64()), ("n_tokens", pa.int64()), ("token_offset", pa.int64())]


@dataclass(frozen=True)
class PoolSpec:
    name: str
    unit: str  # "document" or "sequence"
    sequence_tokens: int | None  # window length of a sequence unit
    share: float  # fraction of the units kept (by unit key)
    draw: str = "nested"  # "nested": one key for every pool; "independent": salted by the name

    @property
    def eos_inside(self) -> bool:
        """A sequence unit carries its documents' EOS tokens; a document gets one at packing."""
        return self.unit == "sequence"

    def to_dict(self) -> dict:
        # A nested draw is written as before `draw` existed, so its pools' jobs do not rerun.
        record = asdict(self)
        if self.draw == "nested":
            del record["draw"]
        return record

    @property
    def salt(self) -> str:
        return f"{self.name}:" if self.draw == "independent" else ""


# The tokenized shards as a pool: every document of the run, one unit each.
FULL_POOL = PoolSpec(FULL, "document", None, 1.0)


def pool_spec(name: str, settings: dict) -> PoolSpec:
    unit = settings.get("unit", "document")
    if unit not in UNITS:
        raise ValueError(f"pool {name}: unit {unit!r} is not one of {UNITS}")
    length = settings.get("sequence_tokens")
    if unit == "sequence" and (not isinstance(length, int) or length < 2):
        raise ValueError(f"pool {name}: a sequence unit needs sequence_tokens >= 2")
    share = float(settings.get("share", 1.0))
    if not 0.0 < share <= 1.0:
        raise ValueError(f"pool {name}: share {share} is not in (0, 1]")
    if POOL_SEPARATOR in name or name == FULL:
        raise ValueError(f"pool name {name!r} is reserved or holds {POOL_SEPARATOR!r}")
    draw = settings.get("draw", "nested")
    if draw not in DRAWS:
        raise ValueError(f"pool {name}: draw {draw!r} is not one of {DRAWS}")
    return PoolSpec(name, unit, length if unit == "sequence" else None, share, draw)


def unit_keys(ids: pd.Series | np.ndarray | list) -> np.ndarray:
    """Each unit id's fixed pseudo-random 64-bit key (pandas' SipHash of the string with its
    fixed default key: the same on every machine and in every run)."""
    return pd.util.hash_array(np.asarray(ids, dtype=object))


def kept_by_share(ids, share: float, salt: str = "") -> np.ndarray:
    if share >= 1.0:
        return np.ones(len(ids), dtype=bool)
    keyed = [f"{salt}{i}" for i in ids] if salt else ids
    return unit_keys(keyed) < np.uint64(int(share * float(2 ** 64 - 1)))


def cut_pool_shard(tokens_path: str | Path, meta_path: str | Path, spec: PoolSpec, eos_id: int,
                   out_tokens: str | Path, out_meta: str | Path) -> dict:
    """Write one pool shard (tokens and meta sidecar) from a tokenized shard; its counts."""
    tokens = np.load(tokens_path, mmap_mode="r")
    meta = pq.read_table(meta_path, columns=[name for name, _ in META_FIELDS]).to_pandas()
    if spec.unit == "sequence":
        units, source = sequence_units(meta, tokens, spec.sequence_tokens, eos_id)
    else:
        units, source = meta.assign(start=meta["token_offset"]), tokens
    kept = units[kept_by_share(units["id"], spec.share, spec.salt)].reset_index(drop=True)
    runs = [source[start:start + n] for start, n in zip(kept["start"], kept["n_tokens"],
                                                        strict=True)]
    out = np.concatenate(runs) if runs else np.zeros(0, dtype=tokens.dtype)
    kept["token_offset"] = np.r_[0, np.cumsum(kept["n_tokens"].to_numpy())][:-1].astype(np.int64)
    with atomic_path(out_tokens) as tmp, open(tmp, "wb") as handle:
        np.save(handle, out.astype(tokens.dtype, copy=False))
    table = pa.Table.from_pandas(kept[[name for name, _ in META_FIELDS]],
                                 schema=pa.schema(META_FIELDS), preserve_index=False)
    table = table.replace_schema_metadata({POOL_KEY: json.dumps(spec.to_dict())})
    with atomic_path(out_meta) as tmp:
        pq.write_table(table, tmp)
    return {"units": len(units), "kept": len(kept), "tokens": int(kept["n_tokens"].sum())}


def sequence_units(meta: pd.DataFrame, tokens: np.ndarray, length: int,
                   eos_id: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Windows of `length` tokens over each source's stream (documents in reader order, each
    followed by EOS), and the sources' streams one after another. Rows: id, set_name,
    source_detail, n_chars, n_tokens, start (into the streams)."""
    frames, streams, base = [], [], 0
    for set_name, docs in meta.groupby("set_name", sort=True):
        sizes = docs["n_tokens"].to_numpy(np.int64) + 1  # each document and its EOS
        doc_start = np.r_[0, np.cumsum(sizes)[:-1]]
        stream = np.empty(int(sizes.sum()), dtype=tokens.dtype)
        for position, offset, n in zip(doc_start, docs["token_offset"], docs["n_tokens"],
                                       strict=True):
            stream[position:position + n] = tokens[offset:offset + n]
            stream[position + n] = eos_id
        starts = np.arange(0, len(stream), length, dtype=np.int64)
        doc = np.searchsorted(doc_start, starts, side="right") - 1
        ids = docs["id"].to_numpy(object)[doc]
        # Characters a window covers: each document's characters spread evenly over its tokens
        # (an EOS covers none), so the windows of a document add up to its n_chars.
        per_token = np.repeat(docs["n_chars"].to_numpy(np.float64) / (sizes - 1).clip(min=1),
                              sizes)
        per_token[doc_start + sizes - 1] = 0.0
        chars = np.r_[0.0, np.cumsum(per_token)]
        ends = np.minimum(starts + length, len(stream))
        frames.append(pd.DataFrame({
            "id": [f"{i}#{t}" for i, t in zip(ids, starts - doc_start[doc], strict=True)],
            "set_name": set_name,
            "source_detail": docs["source_detail"].to_numpy(object)[doc],
            "n_chars": np.rint(chars[ends] - chars[starts]).astype(np.int64),
            "n_tokens": ends - starts,
            "start": starts + base,
        }))
        streams.append(stream)
        base += len(stream)
    columns = ["id", "set_name", "source_detail", "n_chars", "n_tokens", "start"]
    units = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    return units, np.concatenate(streams) if streams else np.zeros(0, tokens.dtype)


def read_pool_spec(meta_path: str | Path) -> PoolSpec | None:
    """The pool a meta sidecar belongs to; None for a tokenized shard (the full pool)."""
    metadata = pq.read_schema(meta_path).metadata or {}
    if POOL_KEY not in metadata:
        return None
    return PoolSpec(**json.loads(metadata[POOL_KEY]))


def write_pool_report(meta_paths: list[str | Path], out: str | Path) -> dict:
    """The pool's settings (read from its shards, which must agree) and its units and tokens
    per pool shard and source."""
    specs, shards = set(), []
    for path in meta_paths:
        spec = read_pool_spec(path)
        if spec is None:
            raise ValueError(f"{path} is a tokenized shard's meta, not a pool shard's")
        specs.add(spec)
        table = pq.read_table(path, columns=["set_name", "n_tokens"]).to_pandas()
        by_source = table.groupby("set_name")["n_tokens"].agg(["size", "sum"])
        shards.append({"shard": Path(path).stem, "units": len(table),
                       "tokens": int(table["n_tokens"].sum()),
                       "sources": {name: {"units": int(row["size"]), "tokens": int(row["sum"])}
                                   for name, row in by_source.iterrows()}})
    if len(specs) != 1:
        raise ValueError("the pool shards disagree on the pool's settings: "
                         f"{sorted(map(str, specs))} (re-run cut_pool for them)")
    report = {"pool": specs.pop().to_dict(), "units": sum(s["units"] for s in shards),
              "tokens": sum(s["tokens"] for s in shards), "shards": shards}
    with atomic_path(out) as tmp:
        Path(tmp).write_text(json.dumps(report, indent=1))
    return {key: report[key] for key in ("pool", "units", "tokens")}


def listed_shards(ready_file: str | Path) -> list[str]:
    """The shards a pool's ready file lists, in order: the read report (CSV, one row per
    tokenized shard) for `full`, the pool's report (JSON) for any other.

    Selection reads its shards from here rather than from a path per shard on its command line:
    a plan of thousands of shards and variants would format millions of such paths."""
    if str(ready_file).endswith(".csv"):
        return pd.read_csv(ready_file, usecols=["shard"], dtype=str)["shard"].tolist()
    return [shard["shard"] for shard in json.loads(Path(ready_file).read_text())["shards"]]


@dataclass(frozen=True)
class UnitSource:
    """Where a pool shard's unit texts come from: its token array and the run's tokenizer."""

    tokens: str | Path
    tokenizer: object


def iter_unit_documents(tokens_path: str | Path, meta_path: str | Path, tokenizer,
                        report: ReadReport, batch_size: int = 256) -> Iterator[Document]:
    """A pool shard's units as documents: each unit's text decoded from its tokens, the
    documents it spans joined by a blank line. Counted in `report` like a shard's lines."""
    tokens = np.load(tokens_path, mmap_mode="r")
    meta = pq.read_table(meta_path, columns=["id", "set_name", "source_detail", "token_offset",
                                             "n_tokens"]).to_pandas()
    eos = tokenizer.eos_token_id
    for start in range(0, len(meta), batch_size):
        rows = meta.iloc[start:start + batch_size]
        pieces = [split_at(tokens[offset:offset + n], eos) for offset, n
                  in zip(rows["token_offset"], rows["n_tokens"], strict=True)]
        flat = [piece for unit in pieces for piece in unit]
        texts = iter(tokenizer.batch_decode(flat, skip_special_tokens=True))
        for row, unit in zip(rows.itertuples(), pieces, strict=True):
            text = DOCUMENT_BREAK.join(next(texts) for _ in unit)
            report.lines += 1
            report.documents += 1
            yield Document(row.id, text, row.set_name, row.source_detail)


def split_at(ids: np.ndarray, eos: int) -> list[list[int]]:
    """A unit's token runs between EOS tokens (the EOS dropped; empty runs kept out)."""
    cuts = np.flatnonzero(ids == eos)
    runs = np.split(np.asarray(ids), cuts)
    out = [run[1:] if i else run for i, run in enumerate(runs)]
    return [run.tolist() for run in out if len(run)] or [[]]
