"""Resolving the validated `instruct:` config section into what each instruction-following job
needs, and where its files go. Plain dict functions, used by rules/instruct.smk (as JSON
`--params`, so a settings change reruns exactly the affected jobs) and by hand alike.

Which variants are fine-tuned follows from `instruct.comparisons`: each comparison is one paper
figure (QuRating Figure 3: against uniform; DataMan Figure 2: against educational value tau=2)
and names its reference variant and the variants judged against it.
"""

from __future__ import annotations

from selectlab import config as cfg

REFERENCE_JUDGE_NOTE = ("Instruction-following win rates judged by the REFERENCE-BASED judge "
                        "(word overlap with the reference answer, offline default), not an LLM.")
DEFAULT_RESOURCES = {"gpu": 0, "cpus": 1, "mem_mb": 4000, "runtime": 60}
# Where the corpus readers are told to find the resources the offline pairs come from.
RESOURCE_KEYS = {"web": ("gcide_path", "man_root"), "code": ("stdlib_dir",)}

# Paths under results/{run}/ (docs/layout.md).
DATA_DIR = "instruct/data"
SFT_MODEL = "instruct/sft/{variant}/model"
SFT_LOG = "instruct/sft/{variant}/sft_log.csv"
SFT_CHECKPOINTS = "instruct/sft/{variant}/checkpoints"
ANSWERS = "instruct/answers/{variant}.parquet"
JUDGMENTS = "instruct/judgments/{comparison}/judgments.parquet"
JUDGE_SUMMARY = "instruct/judgments/{comparison}/summary.csv"
JUDGE_CACHE = "instruct/judgments/{comparison}/cache.sqlite"
TABLE = "winrate"
FIGURE = "winrate"


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
    context = cfg.resolve_pretrain(config, variant)["settings"]["seq_len"]
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
    labels = {name: v.get("label", name) for name, v in config["variants"].items()}
    return {"comparisons": comparisons(config), "labels": labels,
            "bootstrap_samples": section.get("bootstrap_samples", 1000),
            "seed": int(section.get("seed", config["seed"])),
            "notes": [*judge_notes(config), *notes]}


def resources(config: dict, stage: str) -> dict:
    """gpu, cpus, mem_mb, runtime of a `sft`, `generate` or `judge` job."""
    section = config["instruct"][stage]
    return DEFAULT_RESOURCES | section.get("resources", {})


def container_key(config: dict, stage: str) -> str:
    """vLLM jobs run in the vllm image, the rest in the training image."""
    section = config["instruct"][stage]
    kind = section["backend"] if stage == "generate" else section["backend"]["kind"]
    return "vllm" if kind == "vllm" else "train"
