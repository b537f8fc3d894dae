"""Full-scale corpus: SlimPajama files on disk, read through the same validating reader.

SlimPajama ships as `{split}/chunk{1..10}/example_{split}_{k}.jsonl.zst` with records
`{"text", "meta": {"redpajama_set_name"}}`. Training files are consumed in place (grouped
into shards by `selectlab.corpus.resolve.slimpajama_shard_groups`); the validation and test
splits are cut to a token budget into `corpus/heldout/{split}.jsonl.zst` so that evaluation
reads the same layout in both corpus modes.
"""

from __future__ import annotations

import glob
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from selectlab.shards import Document, ReadReport, iter_documents, write_documents
from selectlab.tokens import batched, encode_texts, load_tokenizer

log = logging.getLogger(__name__)


@dataclass
class HeldoutRecord:
    """What one held-out split kept: documents and tokens per source, against its budget."""

    tokens_per_split: int
    documents: Counter[str] = field(default_factory=Counter)
    tokens: Counter[str] = field(default_factory=Counter)
    # True when the split's files ran out before the budget was reached: the file is the whole
    # split, not a prefix of it.
    whole_split: bool = True

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens.values())

    def add(self, doc: Document, n_tokens: int) -> None:
        self.documents[doc.set_name] += 1
        self.tokens[doc.set_name] += n_tokens

    def to_dict(self) -> dict:
        return {"tokens_per_split": self.tokens_per_split, "whole_split": self.whole_split,
                "total_documents": sum(self.documents.values()),
                "total_tokens": self.total_tokens,
                "documents": dict(sorted(self.documents.items())),
                "tokens": dict(sorted(self.tokens.items()))}


def heldout_prefix(docs: Iterable[Document], count_tokens: Callable[[list[str]], list[int]],
                   record: HeldoutRecord, batch_size: int = 512) -> Iterator[Document]:
    """Whole documents in the order given, while the kept tokens are below the budget.

    The last kept document takes the count to the budget or past it, by less than its own
    length. No per-source quota: SlimPajama's split files are already shuffled, so a prefix keeps
    the sources in the proportions the split has. `record` counts what was kept.
    """
    for batch in batched(docs, batch_size):
        for doc, n_tokens in zip(batch, count_tokens([d.text for d in batch]), strict=True):
            if record.total_tokens >= record.tokens_per_split:
                record.whole_split = False
                return
            record.add(doc, n_tokens)
            yield doc


def split_files(directory: str | Path, pattern: str) -> list[str]:
    """A split's files in sorted path order: the order the held-out prefix is read in."""
    files = sorted(glob.glob(str(Path(directory) / pattern)))
    if not files:
        raise ValueError(f"no files match {pattern!r} under {directory}")
    return files


def write_heldout(params: dict, tokenizer_dir: str | Path, out_path: str | Path) -> dict:
    """Write one SlimPajama held-out split: its documents up to `tokens_per_split` tokens.

    QuRating and DataMan measure perplexity on SlimPajama's validation and test sets, 500M tokens
    each (DataMan section 5.1). Tokens are counted with the run's tokenizer, without special
    tokens, as `attributes/meta` counts a training document (selectlab.tokens.encode_texts).
    Returns the reader's report and the kept documents and tokens per source (the job's log).
    """
    tokenizer = load_tokenizer(tokenizer_dir)
    report = ReadReport(shard=str(out_path))
    record = HeldoutRecord(int(params["tokens_per_split"]))
    directory = params["directory"]
    # Ids relative to the split's directory: file names repeat in every chunk directory.
    docs = iter_documents(split_files(directory, params["pattern"]), report,
                          max_chars=params["max_doc_chars"], id_root=directory,
                          on_damaged_file=params.get("on_damaged_file", "stop"))
    write_documents(out_path, heldout_prefix(
        docs, lambda texts: [len(ids) for ids in encode_texts(tokenizer, texts)], record))
    log.info("held-out split %s: kept %d documents, %d tokens of a %d-token budget%s",
             out_path, sum(record.documents.values()), record.total_tokens,
             record.tokens_per_split, " (the whole split)" if record.whole_split else "")
    return report.to_dict() | {"kept": record.to_dict()}


def download_files(dataset: str, split: str, chunks: list[int], files_per_chunk: int,
                   out_dir: str | Path) -> list[Path]:
    """Fetch SlimPajama files with `datasets` and rewrite them in the on-disk layout.

    Opt-in and online only: records are streamed file by file and written as
    `{out_dir}/chunk{c}/example_{split}_{k}.jsonl.zst`, the pattern the reader expects.
    """
    from datasets import load_dataset

    written = []
    for chunk in chunks:
        for index in range(files_per_chunk):
            remote = f"{split}/chunk{chunk}/example_{split}_{index}.jsonl.zst"
            stream = load_dataset(dataset, data_files={split: remote}, split=split,
                                  streaming=True)
            target = Path(out_dir) / f"chunk{chunk}" / f"example_{split}_{index}.jsonl.zst"
            write_documents(target, _records_as_documents(stream, f"chunk{chunk}-{index}"))
            written.append(target)
    return written


def _records_as_documents(records, prefix: str) -> Iterator[Document]:
    for line, record in enumerate(records, start=1):
        meta = record.get("meta") or {}
        yield Document(id=f"{prefix}:{line}", text=record.get("text", ""),
                       set_name=meta.get("redpajama_set_name", ""),
                       source_detail=meta.get("source_detail", ""))
