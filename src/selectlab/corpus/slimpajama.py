"""Full-scale corpus: SlimPajama files on disk, read through the same validating reader.

SlimPajama ships as `{split}/chunk{1..10}/example_{split}_{k}.jsonl.zst` with records
`{"text", "meta": {"redpajama_set_name"}}`. Training files are consumed in place (grouped
into shards by `selectlab.corpus.resolve.slimpajama_shard_groups`); the validation and test
splits are sampled per source into `corpus/heldout/{split}.jsonl.zst` so that evaluation reads
the same layout in both corpus modes.
"""

from __future__ import annotations

import glob
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from selectlab.shards import Document, ReadReport, iter_documents, write_documents

SLIMPAJAMA_SOURCES = (
    "RedPajamaCommonCrawl",
    "RedPajamaC4",
    "RedPajamaGithub",
    "RedPajamaWikipedia",
    "RedPajamaBook",
    "RedPajamaArXiv",
    "RedPajamaStackExchange",
)


def sample_heldout(directory: str | Path, pattern: str, docs_per_source: int,
                   max_chars: int, report: ReadReport,
                   on_damaged_file: str = "stop") -> list[Document]:
    """The first `docs_per_source` valid documents of each source, in sorted file order.

    SlimPajama's files are already shuffled, so a prefix is a fair sample and rereading is cheap.
    Stops reading once every source seen so far is full and all seven sources have been met.
    """
    files = sorted(glob.glob(str(Path(directory) / pattern)))
    if not files:
        raise ValueError(f"no files match {pattern!r} under {directory}")
    counts: Counter[str] = Counter()
    chosen: list[Document] = []
    # Ids relative to the split's directory: file names repeat in every chunk directory.
    for doc in iter_documents(files, report, max_chars=max_chars, id_root=directory,
                              on_damaged_file=on_damaged_file):
        if counts[doc.set_name] < docs_per_source:
            counts[doc.set_name] += 1
            chosen.append(doc)
        if len(counts) >= len(SLIMPAJAMA_SOURCES) and min(counts.values()) >= docs_per_source:
            break
    return chosen


def write_heldout(params: dict, out_path: str | Path) -> ReadReport:
    report = ReadReport(shard=str(out_path))
    docs = sample_heldout(params["directory"], params["pattern"], params["docs_per_source"],
                          params["max_doc_chars"], report,
                          params.get("on_damaged_file", "stop"))
    write_documents(out_path, docs)
    return report


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
