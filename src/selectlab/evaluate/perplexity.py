"""Per-source held-out perplexity of a trained causal language model.

For every split and every source (`Document.set_name`), the held-out documents are tokenized in
reader order, each is followed by EOS, and one EOS is put in front of the whole stream so that the
first token of the first document is predicted too. The stream is scored in consecutive,
non-overlapping blocks of `seq_len` *predicted* tokens: block k feeds the model
`stream[k*L : k*L+L]` and scores the next-token predictions `stream[k*L+1 : k*L+L+1]`. Every token
after the leading EOS is therefore scored exactly once (the last, shorter block included), and the
model never sees more than `seq_len` tokens at a time, the context length it was trained with.
"""

from __future__ import annotations

import logging
import math
import os
from array import array
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from pathlib import Path

import numpy as np

from selectlab.evaluate.progress import Progress, fingerprint
from selectlab.shards import ReadReport, iter_documents
from selectlab.train.preemption import Preempted

log = logging.getLogger(__name__)

# Canonical torch dtype names, with the short spellings configs tend to use.
DTYPE_NAMES = {
    "float32": "float32", "fp32": "float32", "float": "float32",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float16": "float16", "fp16": "float16", "half": "float16",
}
TOKENIZE_CHUNK_DOCS = 256  # documents per tokenizer call: bounds memory, keeps batching fast
SAVE_EVERY_BATCHES = 50  # progress is saved this often within a source (and after each source)


def canonical_dtype(name: str) -> str:
    try:
        return DTYPE_NAMES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; use one of {sorted(DTYPE_NAMES)}") from None


def extend_stream(
    stream: MutableSequence[int], documents_tokens: Iterable[Sequence[int]], eos_id: int,
    limit: int | None,
) -> None:
    """Append each document and its EOS until `stream` holds `limit` tokens (cut there)."""
    for tokens in documents_tokens:
        if limit is not None and len(stream) >= limit:
            break
        stream.extend(tokens)
        stream.append(eos_id)
    if limit is not None:
        del stream[limit:]


def token_stream(
    documents_tokens: Iterable[Sequence[int]], eos_id: int, max_targets: int | None = None
) -> list[int]:
    """`[EOS] + doc_1 + [EOS] + doc_2 + [EOS] + ...`, cut so at most `max_targets` tokens follow
    the leading EOS (the tokens that will be scored)."""
    stream = [eos_id]
    limit = None if max_targets is None else max_targets + 1
    extend_stream(stream, documents_tokens, eos_id, limit)
    return stream


def cut_windows(stream: Sequence[int], seq_len: int) -> list[Sequence[int]]:
    """Blocks of at most `seq_len + 1` tokens, overlapping by one: `w[:-1]` is the model input and
    `w[1:]` the targets. Targets of consecutive blocks tile `stream[1:]` exactly. Slices of a
    numpy stream are views, so cutting costs no memory."""
    if seq_len < 1:
        raise ValueError("seq_len must be positive")
    return [stream[start:start + seq_len + 1] for start in range(0, len(stream) - 1, seq_len)]


def _batches(windows: Sequence[Sequence[int]], size: int) -> Iterator[Sequence[Sequence[int]]]:
    for start in range(0, len(windows), size):
        yield windows[start:start + size]


def batch_nll(
    model, windows: Sequence[Sequence[int]], *, batch_size: int = 8, device: str = "cpu"
) -> Iterator[tuple[float, int, int]]:
    """Per batch of `windows`: summed next-token NLL (nats), scored targets, windows in it.

    Short windows are right-padded; padded positions get target -100 and are ignored. With a
    causal mask, right padding cannot change the scores of the real positions. Log-softmax runs in
    float32 whatever the model's dtype, so bf16 models do not lose precision in the sum.
    """
    import torch
    import torch.nn.functional as F

    model.eval()
    with torch.inference_mode():
        for batch in _batches(windows, batch_size):
            width = max(len(w) for w in batch) - 1
            inputs = torch.zeros((len(batch), width), dtype=torch.long)
            targets = torch.full((len(batch), width), -100, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, window in enumerate(batch):
                n = len(window) - 1
                ids = torch.as_tensor(np.asarray(window, dtype=np.int64))
                inputs[row, :n] = ids[:-1]
                targets[row, :n] = ids[1:]
                mask[row, :n] = 1
            logits = model(input_ids=inputs.to(device), attention_mask=mask.to(device)).logits
            nll = F.cross_entropy(
                logits.float().reshape(-1, logits.shape[-1]),
                targets.to(device).reshape(-1),
                ignore_index=-100,
                reduction="sum",
            )
            yield float(nll), int((targets != -100).sum()), len(batch)


def model_nll_on_windows(
    model, windows: Sequence[Sequence[int]], *, batch_size: int = 8, device: str = "cpu"
) -> tuple[float, int]:
    """Summed next-token NLL (nats) over all targets of `windows`, and the number of targets."""
    total_nll, total_targets = 0.0, 0
    for nll, targets, _ in batch_nll(model, windows, batch_size=batch_size, device=device):
        total_nll += nll
        total_targets += targets
    return total_nll, total_targets


def summarize(nll_sum: float, tokens: int) -> dict:
    """Mean NLL and perplexity; null (not NaN, which JSON lacks) when nothing was scored."""
    if tokens == 0:
        return {"nll": None, "ppl": None, "tokens": 0}
    nll = nll_sum / tokens
    return {"nll": nll, "ppl": math.exp(nll), "tokens": tokens}


def tokenize(tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids per text, without special tokens (EOS placement is the stream's job)."""
    # verbose=False: documents longer than model_max_length are expected here.
    return tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]


def heldout_streams(path: Path, tokenizer, max_targets: int | None) -> dict[str, np.ndarray]:
    """The token stream of every source in one held-out file, read in a single streaming pass.

    Texts wait in a per-source buffer and are tokenized in chunks. Once a source holds its
    `max_targets` scored tokens, its later documents are skipped untokenized, so a capped
    evaluation of a large split costs time and memory in proportion to the cap.
    """
    eos_id = tokenizer.eos_token_id
    if eos_id is None:
        raise ValueError("the tokenizer has no eos_token; the model directory is incomplete")
    limit = None if max_targets is None else max_targets + 1
    # Typed arrays, not lists of Python ints: 8 bytes a token instead of ~36.
    streams: dict[str, array] = {}
    pending: dict[str, list[str]] = {}

    def flush(set_name: str) -> None:
        texts = pending.pop(set_name, [])
        if texts:
            extend_stream(streams[set_name], tokenize(tokenizer, texts), eos_id, limit)

    for doc in iter_documents([path], ReadReport(shard=str(path))):
        stream = streams.setdefault(doc.set_name, array("l", [eos_id]))
        if limit is not None and len(stream) >= limit:
            continue
        pending.setdefault(doc.set_name, []).append(doc.text)
        if len(pending[doc.set_name]) >= TOKENIZE_CHUNK_DOCS:
            flush(doc.set_name)
    for set_name in list(pending):
        flush(set_name)
    return {name: np.frombuffer(stream, dtype=np.int64) for name, stream in streams.items()}


def load_model_and_tokenizer(model_dir: str | Path, *, device: str, dtype: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        str(model_dir), dtype=getattr(torch, canonical_dtype(dtype)), local_files_only=True
    )
    return model.to(device).eval(), tokenizer


def score_source(model, windows: Sequence[Sequence[int]], entry: dict, *, batch_size: int,
                 device: str, on_progress) -> dict:
    """Score `windows` from `entry["windows"]` on, adding to the entry's sums; after every
    `SAVE_EVERY_BATCHES` batches `on_progress(entry)` may save it (and stop the job)."""
    entry = dict(entry)
    for batches, (nll, targets, count) in enumerate(
            batch_nll(model, windows[entry["windows"]:], batch_size=batch_size, device=device),
            start=1):
        entry["nll"] += nll
        entry["tokens"] += targets
        entry["windows"] += count
        if batches % SAVE_EVERY_BATCHES == 0:
            on_progress(entry)
    return entry | {"finished": True}


def per_source_perplexity(
    model_dir: str | Path,
    heldout: dict[str, Path],
    *,
    seq_len: int,
    batch_size: int,
    max_tokens_per_source: int | None,
    device: str,
    dtype: str,
    progress_path: Path | None = None,
    stop=None,
) -> dict:
    """`{split: {set_name: {"nll", "ppl", "tokens"}, "all": {...}}}` for every held-out split.

    `nll` is the mean next-token NLL in nats per token, `ppl = exp(nll)`, `tokens` the number of
    scored tokens (document tokens plus one EOS per document, capped at `max_tokens_per_source`
    per source and split, taking documents in reader order). `all` weights sources by tokens.

    With `progress_path`, scoring resumes from what an interrupted run recorded there
    (evaluate/progress.py); when `stop` is requested (the pre-emption signal) progress is saved
    and `Preempted` raised.
    """
    settings = {"seq_len": seq_len, "max_tokens_per_source": max_tokens_per_source,
                "dtype": canonical_dtype(dtype)}
    progress = Progress(progress_path, fingerprint(Path(model_dir), heldout, settings))
    model, tokenizer = load_model_and_tokenizer(model_dir, device=device, dtype=dtype)
    results: dict[str, dict] = {}
    for split, path in heldout.items():
        streams = heldout_streams(Path(path), tokenizer, max_tokens_per_source)
        split_result: dict[str, dict] = {}
        total_nll, total_tokens = 0.0, 0
        for set_name, stream in sorted(streams.items()):
            if set_name == "all":
                raise ValueError(f"{path}: a source named 'all' clashes with the total")

            def on_progress(entry, split=split, set_name=set_name):
                progress.update(split, set_name, entry)
                progress.save()
                if stop is not None and stop.requested:
                    raise Preempted(f"pre-empted while scoring {split}/{set_name}: progress "
                                    f"saved in {progress_path}; running the job again resumes")

            entry = progress.get(split, set_name)
            if not entry["finished"]:
                entry = score_source(model, cut_windows(stream, seq_len), entry,
                                     batch_size=batch_size, device=device,
                                     on_progress=on_progress)
                on_progress(entry)
            split_result[set_name] = summarize(entry["nll"], entry["tokens"])
            total_nll += entry["nll"]
            total_tokens += entry["tokens"]
            log.info("%s/%s: %d tokens, ppl %.3f", split, set_name, entry["tokens"],
                     split_result[set_name]["ppl"])
        split_result["all"] = summarize(total_nll, total_tokens)
        results[split] = split_result
    return results
