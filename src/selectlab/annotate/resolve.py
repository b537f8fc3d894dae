"""Resolving the validated `annotate:` config section into what one annotation job needs.

Plain dict functions used by the workflow (rules/annotate.smk) and by hand.
A family's resolved params exclude its `resources`, so changing a job's memory or GPU request
never reruns it, while changing anything that affects its scores does.
"""

from __future__ import annotations

from collections.abc import Sequence

from selectlab import layout, shard_jobs
from selectlab.annotate.dsir_sources import is_pool_split, sample_shards, target_files
from selectlab.annotate.refppl import SMOLLM2_GGUF
from selectlab.annotate.registry import family_kind
from selectlab.corpus import resolve as corpus_cfg
from selectlab.resources import for_shards, job_shape, schema_default
from selectlab.shard_jobs import JobKind

# How fast a job scores, not what it writes: passed apart from the params, so changing them
# reruns nothing (docs/cluster.md).
THROUGHPUT_KEYS = ("forward_batch_size",)
# Where and how a family's jobs run, not what they write.
JOB_KEYS = ("resources", "pools", "files_per_job")


def family_names(config: dict) -> list[str]:
    return list(config["annotate"]["families"])


def family_config(config: dict, name: str) -> dict:
    """A configured family, or a MATES influence family generated from a `mates` variant."""
    from selectlab.mates.plan import family_entry

    families = config["annotate"]["families"]
    if name in families:
        return families[name]
    generated = family_entry(config, name)
    if generated is None:
        raise ValueError(f"no annotation family {name!r}; configured: {sorted(families)}")
    return generated


def resolve_family(config: dict, name: str) -> dict:
    """The family's scoring settings (kind included), as its jobs' `--params` (where it
    annotates, `pools`, is not one: adding a pool reruns no other pool's jobs)."""
    return {k: v for k, v in family_config(config, name).items()
            if k not in JOB_KEYS and k not in THROUGHPUT_KEYS}


def family_pools(config: dict, name: str) -> list[str]:
    """The selection pools whose shards a family annotates (`full`: the tokenized shards)."""
    from selectlab.corpus.pools import FULL

    return list(family_config(config, name).get("pools", [FULL]))


def pool_families(config: dict, pool: str) -> list[str]:
    """The configured families that annotate a pool's shards."""
    return [name for name in family_names(config) if pool in family_pools(config, name)]


def resolve_throughput(config: dict, name: str) -> dict:
    """Batch sizes of a family's jobs (`--throughput`): documents per row group and, for model
    families, per forward pass."""
    family = family_config(config, name)
    return {"batch_size": int(config["annotate"]["batch_size"])} | {
        key: family[key] for key in THROUGHPUT_KEYS if key in family}


def shards_per_job(config: dict, name: str) -> int:
    """Shards one of a family's jobs scores: annotate.shards_per_job, `auto` resolved by the
    files a shard reads and the family's `files_per_job` (else annotate.files_per_job)."""
    own = family_config(config, name).get("files_per_job")
    return corpus_cfg.shards_per_job(config, "annotate", own)


def family_job_kinds(config: dict, families: Sequence[str], rules: tuple[str, str],
                     shards: Sequence[str], any_shard: str) -> dict[str, list[JobKind]]:
    """Each family's job forms: its shards one a job, and batches of its `shards_per_job`. The
    batch form's rule is `rules[1]` followed by the batch size (one rule per size in use)."""
    alone, batch = rules
    sizes = {name: shards_per_job(config, name) for name in families}
    by_size = {size: shard_jobs.job_kinds((alone, f"{batch}{size}"), shards, size,
                                          "annotate.shards_per_job", any_shard)
               for size in sorted(set(sizes.values()))}
    return {name: by_size[size] for name, size in sizes.items()}


def rule_kinds(kinds: dict[str, list[JobKind]],
               any_shard: str) -> list[tuple[JobKind, list[str]]]:
    """The rules that run `family_job_kinds`, each with the families it runs: one for every
    shard that some family scores alone (any family: only the stats files a family's own forms
    name are asked for, so no file is wanted from two rules) and one per batch size."""
    alone: dict[str, list[str]] = {}
    batches: dict[str, tuple[JobKind, list[str]]] = {}
    for name, forms in kinds.items():
        for kind in forms:
            if kind.batched:
                batches.setdefault(kind.rule, (kind, []))[1].append(name)
            else:
                alone.update(kind.members)
    if not alone:
        return list(batches.values())
    every_shard = any(kind.pattern == any_shard for forms in kinds.values() for kind in forms)
    pattern = any_shard if every_shard else shard_jobs.names_pattern(list(alone))
    if every_shard and batches:
        # Batching numbers every shard (shard_jobs.shard_batches), so a name ending otherwise
        # is no shard: a batch's stats file (`{batch}_batch.json`) stays the batch rule's.
        pattern += "(?<=[0-9])"
    rule = next(kind.rule for forms in kinds.values() for kind in forms if not kind.batched)
    return [(JobKind(rule, pattern, [""], alone), list(kinds)), *batches.values()]


def stats_files(root: str, family_pools: Sequence[tuple[str, str]],
                kinds: dict[str, list[JobKind]]) -> list[str]:
    """The stats files of every annotation job of each (family, pool): one per batch of shards,
    one per shard scored alone (the family's forms, `family_job_kinds`); a pool's jobs are its
    shards' (`{shard}__{pool}`), cut as the family's full-pool jobs."""
    from selectlab.corpus.pools import FULL

    paths = []
    for family, pool in family_pools:
        tail = "" if pool == FULL else f"__{pool}"
        for kind in kinds[family]:
            stats = layout.annotation_batch_stats if kind.batched else layout.annotation_stats
            paths += [stats(root, family, f"{batch}{tail}") for batch in kind.members]
    return paths


def job_stats_path(root: str, kind: JobKind, tail: str = "") -> str:
    """The stats file of an annotation job of `kind` (a pattern of `{family}` and `{batch}`;
    `tail` names a pool's part of the shards): one per shard alone, one per batch."""
    if kind.batched:
        return layout.annotation_batch_stats(root, batch=f"{{batch}}{tail}")
    return layout.annotation_stats(root, shard=f"{{batch}}{tail}")


def job_name(kind: JobKind, tail: str = "") -> str:
    """An annotation job's log and benchmark name: its family and shard, or its batch."""
    return f"{{family}}/{{batch}}{tail}" + ("_batch" if kind.batched else "")


def fitted_inputs(config: dict, run_dir: str, name: str) -> list[str]:
    params = resolve_family(config, name)
    return family_kind(params["kind"]).fitted_inputs(run_dir, name, params)


def container_key(config: dict, name: str) -> str:
    return family_kind(family_config(config, name)["kind"]).container


def uses_model(config: dict, name: str) -> bool:
    return family_kind(family_config(config, name)["kind"]).uses_model


def resources(config: dict, name: str, shards: int = 1) -> dict:
    """The shape of one family's annotation jobs: its `resources` over the schema's default for
    its kind (model families: two cores and a GPU when asked; rule-based: one core). A job of
    `shards` shards (its shards_per_job) keeps the memory of one and adds up their time."""
    family = family_config(config, name)
    default = "model_resources" if family_kind(family["kind"]).uses_model else "rule_resources"
    shape = job_shape(schema_default("annotate.schema.yaml", "$defs", default),
                      family.get("resources"))
    return for_shards(shape, shards)


def families_of_kind(config: dict, kind: str) -> list[str]:
    return [name for name, family in config["annotate"]["families"].items()
            if family["kind"] == kind]


def needs_reference_lm(config: dict) -> bool:
    """Whether any family scores with the offline SmolLM2 that `prepare_reference_lm` converts."""
    return any(resolve_family(config, name)["model"] == SMOLLM2_GGUF
               for name in families_of_kind(config, "refppl"))


def dsir_seed(config: dict, name: str) -> int:
    return int(family_config(config, name).get("seed", config["seed"]))


def resolve_fit_dsir(config: dict, name: str) -> dict:
    """What `selectlab annotate fit-dsir` needs for one DSIR family."""
    family = family_config(config, name)
    if dsir_uses_pool_split(config, name) and config["corpus"]["mode"] != "embedded":
        raise ValueError(f"annotate.families.{name}: pool: targets read the embedded corpus's "
                         "DSIR target split; with SlimPajama name the target sets' files")
    return {"targets": family["targets"], "buckets": family["buckets"],
            "raw_sample_docs": family["raw_sample_docs"], "seed": dsir_seed(config, name),
            "max_doc_chars": config["corpus"]["reader"]["max_doc_chars"]}


def dsir_raw_shards(config: dict, name: str, shards: Sequence[str]) -> list[str]:
    family = family_config(config, name)
    return sample_shards(shards, family.get("raw_sample_shards"), dsir_seed(config, name))


def dsir_shard_files(config: dict, name: str,
                     shard_files: dict[str, list[str]]) -> dict[str, list[str]]:
    """The raw files of the shards a DSIR family samples its raw distribution from."""
    return {shard: shard_files[shard] for shard in dsir_raw_shards(config, name, list(shard_files))}


def dsir_uses_pool_split(config: dict, name: str) -> bool:
    return any(is_pool_split(spec) for spec in family_config(config, name)["targets"].values())


def dsir_target_split_inputs(config: dict, root: str, name: str) -> list[str]:
    """The corpus's DSIR target split, when a target reads it ([] otherwise)."""
    return [layout.dsir_target(root)] if dsir_uses_pool_split(config, name) else []


def dsir_target_files(config: dict, name: str) -> list[str]:
    """Configured target files (full scale), declared as inputs so a change reruns the fit."""
    specs = family_config(config, name)["targets"].values()
    return [path for spec in specs for path in target_files(spec)]
