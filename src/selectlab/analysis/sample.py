"""One table of documents with every score: the input of the analysis figures.

The sidecars of all shards are read column by column (pyarrow, the score columns only) and
joined row by row with the meta sidecar, whose `id`s each sidecar must repeat in the same order.
At full scale the corpus has hundreds of millions of documents, so the figures and correlations
use a seeded uniform sample of `sample_rows` documents (Meta-rater's correlations use 200k); a
corpus no larger than that is read whole. Columns are named `family.column`, as selection
methods name scores.

Which columns are scores: every numeric column of a sidecar except its bookkeeping (`id`,
`missing_reason`, `status`), the reference LM's `ref_ppl` (exp of `ref_nll`, so it would repeat
it) and `ref_tokens` (how many tokens were scored, not a score), and PRRC's class probabilities
`{dimension}_p{k}` (the ratings themselves are kept).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

META_COLUMNS = ("set_name", "n_tokens")
BOOKKEEPING = frozenset({"id", "missing_reason", "status"})
DERIVED = frozenset({"ref_ppl", "ref_tokens"})
PROBABILITY = re.compile(r"_p\d+$")


def is_score(field: pa.Field) -> bool:
    numeric = pa.types.is_integer(field.type) or pa.types.is_floating(field.type)
    return (numeric and field.name not in BOOKKEEPING | DERIVED
            and PROBABILITY.search(field.name) is None)


def score_columns(schema: pa.Schema) -> list[str]:
    return [field.name for field in schema if is_score(field)]


def qualified(family: str, column: str) -> str:
    return f"{family}.{column}"


def split_name(name: str) -> tuple[str, str]:
    family, _, column = name.partition(".")
    return family, column


def sample_positions(row_counts: Sequence[int], sample_rows: int,
                     seed: int) -> list[np.ndarray]:
    """Per shard, the sorted row positions of a uniform sample of `sample_rows` documents
    (every row when the corpus has no more)."""
    total = int(sum(row_counts))
    if sample_rows >= total:
        return [np.arange(n) for n in row_counts]
    chosen = np.sort(np.random.default_rng(seed).choice(total, size=sample_rows, replace=False))
    bounds = np.cumsum([0, *row_counts])
    return [chosen[(chosen >= low) & (chosen < high)] - low
            for low, high in zip(bounds[:-1], bounds[1:], strict=True)]


def aligned_columns(path: str | Path, ids: pa.ChunkedArray, columns: Sequence[str],
                    meta_path: str | Path) -> pa.Table:
    """`columns` of one sidecar, after checking it lists the meta sidecar's ids in order."""
    table = pq.read_table(path, columns=["id", *columns])
    if not table.column("id").equals(ids):
        raise ValueError(f"{path} does not list the documents of {meta_path} in the same order: "
                         "re-run its annotation")
    return table


def read_shard(meta_path: str | Path, sidecars: Mapping[str, str | Path],
               columns: Mapping[str, Sequence[str]],
               rows: np.ndarray | None = None) -> pa.Table:
    """Meta's `set_name` and `n_tokens` and every family's `columns`, as `family.column`."""
    meta = pq.read_table(meta_path, columns=["id", *META_COLUMNS])
    ids = meta.column("id")
    names, arrays = list(META_COLUMNS), [meta.column(c) for c in META_COLUMNS]
    for family, path in sidecars.items():
        table = aligned_columns(path, ids, columns[family], meta_path)
        names += [qualified(family, c) for c in columns[family]]
        arrays += [table.column(c) for c in columns[family]]
    joined = pa.Table.from_arrays(arrays, names=names)
    return joined if rows is None else joined.take(pa.array(rows, type=pa.int64()))


def family_score_columns(sidecars: Mapping[str, Sequence[str | Path]]) -> dict[str, list[str]]:
    """Each family's score columns, read from its first sidecar; every shard must agree."""
    columns = {}
    for family, paths in sidecars.items():
        schemas = [pq.read_schema(path) for path in paths]
        columns[family] = score_columns(schemas[0])
        for path, schema in zip(paths, schemas, strict=True):
            if score_columns(schema) != columns[family]:
                raise ValueError(f"{path} has score columns {score_columns(schema)}, the "
                                 f"family's first shard {columns[family]}")
    return columns


def sample_table(meta_paths: Sequence[str | Path], sidecars: Mapping[str, Sequence[str | Path]],
                 sample_rows: int, seed: int) -> tuple[pa.Table, dict]:
    """The sampled documents of all shards (shard order, then row order) and a summary."""
    for family, paths in sidecars.items():
        if len(paths) != len(meta_paths):
            raise ValueError(f"family {family} has {len(paths)} sidecars for "
                             f"{len(meta_paths)} shards")
    columns = family_score_columns(sidecars)
    counts = [pq.read_metadata(path).num_rows for path in meta_paths]
    positions = sample_positions(counts, sample_rows, seed)
    parts = [read_shard(meta, {f: paths[i] for f, paths in sidecars.items()}, columns,
                        positions[i]) for i, meta in enumerate(meta_paths)]
    table = pa.concat_tables(parts)
    summary = {"documents": int(sum(counts)), "sampled": table.num_rows,
               "sample_rows": sample_rows, "seed": seed,
               "null_values": {name: table.column(name).null_count
                               for name in table.column_names}}
    return table, summary


def to_frame(table: pa.Table) -> pd.DataFrame:
    """Integer scores keep an integer dtype with missing values (pandas Int64)."""
    return table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)


def score_names(frame: pd.DataFrame, families: Sequence[str] | None = None) -> list[str]:
    """The `family.column` columns of `frame`, optionally of `families` only, in frame order."""
    names = [c for c in frame.columns if "." in c]
    return names if families is None else [c for c in names if split_name(c)[0] in families]


def pool_sidecars(attributes_dir: str | Path, ready_file: str | Path,
                  families: Sequence[str]) -> tuple[list[Path], list[Path]]:
    """The meta sidecars of the shards a pool's ready file lists (selectlab.corpus.pools) and
    each family's sidecars of them, under `attributes_dir`; a missing one is an error."""
    from selectlab.corpus.pools import listed_shards
    from selectlab.selection.pool import sidecar_path

    shards = listed_shards(ready_file)
    meta = [sidecar_path(attributes_dir, "meta", shard) for shard in shards]
    sidecars = [sidecar_path(attributes_dir, family, shard) for family in families
                for shard in shards]
    missing = [str(path) for path in meta + sidecars if not path.exists()]
    if missing:
        raise FileNotFoundError(f"{len(missing)} sidecars of the pool listed in {ready_file} "
                                f"are missing, e.g. {missing[:3]}")
    return meta, sidecars


def sidecars_by_family(meta_paths: Sequence[str | Path],
                       sidecar_paths: Sequence[str | Path]) -> dict[str, list[Path]]:
    """`attributes/{family}/{shard}.parquet` paths grouped by family, in the order of the meta
    sidecars' shards; a family missing a shard is an error."""
    shards = [Path(path).stem for path in meta_paths]
    found: dict[str, dict[str, Path]] = {}
    for path in map(Path, sidecar_paths):
        found.setdefault(path.parent.name, {})[path.stem] = path
    grouped = {}
    for family, by_shard in found.items():
        missing = [shard for shard in shards if shard not in by_shard]
        if missing:
            raise ValueError(f"family {family} has no sidecar for shards {missing}")
        grouped[family] = [by_shard[shard] for shard in shards]
    return grouped
