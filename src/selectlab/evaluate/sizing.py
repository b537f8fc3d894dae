"""Wall time and memory of an evaluation job, from its model's size and the tokens it scores.

A forward pass costs 2 x parameters FLOPs a token. Throughputs are effective rates, not peaks:
an A100-class GPU at roughly a third of its 312 TFLOP/s bf16 peak and at 15 of its 19.5 TFLOP/s
in fp32 (torch does not use TF32 for matmuls by default), the job's CPU cores at 20 GFLOP/s.
The time is doubled for safety, with a quarter hour for start, model load and tokenisation; it
is never under half an hour, longer than the slurm profile's 10-minute pre-emption warning
(which would otherwise arrive as the job starts), and never over two days: a longer perplexity
job resumes across the profile's retries (evaluate/progress.py). Memory holds the weights loaded
in fp32 before they move to the device, one split's token streams (int64) and a 4 GB base.
"""

from __future__ import annotations

import math

from selectlab.train.resolve import model_shape

GPU_FLOPS = {"float32": 15e12, "bfloat16": 100e12, "float16": 100e12}
CPU_FLOPS = 20e9
SAFETY = 2.0
OVERHEAD_MINUTES = 15
MIN_RUNTIME = 30
MAX_RUNTIME = 2880
BASE_MEM_MB = 4000
SPLITS = 2  # validation and test
# SlimPajama documents average roughly a thousand Llama tokens (Meta-rater Appendix A: most are
# longer than 512 tokens, 95% shorter than 4,096).
TOKENS_PER_DOCUMENT = 1000
# lm-eval at full scale: per task about 10,000 documents (HellaSwag's 10,042 is QuRating's
# largest; MMLU's 14,042 are split over 57 subtasks), 4 choices, 150 tokens a shot or question.
DOCUMENTS_PER_TASK = 10_000
CHOICES = 4
TOKENS_PER_SHOT = 150
LOCAL_TASK_TOKENS = 200  # an offline task item: a ~100-word context and its choices


def heldout_tokens(config: dict) -> int:
    """Tokens of both held-out splits, every source: SlimPajama's per-split budget, or the
    embedded corpus's documents at a SlimPajama document's length."""
    corpus = config["corpus"]
    if corpus["mode"] == "slimpajama":
        return SPLITS * int(corpus["slimpajama"]["heldout_tokens_per_split"])
    documents = sum(int(n) for n in corpus["embedded"]["heldout_docs_per_source"].values())
    return len(corpus["set_names"]) * documents * TOKENS_PER_DOCUMENT


def perplexity_tokens(config: dict) -> int:
    """Tokens a perplexity job scores (both splits, every source), at most its per-source cap."""
    cap = config["evaluation"]["perplexity"].get("max_tokens_per_source")
    if cap:
        return min(SPLITS * len(config["corpus"]["set_names"]) * int(cap), heldout_tokens(config))
    return heldout_tokens(config)


def icl_tokens(config: dict) -> int:
    """Tokens lm-eval feeds the model (every choice of every document, with its shots)."""
    icl = config["evaluation"]["icl"]
    if icl["tasks"] == "local":
        local = icl.get("local_tasks", {})
        items = (int(local.get("items_per_source", 100)) * len(config["corpus"]["set_names"])
                 * len(local.get("kinds", ["continuation", "cloze"])))
        return items * int(local.get("n_choices", CHOICES)) * LOCAL_TASK_TOKENS
    documents = min(DOCUMENTS_PER_TASK, icl.get("limit") or DOCUMENTS_PER_TASK)
    return sum(documents * CHOICES * (int(task["shots"]) + 1) * TOKENS_PER_SHOT
               for task in icl["tasks"])


def runtime_minutes(parameters: int, tokens: int, gpus: int, dtype: str) -> int:
    rate = GPU_FLOPS.get(dtype, GPU_FLOPS["float32"]) if gpus else CPU_FLOPS
    compute = 2 * parameters * tokens / rate / 60
    return min(MAX_RUNTIME, max(MIN_RUNTIME, math.ceil(OVERHEAD_MINUTES + SAFETY * compute)))


def eval_size(config: dict, variant: str, kind: str) -> dict:
    """`runtime` (minutes) and `mem_mb` of a `perplexity` or `icl` job on `variant`'s model."""
    parameters = model_shape(config, variant).parameters()
    gpus = int(config["evaluation"].get("gpu", 0))
    section = config["evaluation"][kind]
    tokens = perplexity_tokens(config) if kind == "perplexity" else icl_tokens(config)
    streams = 8 * tokens // SPLITS if kind == "perplexity" else 0  # one split's at a time
    memory = BASE_MEM_MB + (4 * parameters + streams) // 2**20
    return {"runtime": runtime_minutes(parameters, tokens, gpus, section.get("dtype", "float32")),
            "mem_mb": int(memory)}
