"""Peak GPU memory of one pretraining process, estimated at plan time (no torch, no GPU).

Parts, in bytes per GPU (P parameters, W processes, T = micro_batch x seq_len tokens, V vocab):

* Model states, 16 bytes a parameter: fp32 weights (4), fp32 gradients (4), AdamW's two fp32
  moments (8), as ZeRO counts them for mixed-precision Adam (Rajbhandari et al. 2020, Sec. 3.1).
  FSDP shards them over W (16P/W); DDP and a single process hold them whole, DDP plus its fp32
  gradient buckets (4P).
* FSDP extras: while gradients accumulate without reduction (more than one micro-step per
  global batch) FSDP2 keeps every parameter's unsharded gradient in fp32 (4P); the root module
  (embeddings, output layer) stays gathered through forward and backward; two decoder layers
  are gathered at a time (current and prefetched) and one layer's fp32 gradients wait for their
  reduce-scatter.
* Autocast (bf16 without FSDP) saves a bf16 copy of every weight for backward (2P).
* Activations saved for backward, per decoder layer and token, counted from the tensors
  transformers' LlamaDecoderLayer saves with SDPA attention (no T x T score matrix) and no
  dropout: `ACTIVATION_BYTES` below, re-measured by tests/unit/test_train_memory.py with
  autograd's saved-tensor hooks. With activation checkpointing only each layer's input is kept
  (`CHECKPOINT_BYTES`), plus one layer's full activations while it is recomputed.
* Logits: bf16 logits, their fp32 copy and log-softmax for the loss, then the fp32 gradient in
  backward: 12 bytes per token and vocabulary entry (16 in fp32).

The sum is raised by 10% for allocator fragmentation, plus 1 GiB for the CUDA context.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1024**3
FRAGMENTATION = 1.10
CUDA_CONTEXT_BYTES = 1 * GIB
# Saved activation bytes per token in one decoder layer: a*h + b*f + c*kv_dim + d, by precision
# regime. "bf16": FSDP's bf16 mixed-precision policy (bf16 residual stream); "autocast": bf16
# matmuls on fp32 weights and residual stream; "fp32": no mixed precision.
ACTIVATION_BYTES = {"bf16": (20, 8, 4, 8), "autocast": (30, 8, 4, 8), "fp32": (32, 16, 8, 8)}
CHECKPOINT_BYTES = {"bf16": 2, "autocast": 4, "fp32": 4}  # per token and hidden unit
LOGIT_BYTES = {"bf16": 12, "autocast": 12, "fp32": 16}  # per token and vocabulary entry


@dataclass(frozen=True)
class Shape:
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    vocab_size: int
    tie_embeddings: bool = False

    @property
    def kv_dim(self) -> int:
        return self.hidden_size // self.num_heads * self.num_kv_heads

    def layer_parameters(self) -> int:
        """q and o (h x h), k and v (h x kv_dim), gate/up/down (3 x h x f), two RMSNorms."""
        h = self.hidden_size
        return 2 * h * h + 2 * h * self.kv_dim + 3 * h * self.intermediate_size + 2 * h

    def root_parameters(self) -> int:
        """Embeddings, output layer (unless tied) and the final norm."""
        embeddings = self.vocab_size * self.hidden_size
        return embeddings * (1 if self.tie_embeddings else 2) + self.hidden_size

    def parameters(self) -> int:
        return self.num_layers * self.layer_parameters() + self.root_parameters()


@dataclass(frozen=True)
class Launch:
    seq_len: int
    micro_batch: int
    world_size: int
    accumulation_steps: int
    fsdp: bool
    activation_checkpointing: bool
    bf16: bool

    @property
    def sharded(self) -> bool:
        return self.fsdp and self.world_size > 1

    @property
    def regime(self) -> str:
        if not self.bf16:
            return "fp32"
        return "bf16" if self.sharded else "autocast"


@dataclass(frozen=True)
class Estimate:
    parts: dict[str, float]

    @property
    def peak_bytes(self) -> float:
        return sum(self.parts.values()) * FRAGMENTATION + CUDA_CONTEXT_BYTES

    def describe(self) -> str:
        listed = ", ".join(f"{name} {value / GIB:.1f}" for name, value in self.parts.items()
                           if value)
        return (f"{self.peak_bytes / GIB:.1f} GiB of GPU memory ({listed} GiB; +10% and "
                "1 GiB CUDA context)")


def model_state_bytes(parameters: int, world_size: int, sharded: bool) -> float:
    return 16 * parameters / (world_size if sharded else 1)


def activation_bytes_per_token(shape: Shape, regime: str) -> int:
    """Saved-for-backward bytes of one decoder layer per token, without checkpointing."""
    a, b, c, d = ACTIVATION_BYTES[regime]
    return a * shape.hidden_size + b * shape.intermediate_size + c * shape.kv_dim + d


def activation_bytes(shape: Shape, launch: Launch) -> float:
    tokens = launch.seq_len * launch.micro_batch
    full_layer = tokens * activation_bytes_per_token(shape, launch.regime)
    if not launch.activation_checkpointing:
        return shape.num_layers * full_layer
    kept = tokens * CHECKPOINT_BYTES[launch.regime] * shape.hidden_size
    return shape.num_layers * kept + full_layer


def estimate(shape: Shape, launch: Launch) -> Estimate:
    p, layer = shape.parameters(), shape.layer_parameters()
    compute_bytes = 4 if launch.regime == "fp32" else 2
    parts = {"model states": model_state_bytes(p, launch.world_size, launch.sharded)}
    if launch.sharded:
        parts["unsharded gradients"] = 4 * p if launch.accumulation_steps > 1 else 0
        parts["gathered parameters"] = (compute_bytes * (shape.root_parameters() + 2 * layer)
                                        + 4 * layer)
    else:
        parts["gradient buckets"] = 4 * p if launch.world_size > 1 else 0
        parts["bf16 weight copies"] = 2 * p if launch.regime == "autocast" else 0
    parts["activations"] = activation_bytes(shape, launch)
    parts["logits"] = (LOGIT_BYTES[launch.regime] * launch.seq_len * launch.micro_batch
                       * shape.vocab_size)
    return Estimate(parts)

