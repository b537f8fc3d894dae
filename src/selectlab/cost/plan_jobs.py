"""The jobs of a configuration, stage by stage, as `PlannedJob` rows (selectlab.cost.sizes),
which selectlab.cost.plan turns into the estimate's tables.

Token counts per job, by stage (upper bounds where the config gives caps):
- judging: queries x (prompt: the judged text at its cap + the template; answer: the
  configured answer length, 1 token where the judge reads log-probabilities);
- rater training: the judged texts at their cap, read once (frozen backbone) or every epoch
  (fine-tuning), generative DataMan at its max_length;
- annotation: the pool's tokens per shard, capped per document where the family reads a prefix;
- Meta-rater construction: every proxy's budget (training) and perplexity evaluation;
- MATES: per probe one step on a unit and one pass over the reference set; the influence model's
  training; its pass over the pool's units;
- pre-training: the variant's budget; evaluation: held-out perplexity and ICL tokens;
- SFT, per fine-tuned variant: the examples of every step (epochs x whole batches of
  `batch_sequences`) at `max_seq_len` tokens each, and the answers: each evaluation
  instruction's prompt at its cap plus `max_new_tokens` (answer judging has no FLOPs here).
"""

from __future__ import annotations

from selectlab.corpus.pools import FULL, pool_spec
from selectlab.cost.roles import (
    ANNOTATION,
    CONSTRUCTION,
    EVALUATION,
    JUDGING,
    MATES,
    PRETRAINING,
    RATER_TRAINING,
    SFT,
    proxies_trained,
)
from selectlab.cost.sizes import PlannedJob, Sizes, gpu_of
from selectlab.flops import ModelShape, combined_shape

CHARS_PER_TOKEN = 4


def _job(stage, item, job, jobs, shape: ModelShape | None, *, train=0.0, infer=0.0, gpus=0,
         gpu_type=""):
    """`train` and `infer`: tokens one job trains on and reads (forward only)."""
    return PlannedJob(stage, item, job, int(jobs), shape, float(train), float(infer),
                      gpus if shape is not None else 0, gpu_type)


def template_tokens(protocol: str, criterion: str | None = None) -> int:
    from selectlab.judge import dataman, fineweb_edu, prrc, qurating, wanjuan

    text = {"qurating": lambda: qurating.criterion_template(criterion),
            "dataman": lambda: dataman.TEMPLATE, "fineweb_edu": lambda: fineweb_edu.TEMPLATE,
            "prrc": lambda: prrc.dimension_template(criterion),
            "wanjuan": lambda: wanjuan.question_template(criterion)}[protocol]()
    return len(text) // CHARS_PER_TOKEN


def protocol_tokens(protocol: str, settings: dict, logprobs: bool) -> tuple[int, float]:
    """(queries, tokens over all queries) of one judge protocol."""
    from selectlab.judge import prrc, wanjuan

    if protocol == "qurating":
        criteria = settings["criteria"]
        queries = settings["pairs"] * len(criteria) * 2  # both orders
        answer = 1 if logprobs else 4 * settings.get("samples_without_logprobs", 1)
        prompt = 2 * settings["snippet_tokens"][1] + template_tokens(protocol, criteria[0])
        return queries, queries * (prompt + answer)
    criteria = {"prrc": prrc.DIMENSIONS, "wanjuan": settings.get("criteria", wanjuan.CRITERIA)}
    names = list(criteria.get(protocol, [None]))
    queries = settings["documents"] * len(names)
    prompt = settings["max_text_tokens"] + template_tokens(protocol, names[0])
    return queries, queries * (prompt + settings["max_new_tokens"])


def judge_jobs(config: dict, sizes: Sizes, throughput: dict) -> list[PlannedJob]:
    from selectlab.judge.resolve import configured_protocols, is_simulated, job_shape_of_judge

    backend = config["judge"]["backend"]
    gpus, gpu_type = gpu_of(job_shape_of_judge(config), throughput)
    shape = None if is_simulated(config) else sizes.shape(
        backend["model"], int(backend.get("max_model_len", 4096)))
    jobs = []
    for protocol in configured_protocols(config):
        queries, tokens = protocol_tokens(protocol, config["judge"]["protocols"][protocol],
                                          int(backend.get("top_logprobs", 0)) > 0)
        jobs.append(_job(JUDGING, protocol, f"judge {protocol} ({queries:,} queries)", 1, shape,
                         infer=tokens, gpus=gpus, gpu_type=gpu_type))
    return jobs


def rater_jobs(config: dict, sizes: Sizes, throughput: dict) -> list[PlannedJob]:
    from selectlab.judge import qurating
    from selectlab.raters import resolve as raters
    from selectlab.raters.spec import base_rater

    jobs = []
    for rater in raters.configured_raters(config):
        params, kind = raters.rater_params(config, rater), raters.rater_kind(config, rater)
        gpus, gpu_type = gpu_of(raters.resources(config, rater), throughput)
        if kind == "pretrained":
            jobs.append(_job(RATER_TRAINING, rater, f"wrap {rater} (public classifiers)", 1,
                             None))
            continue
        settings = config["judge"]["protocols"][raters.labels_protocol(rater)]
        texts = settings["documents"]
        pairwise = base_rater(rater) == "qurater"  # its Table 6 setups read snippets too
        cap = settings["snippet_tokens"][1] if pairwise else settings["max_text_tokens"]
        if kind == "generative":
            shape = sizes.shape(params["backbone"], params["max_length"])
            tokens = texts * (1 - params["heldout_fraction"]) * params["max_length"] \
                * params["epochs"]
            jobs.append(_job(RATER_TRAINING, rater, f"fine-tune {rater} (generative)", 1, shape,
                             train=tokens, gpus=gpus, gpu_type=gpu_type))
            continue
        shape = sizes.shape(params["backbone"], params["window"])
        # QuRating Table 6's separate setups train one model per criterion, each reading all
        models = len(params.get("criteria") or qurating.CRITERIA) if params.get("separate") else 1
        read = texts * cap * models
        trained = read * (1 - params["heldout_fraction"]) * params["epochs"] \
            if params["train_backbone"] else 0.0
        jobs.append(_job(RATER_TRAINING, rater, f"train {rater}", 1, shape, train=trained,
                         infer=read, gpus=gpus, gpu_type=gpu_type))
    return jobs


def family_shape(config: dict, sizes: Sizes, family: dict) -> tuple[ModelShape | None, int | None]:
    """(model shape, per-document token cap) of a configured annotation family."""
    from selectlab.raters import resolve as raters

    kind = family["kind"]
    if kind in ("signals", "dsir", "plugin"):  # a plugin's model, if any, is its own business
        return None, None
    if kind in ("refppl", "embedding"):
        return sizes.shape(family["model"], family["max_tokens"]), family["max_tokens"]
    params = raters.rater_params(config, family["rater"])
    if kind == "rater_generative":
        return sizes.shape(params["backbone"], params["max_length"]), params["max_length"]
    if params.get("pretrained"):
        return combined_shape([sizes.shape(entry["path"], params["window"])
                               for entry in params["pretrained"].values()]), None
    return sizes.shape(params["backbone"], params["window"]), None


def shard_count(config: dict) -> int:
    corpus = config["corpus"]
    if corpus["mode"] == "embedded":
        return int(corpus["num_shards"])
    return int((config.get("cost") or {}).get("shards", 1))


def annotation_jobs(config: dict, sizes: Sizes, throughput: dict) -> list[PlannedJob]:
    from selectlab.annotate import resolve as annotate

    shards = shard_count(config)
    jobs = []
    for name in annotate.family_names(config):
        family = annotate.family_config(config, name)
        shape, cap = family_shape(config, sizes, family)
        gpus, gpu_type = gpu_of(annotate.resources(config, name), throughput)
        for pool in annotate.family_pools(config, name):  # a pass over each pool it rates
            units, tokens = pool_size(config, sizes, pool)
            read = min(tokens, units * cap) if cap else tokens
            item, where = (name, "") if pool == FULL else (f"{name} [{pool}]", f" on {pool}")
            jobs.append(_job(ANNOTATION, item, f"annotate {name}{where} (per shard)", shards,
                             shape, infer=read / shards, gpus=gpus, gpu_type=gpu_type))
    return jobs


def pool_size(config: dict, sizes: Sizes, pool: str) -> tuple[float, float]:
    """(units, tokens) of a selection pool: the full pool's documents, or a pool's share of
    them (its sequences of `sequence_tokens`, one EOS per document in the stream)."""
    documents, tokens = sizes.pool()
    if pool == FULL:
        return documents, tokens
    spec = pool_spec(pool, config["corpus"]["pools"][pool])
    stream = (tokens + documents) * spec.share if spec.eos_inside else tokens * spec.share
    units = stream / spec.sequence_tokens if spec.eos_inside else documents * spec.share
    return units, stream


def pretrain_gpus(config: dict, variant: str, throughput: dict) -> tuple[int, str]:
    """GPUs of the variant's pretraining job, over all its nodes, and their type."""
    from selectlab.train.resolve import pretrain_shape

    shape = pretrain_shape(config, variant)
    gpus, gpu_type = gpu_of(shape, throughput)
    return gpus * int(shape["nodes"]), gpu_type


def pretraining_jobs(config: dict, sizes: Sizes, throughput: dict, names: list[str],
                     stage: str, item_of) -> list[PlannedJob]:
    """Pre-training of each model on its budget."""
    from selectlab.selection.resolve import resolve_selection
    from selectlab.train.resolve import preset_name, resolve_pretrain

    jobs = []
    for name in names:
        settings = resolve_pretrain(config, name)["settings"]
        shape = sizes.preset(preset_name(config, name), settings["seq_len"])
        budget = resolve_selection(config, name)["budget_tokens"]
        gpus, gpu_type = pretrain_gpus(config, name, throughput)
        jobs.append(_job(stage, item_of(name), f"pretrain {name}", 1, shape, train=budget,
                         gpus=gpus, gpu_type=gpu_type))
    return jobs


def evaluation_jobs(config: dict, sizes: Sizes, throughput: dict, names: list[str],
                    stage: str, item_of, icl: bool) -> list[PlannedJob]:
    """Held-out perplexity (and ICL) of each model."""
    from selectlab.evaluate.resolve import eval_shape
    from selectlab.train.resolve import preset_name, resolve_pretrain

    jobs = []
    for name in names:
        settings = resolve_pretrain(config, name)["settings"]
        shape = sizes.preset(preset_name(config, name), settings["seq_len"])
        read = sizes.heldout_tokens() + (sizes.icl_tokens() if icl else 0.0)
        gpus, gpu_type = gpu_of(eval_shape(config, "eval_perplexity", name), throughput)
        jobs.append(_job(stage, item_of(name), f"evaluate {name}", 1, shape, infer=read,
                         gpus=gpus, gpu_type=gpu_type))
    return jobs


def mates_jobs(config: dict, sizes: Sizes, throughput: dict) -> list[PlannedJob]:
    from selectlab.annotate import resolve as annotate
    from selectlab.mates import plan as mates
    from selectlab.selection.mates_stages import (
        influence_family,
        influence_stages,
        mates_settings,
        mates_variants,
    )
    from selectlab.train.resolve import preset_name

    documents, tokens = sizes.pool()
    shards = shard_count(config)
    jobs = []
    for variant in mates_variants(config):
        spec = mates_settings(config, variant)
        for stage in influence_stages(config, variant):
            probe = mates.probe_params(config, variant, stage)
            lm = sizes.preset(preset_name(config, variant), probe["seq_len"])
            per_job = probe["probes"] / probe["parts"]
            gpus, gpu_type = gpu_of(mates.job_shape_of(config, "probe"), throughput)
            jobs.append(_job(MATES, variant, f"probe {variant} stage {stage}", probe["parts"],
                             lm, train=per_job * probe["unit_tokens"],
                             infer=(per_job + 1) * probe["reference_tokens"], gpus=gpus,
                             gpu_type=gpu_type))
            model = mates.influence_model_params(config, variant, stage)
            shape = sizes.shape(model["backbone"], model["window"])
            read = spec["probes"] * spec["unit_tokens"]
            trained = read * (1 - spec["heldout_fraction"]) * model["epochs"] \
                if model["train_backbone"] else 0.0
            gpus, gpu_type = gpu_of(mates.job_shape_of(config, "fit"), throughput)
            jobs.append(_job(MATES, variant, f"fit {variant} stage {stage}", 1, shape,
                             train=trained, infer=read, gpus=gpus, gpu_type=gpu_type))
            units = min(tokens, documents * spec["unit_tokens"]) / shards
            family = influence_family(variant, stage)
            gpus, gpu_type = gpu_of(annotate.resources(config, family), throughput)
            jobs.append(_job(MATES, variant, f"annotate {family} "
                             "(per shard)", shards, shape, infer=units, gpus=gpus,
                             gpu_type=gpu_type))
    return jobs


def instruct_jobs(config: dict, sizes: Sizes, throughput: dict) -> list[PlannedJob]:
    """Fine-tuning and answer generation of every instruction-following variant."""
    from selectlab.instruct import resolve as instruct
    from selectlab.train.resolve import preset_name

    if not instruct.configured(config):
        return []
    section = config["instruct"]
    sft, pairs = section["sft"], section["data"]["train_pairs"]
    # selectlab.instruct.sft: a short last batch of each epoch is dropped.
    examples = sft["epochs"] * (pairs // sft["batch_sequences"]) * sft["batch_sequences"]
    answered = section["data"]["eval_instructions"]
    context = instruct.max_prompt_tokens(config) + section["generate"]["max_new_tokens"]
    sft_gpus, sft_gpu = gpu_of(instruct.job_shape_of(config, "sft"), throughput)
    gen_gpus, gen_gpu = gpu_of(instruct.job_shape_of(config, "generate"), throughput)
    jobs = []
    for variant in instruct.fine_tuned_variants(config):
        preset = preset_name(config, variant)
        jobs.append(_job(SFT, variant, f"sft {variant}", 1,
                         sizes.preset(preset, sft["max_seq_len"]),
                         train=examples * sft["max_seq_len"], gpus=sft_gpus, gpu_type=sft_gpu))
        jobs.append(_job(SFT, variant, f"generate {variant}", 1, sizes.preset(preset, context),
                         infer=answered * context, gpus=gen_gpus, gpu_type=gen_gpu))
    return jobs


def all_jobs(config: dict, throughput: dict) -> list[PlannedJob]:
    from selectlab.replicates import replicate_names
    from selectlab.selection.mates_stages import mates_stage_names, mates_variants
    from selectlab.selection.resolve import parse_proxy_name

    sizes = Sizes(config)
    variants = list(config["variants"])
    staged = mates_variants(config)
    # Every replicate trains and is evaluated like its variant (selectlab.replicates).
    runs = {run: name for name in variants for run in replicate_names(config, name)}
    parent = runs | {stage: name for name in staged for stage in mates_stage_names(config, name)}
    trained = [stage for run, name in runs.items()
               for stage in (mates_stage_names(config, name) if name in staged else [run])]
    proxies = proxies_trained(config)
    search = lambda name: parse_proxy_name(name)[0]  # noqa: E731
    return (judge_jobs(config, sizes, throughput) + rater_jobs(config, sizes, throughput)
            + annotation_jobs(config, sizes, throughput)
            + pretraining_jobs(config, sizes, throughput, proxies, CONSTRUCTION, search)
            + evaluation_jobs(config, sizes, throughput, proxies, CONSTRUCTION, search, False)
            + mates_jobs(config, sizes, throughput)
            + pretraining_jobs(config, sizes, throughput, trained, PRETRAINING,
                               lambda name: parent.get(name, name))
            + instruct_jobs(config, sizes, throughput)
            + evaluation_jobs(config, sizes, throughput, list(runs), EVALUATION,
                              lambda run: runs[run], True))
