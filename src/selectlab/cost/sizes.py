"""What the plan-time cost estimate reads: one kind of job (`PlannedJob`), the model shapes and
corpus sizes of a configuration (`Sizes`), and the GPU throughput a job is costed at.
"""

from __future__ import annotations

from dataclasses import dataclass

from selectlab.flops import (
    ModelShape,
    inference_flops,
    metarater_inference_flops,
    metarater_training_flops,
    preset_shape,
    training_flops,
)
from selectlab.raters.spec import RANDOM_ENCODER

CHARS_PER_TOKEN = 4  # English text in BPE tokens, for sizes known only in characters
# Models the offline configs run, by name (counted from their public configurations).
KNOWN_MODELS = {
    "minilm": {"parameters": 22_713_216, "layers": 6, "hidden": 384, "vocab": 30_522},
    "smollm2-gguf": {"parameters": 134_515_008, "layers": 30, "hidden": 576, "vocab": 49_152,
                     "tied": True},
}


@dataclass
class PlannedJob:
    """One kind of job: how many, its model, and per job the tokens it trains on and reads."""

    stage: str
    item: str
    job: str
    jobs: int
    shape: ModelShape | None
    train_tokens: float  # per job
    inference_tokens: float  # per job
    gpus: int  # per job (0: CPU)
    gpu_type: str

    def row(self, throughput: dict) -> dict:
        shape = self.shape
        train = training_flops(shape, self.train_tokens) if shape else 0.0
        infer = inference_flops(shape, self.inference_tokens) if shape else 0.0
        metarater = (metarater_training_flops(shape.layers, shape.hidden, self.train_tokens)
                     + metarater_inference_flops(shape.layers, shape.hidden,
                                                 self.inference_tokens)) if shape else 0.0
        hours = 0.0
        if self.gpus and shape:
            hours = (train / sustained_flops(throughput, self.gpu_type, "train")
                     + infer / sustained_flops(throughput, self.gpu_type, "inference")) / 3600
        return {"stage": self.stage, "item": self.item, "job": self.job, "jobs": self.jobs,
                "parameters": shape.matmul_parameters if shape else 0,
                "tokens": self.train_tokens + self.inference_tokens, "flops": train + infer,
                "gpus": self.gpus, "gpu_type": self.gpu_type,
                "total_flops": (train + infer) * self.jobs,
                "total_metarater_flops": metarater * self.jobs, "gpu_hours": hours * self.jobs}


def sustained_flops(throughput: dict, gpu_type: str, kind: str) -> float:
    spec = throughput["gpus"].get(gpu_type)
    if spec is None:
        raise ValueError(f"the throughput file has no GPU type {gpu_type!r}; it lists "
                         f"{sorted(throughput['gpus'])}")
    return float(spec["peak_tflops"]) * 1e12 * float(spec[f"{kind}_utilization"])


class Sizes:
    """The model shapes and corpus sizes a plan reads, from the config."""

    def __init__(self, config: dict):
        self.config = config
        self.cost = config.get("cost") or {}
        self.models = KNOWN_MODELS | dict(self.cost.get("models") or {})

    def shape(self, model: str, context: int) -> ModelShape:
        """A model named by path or offline name; its parameters without the input embedding."""
        if model == RANDOM_ENCODER:
            from selectlab.raters.backbone import RandomEncoderShape

            s = RandomEncoderShape()
            per_layer = 4 * s.hidden_size ** 2 + 2 * s.hidden_size * s.intermediate_size
            return ModelShape(s.num_layers * per_layer, s.num_layers, s.hidden_size, context)
        if model not in self.models:
            raise ValueError(f"cost plan: no size for model {model!r}; give cost.models."
                             f"{model}: {{parameters, layers, hidden, vocab}}")
        spec = self.models[model]
        # A tied table is the output projection too, and so a product (selectlab.flops).
        lookup = 0 if spec.get("tied") else int(spec.get("vocab", 0)) * int(spec.get("hidden", 0))
        return ModelShape(int(spec["parameters"]) - lookup, int(spec.get("layers", 0)),
                          int(spec.get("hidden", 0)), context)

    def vocab(self) -> int:
        tokenizer = self.config["tokenizer"]
        return int(tokenizer.get("vocab_size") or self.cost.get("vocab_size", 32000))

    def preset(self, name: str, context: int) -> ModelShape:
        return preset_shape(self.config["models"]["presets"][name], self.vocab(), context)

    def pool(self) -> tuple[float, float]:
        """(documents, tokens) of the training pool."""
        if "pool_tokens" in self.cost:
            return float(self.cost["pool_documents"]), float(self.cost["pool_tokens"])
        embedded = self.config["corpus"]["embedded"]
        held = sum(embedded["heldout_docs_per_source"].values())
        documents = tokens = 0.0
        for source in embedded["sources"].values():
            count = max(0, source["max_docs"] - held)
            documents += count
            tokens += count * (source["min_chars"] + source["max_chars"]) / 2 / CHARS_PER_TOKEN
        return documents, tokens

    def heldout_tokens(self) -> float:
        """Tokens perplexity evaluation reads (validation + test), at most its per-source cap:
        SlimPajama's per-split token budget, or the embedded held-out documents at the pool's
        mean document length."""
        corpus = self.config["corpus"]
        if corpus["mode"] == "slimpajama":
            sources = len(corpus["set_names"])
            estimate = 2.0 * corpus["slimpajama"]["heldout_tokens_per_split"]
        else:
            documents, tokens = self.pool()
            embedded = corpus["embedded"]
            per_source = embedded["heldout_docs_per_source"]
            sources = len(embedded["sources"])
            held = (per_source["validation"] + per_source["test"]) * sources
            estimate = held * tokens / max(documents, 1.0)
        capped = self.config["evaluation"]["perplexity"].get("max_tokens_per_source")
        return min(estimate, 2 * capped * sources) if capped else estimate

    def icl_tokens(self) -> float:
        """Tokens lm-eval feeds one model over every ICL task (`cost.icl_tokens`; offline: the
        local tasks' items x choices x a window)."""
        if "icl_tokens" in self.cost:
            return float(self.cost["icl_tokens"])
        local = self.config["evaluation"]["icl"].get("local_tasks", {})
        sources = len(self.config["corpus"]["embedded"]["sources"])
        items = local.get("items_per_source", 50) * sources
        return items * len(local.get("kinds", [])) * 4 * self.config["pretrain"]["seq_len"]


def gpu_of(shape: dict, throughput: dict) -> tuple[int, str]:
    """GPUs per node of a job shape (selectlab.resources) and the GPU type it is costed on."""
    return int(shape["gpu"]), str(shape.get("gpu_model") or throughput["default"])
