"""Resolving the validated `instruct:` config section into what each instruction-following job
needs: its params, inputs and size. Plain dict functions (no torch), used by rules/instruct.smk
(params as JSON `--params`, so a settings change reruns exactly the affected jobs) and by hand
alike; every path comes from selectlab.layout.

Which variants are fine-tuned follows from `instruct.comparisons`: each comparison is one paper
figure (QuRating Figure 3: against uniform; DataMan Figure 2: against educational value tau=2)
and names its reference variant and the variants judged against it.
"""

from __future__ import annotations

from selectlab import layout
from selectlab.plugins.rows import variant_label
from selectlab.resources import job_shape, schema_default
from selectlab.train.resolve import seq_len

REFERENCE_JUDGE_NOTE = ("Instruction-following win rates judged by the REFERENCE-BASED judge "
                        "(word overlap with the reference answer, offline default), not an LLM.")
# The jobs sized by their own `instruct.<stage>.resources` (instruct_data and winrate have a
# fixed size: config/schema/resources.schema.yaml).
SIZED_STAGES = ("sft", "generate", "judge")
# Where the corpus readers are told to find the resources the offline pairs come from.
RESOURCE_KEYS = {"web": ("gcide_path", "man_root"), "code": ("stdlib_dir",)}


def configured(config: dict) -> bool:
    return bool(config.get("instruct", {}).get("comparisons"))


def comparisons(config: dict) -> dict:
    """Each comparison, checked: its reference and variants are configured variants."""
    found = config.get("instruct", {}).get("comparisons", {})
    for name, spec in found.items():
        for variant in [spec["reference"], *spec["variants"]]:
            if variant not in config["variants"]:
                raise ValueError(f"instruct.comparisons.{name}: no variant {variant!r}")
        if spec["reference"] in spec["variants"]:
            raise ValueError(f"instruct.comparisons.{name}: {spec['reference']!r} is both the "
                             "reference and a variant")
    return found


def fine_tuned_variants(config: dict) -> list[str]:
    """Every variant a comparison needs answers from, in configuration order."""
    needed = {v for spec in comparisons(config).values() for v in [spec["reference"],
                                                                     *spec["variants"]]}
    return [name for name in config["variants"] if name in needed]


def max_prompt_tokens(config: dict) -> int:
    """Room left for the prompt once an answer of `max_new_tokens` fits the context."""
    section = config["instruct"]
    room = section["sft"]["max_seq_len"] - section["generate"]["max_new_tokens"]
    if room < 8:
        raise ValueError(f"instruct.sft.max_seq_len {section['sft']['max_seq_len']} leaves no "
                         f"room for prompts next to generate.max_new_tokens "
                         f"{section['generate']['max_new_tokens']}")
    return room


def reader_resources(config: dict) -> dict:
    """The corpus readers' own locations of GCIDE, the stdlib and the man pages, if set."""
    sources = config["corpus"].get("embedded", {}).get("sources", {})
    return {key: sources[source][key] for source, keys in RESOURCE_KEYS.items()
            for key in keys if key in sources.get(source, {})}


def resolve_data(config: dict) -> dict:
    """What `selectlab instruct data` needs."""
    data = dict(config["instruct"]["data"])
    resolved = {"kind": data.pop("kind"), "seed": int(data.pop("seed", config["seed"])),
                "train_pairs": data.pop("train_pairs"),
                "eval_instructions": data.pop("eval_instructions"),
                "chat_template": config["instruct"]["chat_template"],
                "max_prompt_tokens": max_prompt_tokens(config)}
    if resolved["kind"] == "sharegpt":
        resolved["path"] = data.pop("path")
    else:
        resolved["mix"] = data.pop("mix")
        resolved["resources"] = reader_resources(config)
        resolved["limits"] = data  # min_words, max_response_chars, functions_per_module
    return resolved


def resolve_sft(config: dict, variant: str) -> dict:
    """What `selectlab instruct sft` needs for one variant: the same for every variant."""
    sft = {k: v for k, v in config["instruct"]["sft"].items() if k != "resources"}
    context = seq_len(config, variant)
    if sft["max_seq_len"] > context:
        raise ValueError(f"instruct.sft.max_seq_len {sft['max_seq_len']} exceeds the context "
                         f"{context} variant {variant!r} was pretrained with")
    sft.setdefault("seed", int(config["seed"]))
    return {"template": config["instruct"]["chat_template"], "settings": sft}


def resolve_generate(config: dict) -> dict:
    section = config["instruct"]["generate"]
    settings = {k: v for k, v in section.items()
                if k not in ("backend", "resources", "gpu_memory_utilization", "enforce_eager")}
    settings.setdefault("seed", int(config["seed"]))
    engine = {k: section[k] for k in ("gpu_memory_utilization", "enforce_eager") if k in section}
    return {"backend": section.get("backend", "transformers"), "settings": settings,
            "template": config["instruct"]["chat_template"], "engine": engine}


def resolve_judge(config: dict, comparison: str) -> dict:
    judge = config["instruct"]["judge"]
    spec = comparisons(config)[comparison]
    return {"comparison": comparison, "reference": spec["reference"],
            "variants": list(spec["variants"]), "backend": judge["backend"],
            "seed": int(judge.get("seed", config["seed"])),
            "settings": {"max_tokens": judge.get("max_new_tokens", 16),
                         "temperature": judge.get("temperature", 0.0)},
            "max_attempts": judge.get("max_attempts", 3)}


def judge_notes(config: dict) -> list[str]:
    if configured(config) and config["instruct"]["judge"]["backend"]["kind"] == "reference":
        return [REFERENCE_JUDGE_NOTE]
    return []


def resolve_winrate(config: dict, notes: list[str]) -> dict:
    """What the win-rate table and figure need: comparisons, labels, bootstrap, caveats."""
    section = config["instruct"].get("winrate", {})
    labels = {name: variant_label(config, name) for name in config["variants"]}
    return {"comparisons": comparisons(config), "labels": labels,
            "bootstrap_samples": section.get("bootstrap_samples", 1000),
            "seed": int(section.get("seed", config["seed"])),
            "notes": [*judge_notes(config), *notes]}


def job_shape_of(config: dict, stage: str) -> dict:
    """The size of a `sft`, `generate` or `judge` job (the same for each of its jobs):
    `instruct.<stage>.resources` over the schema's default."""
    section = config["instruct"][stage]
    return job_shape(schema_default("instruct.schema.yaml", "$defs", "resources"),
                     section.get("resources"))


def corpus_inputs(config: dict, shard_files: dict[str, list[str]], root: str,
                  splits: list[str]) -> list[str]:
    """The corpus the offline instruction set must stay off: training shards and held-out
    splits (nothing for a ShareGPT dump, which the corpus cannot contain)."""
    if config["instruct"]["data"]["kind"] != "embedded":
        return []
    shards = [path for files in shard_files.values() for path in files]
    return shards + [layout.heldout(root, split) for split in splits]


def comparison_answers(config: dict, root: str, comparison: str) -> list[str]:
    """The answers one judge_answers job reads: the reference variant's first."""
    spec = comparisons(config)[comparison]
    return [layout.answers(root, variant) for variant in [spec["reference"], *spec["variants"]]]


def archive_files(config: dict, root: str) -> list[str]:
    """What a reader of the win rates needs besides the table and figure: the split, the
    judgments and their summaries, the SFT logs."""
    if not configured(config):
        return []
    names = list(comparisons(config))
    return ([layout.instruct_split(root)]
            + [layout.answer_judgments(root, name) for name in names]
            + [layout.answer_judge_summary(root, name) for name in names]
            + [layout.sft_log(root, variant) for variant in fine_tuned_variants(config)])


def cost_inputs(config: dict, root: str) -> dict[str, list[str]]:
    """What the cost tables read of instruction following: each fine-tuned variant's SFT model
    (its card holds the fine-tuning's cost) and its answers' metrics (the generation's)."""
    variants = fine_tuned_variants(config) if configured(config) else []
    return {"sft": [layout.sft_model(root, variant) for variant in variants],
            "generation": [layout.answers_metrics(root, variant) for variant in variants]}


def answer_judging_cost_note(config: dict) -> list[str]:
    """The cost tables' word on answer judging, which records no FLOPs: the reference judge runs
    no model, an API judge is paid per token (USD in the judgments' summaries) and a local one's
    tokens and time are in those summaries too."""
    if not configured(config):
        return []
    backend = config["instruct"]["judge"]["backend"]
    where = "instruct/judgments/*/summary.csv"  # no braces: rules pass this as a param
    if backend["kind"] == "reference":
        cost = "the reference-based judge runs no model"
    elif backend["kind"] == "openai":
        cost = (f"the API judge is paid per token: its tokens and `cost_usd` are in {where} "
                "(at instruct.judge.backend.price_per_1k_tokens; 0 USD when no price is set)")
    else:
        cost = f"its tokens and query time are in {where}"
    return [f"SFT: fine-tuning (training FLOPs) and answer generation (inference FLOPs) of "
            f"every instruction-following variant. Answer judging ({backend['kind']} judge "
            f"{backend.get('model', '')}) is not counted in FLOPs: {cost}."]


def container_key(config: dict, stage: str) -> str:
    """vLLM jobs run in the vllm image, the rest in the training image."""
    section = config["instruct"][stage]
    kind = section["backend"] if stage == "generate" else section["backend"]["kind"]
    return "vllm" if kind == "vllm" else "train"
