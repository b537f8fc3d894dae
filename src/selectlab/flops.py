"""Floating-point operations of every job that runs a model, from parameter counts and tokens.

One convention for measured records (each job's metrics file) and for the plan-time estimate:

- A multiply-accumulate is 2 FLOPs. A forward pass costs 2·N per token for the weight products,
  where N counts the weights that multiply activations: every parameter except the input
  embedding table, which is only looked up. The output projection counts once, also when it is
  tied to the input embedding (then it is the same matrix, used once as a product).
- Attention adds 2·n_layer·n_ctx·d_attn per token and forward pass: the query-key scores and the
  value mixing (Kaplan et al., 2020, Table 1), with n_ctx the sequence length the model reads and
  d_attn = heads x head size (the hidden size for every model here).
- Training is forward plus backward, three forward passes: 6·N·D + 6·n_layer·n_ctx·d_attn·D for
  D tokens; inference is one forward pass: 2·N·D + 2·n_layer·n_ctx·d_attn·D.

Meta-rater's own cost analysis (Appendix F, Eq. 3 and 4) counts 6·L·H²·T·|D|·E for training and
2·L·H²·T·|D| for inference (L layers, H hidden size, T·|D| the tokens, E epochs); `metarater_*`
give those so that its Table 2 can be laid out as the paper counts. They are about a twelfth of
6·N·D for a Llama block (whose weights are ~12·H² per layer, 13·H² with a gated MLP).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

TRAIN_PASSES = 3  # forward + backward (the backward pass costs two forwards)
CONVENTION = ("6*N*D + 6*n_layer*n_ctx*d_attn*D (train), 2*N*D + 2*n_layer*n_ctx*d_attn*D "
              "(inference); N = parameters except the input embedding (Kaplan et al. 2020)")


@dataclass(frozen=True)
class ModelShape:
    """What the FLOPs of a transformer depend on."""

    matmul_parameters: int  # N: every weight except the input embedding lookup
    layers: int
    hidden: int  # d_attn
    context: int  # tokens per sequence the model attends over

    def forward_flops_per_token(self) -> float:
        return 2.0 * self.matmul_parameters + 2.0 * self.layers * self.context * self.hidden


def training_flops(shape: ModelShape, tokens: int) -> float:
    """Forward and backward over `tokens` tokens."""
    return TRAIN_PASSES * shape.forward_flops_per_token() * tokens


def inference_flops(shape: ModelShape, tokens: int) -> float:
    """One forward pass over `tokens` tokens (scoring, generating, evaluating)."""
    return shape.forward_flops_per_token() * tokens


def metarater_training_flops(layers: int, hidden: int, tokens: int, epochs: int = 1) -> float:
    """Meta-rater Appendix F, Eq. 3: 6 x L x H^2 x T x |D_train| x E (T x |D| = tokens)."""
    return 6.0 * layers * hidden * hidden * tokens * epochs


def metarater_inference_flops(layers: int, hidden: int, tokens: int) -> float:
    """Meta-rater Appendix F, Eq. 4: 2 x L x H^2 x T x |D_infer|."""
    return 2.0 * layers * hidden * hidden * tokens


@dataclass(frozen=True)
class LlamaCounts:
    total: int
    input_embedding: int  # the lookup table alone (0 when tied: the matrix is the projection)
    per_layer: int

    @property
    def matmul(self) -> int:
        """N of the convention: every parameter but the input lookup table."""
        return self.total - self.input_embedding


def llama_counts(hidden: int, layers: int, heads: int, kv_heads: int, mlp_width: int,
                 vocab: int, tied: bool) -> LlamaCounts:
    """Parameters of a Llama decoder (the `LlamaForCausalLM` the pretraining builds): per layer
    the q and o projections (H x H), k and v (H x kv_heads x head size), the gated MLP (3 x H x
    MLP width) and two RMSNorm weights; the embeddings; the final norm."""
    head_dim = hidden // heads
    attention = 2 * hidden * hidden + 2 * hidden * kv_heads * head_dim
    per_layer = attention + 3 * hidden * mlp_width + 2 * hidden
    embedding = vocab * hidden
    total = embedding * (1 if tied else 2) + layers * per_layer + hidden
    # Tied: the one matrix is the output projection; nothing is left for a free lookup table.
    return LlamaCounts(total=total, input_embedding=0 if tied else embedding,
                       per_layer=per_layer)


def preset_shape(preset, vocab: int, context: int) -> ModelShape:
    """The shape of a `train.model.ModelPreset` (or its dict) at a vocabulary and context."""
    from selectlab.train.model import ModelPreset

    if isinstance(preset, dict):
        preset = ModelPreset.from_dict(preset)
    counts = llama_counts(preset.hidden_size, preset.num_layers, preset.num_heads,
                          preset.num_kv_heads or preset.num_heads, preset.mlp_width(), vocab,
                          preset.tie_embeddings)
    return ModelShape(counts.matmul, preset.num_layers, preset.hidden_size, context)


def module_shape(model, context: int) -> ModelShape:
    """The shape of a loaded transformers model (decoder or encoder), counted from its weights.

    The input embedding table is left out unless the output projection shares it."""
    total = sum(p.numel() for p in model.parameters())
    embedding = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    lookup = 0
    if embedding is not None:
        output = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
        shared = output is not None and output.weight is embedding.weight
        lookup = 0 if shared else embedding.weight.numel()
    config = model.config
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", 0)
    hidden = getattr(config, "hidden_size", None) or getattr(config, "n_embd", 0)
    return ModelShape(int(total - lookup), int(layers), int(hidden), int(context))


def config_shape(config, context: int) -> ModelShape:
    """The shape of a decoder LM from its transformers config alone (a model served by vLLM, or
    one not loaded in this process), counted as a Llama-style decoder (Qwen2's few attention
    biases are left out)."""
    heads = config.num_attention_heads
    counts = llama_counts(config.hidden_size, config.num_hidden_layers, heads,
                          getattr(config, "num_key_value_heads", None) or heads,
                          config.intermediate_size, config.vocab_size,
                          bool(getattr(config, "tie_word_embeddings", False)))
    return ModelShape(counts.matmul, config.num_hidden_layers, config.hidden_size, context)


def combined_shape(shapes: list[ModelShape]) -> ModelShape | None:
    """Several models reading the same tokens (e.g. two public classifiers of one family) as one:
    weights and attention layers add up (the hidden sizes must agree for the attention term)."""
    if not shapes:
        return None
    if len({s.hidden for s in shapes}) > 1:
        raise ValueError("models of different hidden sizes cannot be combined into one shape")
    return ModelShape(sum(s.matmul_parameters for s in shapes), sum(s.layers for s in shapes),
                      shapes[0].hidden, max(s.context for s in shapes))


def cost_record(kind: str, flops: float, *, seconds: float, gpus: int, device: str,
                shape: ModelShape | None = None, tokens: int = 0, **facts) -> dict:
    """The `cost` entry of a job's metrics file: what ran, how much, how long, on what.

    `kind` is train or inference (the formula used); GPU-hours are wall time x GPUs and only
    for jobs that ran on GPUs (a CPU job reports its wall hours)."""
    gpu_hours = seconds * gpus / 3600.0 if gpus and device.startswith("cuda") else 0.0
    record = {"kind": kind, "flops": float(flops), "tokens": int(tokens),
              "seconds": round(float(seconds), 3), "gpus": int(gpus) if gpu_hours else 0,
              "device": device, "gpu_hours": gpu_hours,
              "wall_hours": float(seconds) / 3600.0, "convention": CONVENTION}
    if shape is not None:
        record["shape"] = asdict(shape)
        record["metarater_flops"] = (
            metarater_training_flops(shape.layers, shape.hidden, tokens) if kind == "train"
            else metarater_inference_flops(shape.layers, shape.hidden, tokens))
    return record | facts


def chunked_tokens(reader, texts) -> list[int]:
    """Per text, the tokens an encoder reads in chunks of its window: every content token plus
    the special tokens once per chunk (`reader`: a rater backbone or classifier, with tokenizer,
    prefix, suffix and content_size)."""
    lengths = [len(ids) for ids in reader.tokenizer(list(texts), add_special_tokens=False,
                                                    verbose=False)["input_ids"]]
    specials = len(reader.prefix) + len(reader.suffix)
    return [n + -(-n // reader.content_size) * specials for n in lengths]


class ForwardTokens:
    """Counts the tokens an lm-eval `HFLM` feeds its model: wraps its `_model_call` (one padded
    batch per call), so ICL's FLOPs come from the tokens actually processed."""

    def __init__(self, lm):
        self.tokens = 0
        call = lm._model_call

        def counted(inputs, *args, **kwargs):
            self.tokens += int(inputs.numel())
            return call(inputs, *args, **kwargs)

        lm._model_call = counted

