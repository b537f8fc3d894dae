"""Tokenizer training and per-shard tokenization.

A shard's tokens are stored as one flat `.npy` array (memory-mapped by packing), and its document
table goes to the `meta` sidecar (`attributes/meta/{shard}.parquet`): id, source, lengths and the
token offset, so that selection never needs a second pass over the text.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from selectlab.shards import (
    Document,
    ReadReport,
    atomic_path,
    iter_documents,
    sha256_file,
    write_json,
)

EOS_TOKEN = "<|endoftext|>"
PAD_TOKEN = "<|pad|>"
META_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("set_name", pa.string()),
    ("source_detail", pa.string()),
    ("n_chars", pa.int64()),
    ("n_tokens", pa.int64()),
    ("token_offset", pa.int64()),
])


def train_bpe_tokenizer(texts: Iterable[str], vocab_size: int, out_dir: str | Path):
    """Train a byte-level BPE tokenizer and save it as a Hugging Face tokenizer directory."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS_TOKEN, PAD_TOKEN],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token=EOS_TOKEN, bos_token=EOS_TOKEN, pad_token=PAD_TOKEN
    )
    wrapped.save_pretrained(str(out_dir))
    return wrapped


def copy_pretrained_tokenizer(source_dir: str | Path, out_dir: str | Path) -> None:
    """Copy a pretrained tokenizer (e.g. Llama-2's) so every run reads `results/{run}/tokenizer`."""
    tokenizer = load_tokenizer(source_dir)
    if tokenizer.eos_token_id is None:
        raise ValueError(f"tokenizer at {source_dir} has no EOS token; packing needs one")
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    tokenizer.save_pretrained(str(out_dir))


def load_tokenizer(path: str | Path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16) if vocab_size <= 1 << 16 else np.dtype(np.uint32)


def encode_texts(tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids without special tokens, through the fast backend's batched (threaded) encoder."""
    encodings = tokenizer.backend_tokenizer.encode_batch(texts, add_special_tokens=False)
    return [encoding.ids for encoding in encodings]


def batched(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def sha256_files(paths: Iterable[str | Path]) -> dict[str, str]:
    return {str(path): sha256_file(path) for path in paths}


def tokenize_shard(
    inputs: list[str | Path],
    tokenizer_dir: str | Path,
    shard: str,
    out_tokens: str | Path,
    out_meta: str | Path,
    out_report: str | Path,
    out_quarantine: str | Path,
    *,
    max_chars: int,
    id_root: str | Path | None = None,
    on_damaged_file: str = "stop",
    batch_size: int = 512,
) -> ReadReport:
    """Read one shard through the validating reader and write its tokens, meta sidecar and report.

    This is the first read of every shard, so the damaged-file policy is applied here; later
    readers meet only files this one accepted.

    The token array is assembled in memory: one shard's ids are a few hundred MB at most at full
    scale, and `np.save` needs the final length up front.
    """
    tokenizer = load_tokenizer(tokenizer_dir)
    dtype = token_dtype(len(tokenizer))
    report = ReadReport(shard=shard)
    columns: dict[str, list] = {name: [] for name in META_SCHEMA.names}
    pieces: list[np.ndarray] = []
    offset = 0
    Path(out_quarantine).parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out_quarantine) as quarantine_tmp, open(quarantine_tmp, "w") as quarantine:
        docs = iter_documents(inputs, report, max_chars=max_chars, id_root=id_root,
                              quarantine=quarantine, on_damaged_file=on_damaged_file)
        for batch in batched(docs, batch_size):
            for doc, ids in zip(batch, encode_texts(tokenizer, [d.text for d in batch]),
                                strict=True):
                pieces.append(np.asarray(ids, dtype=dtype))
                _append_meta(columns, doc, len(ids), offset)
                offset += len(ids)
    tokens = np.concatenate(pieces) if pieces else np.zeros(0, dtype=dtype)
    with atomic_path(out_tokens) as tmp:
        with open(tmp, "wb") as handle:
            np.save(handle, tokens)
    with atomic_path(out_meta) as tmp:
        pq.write_table(pa.table(columns, schema=META_SCHEMA), tmp)
    payload = report.to_dict() | {"inputs_sha256": sha256_files(inputs), "tokens": int(offset)}
    write_json(out_report, payload)
    return report


def _append_meta(columns: dict[str, list], doc: Document, n_tokens: int, offset: int) -> None:
    columns["id"].append(doc.id)
    columns["set_name"].append(doc.set_name)
    columns["source_detail"].append(doc.source_detail)
    columns["n_chars"].append(len(doc.text))
    columns["n_tokens"].append(n_tokens)
    columns["token_offset"].append(offset)


def sample_texts(paths: Iterable[str | Path], max_chars: int,
                 reader_max_chars: int) -> Iterator[str]:
    """Texts for tokenizer training, stopping once `max_chars` characters have been yielded."""
    seen = 0
    report = ReadReport(shard="tokenizer-sample")
    for doc in iter_documents(paths, report, max_chars=reader_max_chars):
        if seen >= max_chars:
            return
        seen += len(doc.text)
        yield doc.text
