"""Streaming one shard through one annotator into its sidecar.

The job holds one batch of documents at a time: it reads the shard with the validating reader,
checks each batch's ids against the meta sidecar (read in step, id column only), scores the
batch and appends it as one parquet row group to a temporary file that is renamed onto the
sidecar only when the whole shard is done. The reader's skip counts go into the sidecar's
key-value metadata and into the returned `ShardStats`.
"""

from __future__ import annotations

import json
import logging
import resource
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from selectlab.annotate.base import Annotator
from selectlab.corpus.pools import UnitSource, iter_unit_documents
from selectlab.errors import StageError
from selectlab.shards import Document, ReadReport, atomic_path, iter_documents
from selectlab.tokens import batched

LOG = logging.getLogger(__name__)
READ_REPORT_KEY = "selectlab.read_report"
FAMILY_KEY = "selectlab.family"


@dataclass
class ShardStats:
    """What one annotation job did, and how fast: a row of the throughput table."""

    family: str
    kind: str
    shard: str
    model: str
    device: str
    documents: int
    input_tokens: int
    token_unit: str  # "model": the family model's tokens; "corpus": the run tokenizer's
    setup_seconds: float
    seconds: float
    peak_rss_gb: float
    peak_device_gb: float | None
    read_report: dict = field(default_factory=dict)
    output_tokens: int = 0  # scoring families generate nothing
    cost: dict = field(default_factory=dict)  # selectlab.flops.cost_record of the job

    @property
    def docs_per_s(self) -> float:
        return self.documents / self.seconds if self.seconds > 0 else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.input_tokens / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict:
        return asdict(self) | {"docs_per_s": self.docs_per_s, "tokens_per_s": self.tokens_per_s}

    def log_line(self) -> str:
        return (f"throughput family={self.family} shard={self.shard} device={self.device} "
                f"documents={self.documents} seconds={self.seconds:.2f} "
                f"docs_per_s={self.docs_per_s:.1f} tokens_per_s={self.tokens_per_s:.0f} "
                f"({self.token_unit} tokens) setup_seconds={self.setup_seconds:.2f}")


class MetaRows:
    """The meta sidecar's `id` and `n_tokens`, handed out in the reader's step."""

    def __init__(self, path: str | Path, batch_rows: int):
        self.path = Path(path)
        self._batches = pq.ParquetFile(self.path).iter_batches(
            batch_size=batch_rows, columns=["id", "n_tokens"])
        self._ids: list[str] = []
        self._tokens: list[int] = []

    def take(self, n: int) -> tuple[list[str], int]:
        """The next n ids (fewer when meta runs out) and their corpus token total."""
        while len(self._ids) < n:
            batch = next(self._batches, None)
            if batch is None:
                break
            self._ids.extend(batch.column("id").to_pylist())
            self._tokens.extend(batch.column("n_tokens").to_pylist())
        ids, self._ids = self._ids[:n], self._ids[n:]
        tokens, self._tokens = self._tokens[:n], self._tokens[n:]
        return ids, sum(tokens)

    def exhausted(self) -> bool:
        return not self._ids and next(self._batches, None) is None


def check_alignment(docs: Sequence[Document], meta_ids: Sequence[str], first_row: int,
                    meta: Path) -> None:
    for offset, doc in enumerate(docs):
        expected = meta_ids[offset] if offset < len(meta_ids) else None
        if doc.id != expected:
            found = "no row" if expected is None else f"id {expected!r}"
            raise ValueError(f"row {first_row + offset}: the shard reads document {doc.id!r} "
                             f"but {meta} has {found}; the sidecar would not align with the "
                             "shard: re-run tokenize_shard for it")


def to_table(ids: list[str], columns: dict, schema: pa.Schema) -> pa.Table:
    score_names = [name for name in schema.names if name != "id"]
    if set(columns) != set(score_names):
        raise ValueError(f"annotator returned columns {sorted(columns)}, its schema declares "
                         f"{sorted(score_names)}")
    arrays = [pa.array(ids, type=pa.string())]
    for name in score_names:
        values = columns[name]
        array = values if isinstance(values, pa.Array) else pa.array(
            values, type=schema.field(name).type)
        if len(array) != len(ids):
            raise ValueError(f"annotator returned {len(array)} values of {name!r} for "
                             f"{len(ids)} documents")
        arrays.append(array)
    return pa.Table.from_arrays(arrays, schema=schema)


def remove_stale_temporaries(out_path: Path) -> None:
    """Temporary files of an earlier, killed job for this sidecar (never a finished file)."""
    for stale in out_path.parent.glob(f".{out_path.name}.tmp-*"):
        LOG.info("removing %s left by an interrupted job", stale)
        stale.unlink(missing_ok=True)


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KiB on Linux


def check_failures(annotator: Annotator, rows: int, max_failure_rate: float, family: str,
                   shard: str) -> None:
    """Fail the shard when more than `max_failure_rate` of its documents got no value."""
    counts = annotator.failure_counts()
    failed = sum(counts.values())
    if rows == 0 or failed / rows <= max_failure_rate:
        return
    causes = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:3]
    raise StageError("\n".join(
        [f"annotate {family} {shard}: {failed} of {rows} documents got no value "
         f"({failed / rows:.1%}, above the family's max_failure_rate {max_failure_rate:.1%}); "
         "the sidecar was not written. Most frequent causes:"]
        + [f"  {count} x {cause}" for cause, count in causes]
        + ["Fix the cause and rerun the job."]))


def annotate_shard(inputs: Sequence[str | Path] | UnitSource, meta_path: str | Path,
                   annotator: Annotator,
                   out_path: str | Path, *, family: str, shard: str, batch_size: int,
                   max_chars: int, max_failure_rate: float = 0.05,
                   id_root: str | Path | None = None) -> ShardStats:
    """Write `out_path`: one row per valid document of the shard, ids in meta's order. A pool
    shard's units (`inputs` a UnitSource) are read from its tokens instead of raw files."""
    out_path, meta_path = Path(out_path), Path(meta_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out_path)
    started = time.perf_counter()
    annotator.setup()
    setup_seconds = time.perf_counter() - started
    schema = pa.schema([pa.field("id", pa.string()), *annotator.schema])
    report = ReadReport(shard=shard)
    meta = MetaRows(meta_path, batch_size)
    rows = corpus_tokens = 0
    started = time.perf_counter()
    with atomic_path(out_path) as tmp:
        writer = None
        try:
            documents = (iter_unit_documents(inputs.tokens, meta_path, inputs.tokenizer, report)
                         if isinstance(inputs, UnitSource) else
                         iter_documents(inputs, report, max_chars=max_chars, id_root=id_root))
            for batch in batched(documents, batch_size):
                meta_ids, tokens = meta.take(len(batch))
                check_alignment(batch, meta_ids, rows, meta_path)
                table = to_table(meta_ids, annotator.annotate_batch(batch), schema)
                # Opened on the first batch, so a job that fails early leaves no file at all.
                writer = writer or pq.ParquetWriter(tmp, schema)
                writer.write_table(table)
                rows += len(batch)
                corpus_tokens += tokens
            if not meta.exhausted():
                raise ValueError(f"{meta_path} has more rows than the shard's {rows} valid "
                                 "documents: re-run tokenize_shard for it")
            check_failures(annotator, rows, max_failure_rate, family, shard)
            writer = writer or pq.ParquetWriter(tmp, schema)
            writer.add_key_value_metadata({FAMILY_KEY: family,
                                           READ_REPORT_KEY: json.dumps(read_summary(report))})
        finally:
            if writer is not None:
                writer.close()
    seconds = time.perf_counter() - started
    model_tokens = annotator.input_tokens
    output_tokens = int(getattr(annotator, "output_tokens", 0) or 0)
    stats = ShardStats(
        family=family, kind=annotator.kind, shard=shard, model=annotator.model_label,
        device=annotator.device, documents=rows,
        input_tokens=corpus_tokens if model_tokens is None else model_tokens,
        token_unit="corpus" if model_tokens is None else "model",
        setup_seconds=setup_seconds, seconds=seconds, peak_rss_gb=peak_rss_gb(),
        peak_device_gb=annotator.peak_device_memory_gb(), read_report=read_summary(report),
        output_tokens=output_tokens, cost=job_cost(annotator, model_tokens, output_tokens,
                                                   setup_seconds + seconds))
    LOG.info(stats.log_line())
    return stats


def job_cost(annotator: Annotator, input_tokens: int | None, output_tokens: int,
             seconds: float) -> dict:
    """The job's FLOPs (inference over the tokens its model read and wrote; 0 without a model)
    and time, on the device it ran on."""
    from selectlab.flops import cost_record, inference_flops

    shape = annotator.model_shape()
    tokens = (input_tokens or 0) + output_tokens if shape is not None else 0
    flops = inference_flops(shape, tokens) if shape is not None else 0.0
    gpus = 1 if annotator.device.startswith("cuda") else 0
    return cost_record("inference", flops, seconds=seconds, gpus=gpus, device=annotator.device,
                       shape=shape, tokens=tokens)


def read_summary(report: ReadReport) -> dict:
    return {"lines": report.lines, "documents": report.documents, "skipped": report.skipped,
            "n_skipped": report.n_skipped}


def sidecar_read_report(path: str | Path) -> dict:
    """The reader's counts stored in a sidecar's metadata."""
    metadata = pq.read_metadata(path).metadata or {}
    return json.loads(metadata[READ_REPORT_KEY.encode()])
