"""Resolving the validated config into what one job needs.

The workflow passes each job only its own resolved section (as JSON `params`), so Snakemake's
parameter-change detection reruns exactly the jobs whose settings changed. These functions are
plain dict transformations, used by the Snakefile and by hand alike.
"""

from __future__ import annotations

import copy
import functools
import glob
import json
from pathlib import Path

import yaml


def load_config(path: str | Path) -> dict:
    with open(path) as handle:
        return yaml.safe_load(handle)


def as_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def deep_merge(base: dict, override: dict) -> dict:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def embedded_shard_names(num_shards: int) -> list[str]:
    return [f"shard_{i:05d}" for i in range(num_shards)]


def slimpajama_shard_groups(directory: str | Path, pattern: str, group_size: int,
                            limit: int | None = None) -> dict[str, list[str]]:
    """Group the sorted raw files into shards of `group_size` files each.

    One annotation job then covers a group, which keeps the DAG at thousands of jobs, not
    hundreds of thousands, at full scale.
    """
    files = sorted(glob.glob(str(Path(directory) / pattern)))
    if limit:
        files = files[:limit]
    if not files:
        raise ValueError(f"no files match {pattern!r} under {directory}")
    return {
        f"group_{start // group_size:05d}": files[start:start + group_size]
        for start in range(0, len(files), group_size)
    }


def shard_files(config: dict, run_dir: str) -> dict[str, list[str]]:
    """Shard name -> the raw files it reads, for either corpus mode."""
    corpus = config["corpus"]
    if corpus["mode"] == "embedded":
        return {name: [f"{run_dir}/corpus/raw/{name}.jsonl.zst"]
                for name in embedded_shard_names(corpus["num_shards"])}
    slimpajama = corpus["slimpajama"]
    return slimpajama_shard_groups(slimpajama["train_dir"], slimpajama["pattern"],
                                   slimpajama["group_size"], slimpajama.get("max_files"))


# Meta-rater proxies are variants generated from `metarater.searches`, named
# `{search}__proxy{index:03d}`; config variant names may not take that form (the schema says so).
PROXY_MARK = "__proxy"
PROXY_FAMILY = "metarater_proxy"


def metarater_searches(config: dict) -> dict:
    return config.get("metarater", {}).get("searches", {})


def proxy_name(search: str, index: int) -> str:
    return f"{search}{PROXY_MARK}{index:03d}"


def parse_proxy_name(name: str) -> tuple[str, int] | None:
    """(search, index) of a proxy variant name, or None for any other name."""
    search, mark, index = name.rpartition(PROXY_MARK)
    if not mark or not search or not index.isdigit():
        return None
    return search, int(index)


def proxy_names(config: dict, search: str, count: int | None = None) -> list[str]:
    """The first `count` proxies of a search (all of them by default)."""
    spec = metarater_searches(config)[search]
    count = spec["proxies"] if count is None else count
    if not 1 <= count <= spec["proxies"]:
        raise ValueError(f"search {search!r} has {spec['proxies']} proxies, {count} asked for")
    return [proxy_name(search, index) for index in range(count)]


def proxy_name_patterns(config: dict) -> list[str]:
    """Regular expressions matching every proxy name of every search (wildcard constraints)."""
    return [f"{search}{PROXY_MARK}[0-9]{{3}}" for search in metarater_searches(config)]


def proxy_variant_names(config: dict) -> list[str]:
    return [name for search in metarater_searches(config) for name in proxy_names(config, search)]


@functools.cache
def cached_proxy_weights(seed: int, index: int, n_scores: int, alpha: float) -> tuple[float, ...]:
    """Planning resolves each of a full-scale config's ~1,300 proxies dozens of times (every rule
    of every proxy job); the Dirichlet draw is a pure function of these arguments."""
    from selectlab.selection.metarater import proxy_weights

    return tuple(proxy_weights(seed, index, n_scores, alpha))


def proxy_entry(config: dict, search: str, index: int) -> dict:
    """A proxy as a variant: top-k on its own Dirichlet weights, a small model, no ICL."""
    spec = metarater_searches(config)[search]
    if index >= spec["proxies"]:
        raise ValueError(f"search {search!r} has {spec['proxies']} proxies, not {index + 1}")
    seed = int(spec.get("seed", config["seed"]))
    weights = list(cached_proxy_weights(seed, index, len(spec["scores"]),
                                        float(spec.get("dirichlet_alpha", 1.0))))
    params = {"scores": list(spec["scores"]), "weights": weights}
    if "strata" in spec:
        params["strata"] = list(spec["strata"])
    return {"family": PROXY_FAMILY, "label": f"{search} proxy {index}",
            "method": "weighted_topk", "params": params, "seed": seed,
            "budget_tokens": spec["budget_tokens"],
            "pretrain": {"preset": spec["preset"]} | spec.get("pretrain", {})}


def variant_entry(config: dict, name: str) -> dict:
    """A configured variant, or a Meta-rater proxy generated from its search."""
    if name in config["variants"]:
        return config["variants"][name]
    parsed = parse_proxy_name(name)
    if parsed and parsed[0] in metarater_searches(config):
        return proxy_entry(config, *parsed)
    raise KeyError(f"no variant {name!r} in the config (and no Meta-rater proxy of that name)")


def variant_seed(config: dict, name: str) -> int:
    return int(variant_entry(config, name).get("seed", config["seed"]))


def selection_params(config: dict, name: str) -> dict:
    """A variant's params, with a Meta-rater variant's scores copied in from its search."""
    variant = variant_entry(config, name)
    params = dict(variant.get("params", {}))
    if variant["method"] == "metarater":
        searches = metarater_searches(config)
        if params.get("search") not in searches:
            raise ValueError(f"variant {name!r}: unknown Meta-rater search "
                             f"{params.get('search')!r}; known: {sorted(searches)}")
        spec = searches[params["search"]]
        params.setdefault("proxies", spec["proxies"])
        proxy_names(config, params["search"], params["proxies"])  # checks the count
        params["scores"] = list(spec["scores"])
    if variant["method"] == "curriculum":
        base = config["variants"].get(params.get("of"))
        if base is None:
            raise ValueError(f"variant {name!r}: curriculum over unknown variant "
                             f"{params.get('of')!r}")
        if base["method"] == "curriculum":
            raise ValueError(f"variant {name!r}: reorders {params['of']!r}, itself a "
                             "curriculum; name the selection it reorders instead")
    return params


def resolve_selection(config: dict, name: str) -> dict:
    """What `selectlab select run` needs for one variant."""
    variant = variant_entry(config, name)
    params = selection_params(config, name)
    if variant["method"] == "curriculum":
        # A curriculum trains on exactly its base variant's documents, so it has their budget.
        budget = resolve_selection(config, params["of"])["budget_tokens"]
    else:
        budget = variant.get("budget_tokens", config["selection"]["budget_tokens"])
        budget = int(round(budget * variant.get("budget_scale", 1.0)))
    return {
        "name": name,
        "method": variant["method"],
        "budget_tokens": budget,
        "seed": variant_seed(config, name),
        "params": params,
    }


def selection_raters(config: dict, name: str) -> list[str]:
    """Sidecar families (besides meta) that a variant's selection reads."""
    from selectlab.selection.methods import required_raters

    return required_raters(selection_params(config, name))


def metarater_weights_path(run_dir: str, search: str, proxies: int) -> str:
    return f"{run_dir}/metarater/{search}/n{proxies}/weights.json"


def selection_upstream(config: dict, run_dir: str, name: str) -> list[str]:
    """The one file a variant's selection reads besides sidecars: fitted Meta-rater weights,
    or the selection a curriculum reorders; [] for every other method."""
    variant = variant_entry(config, name)
    params = selection_params(config, name)
    if variant["method"] == "metarater":
        return [metarater_weights_path(run_dir, params["search"], params["proxies"])]
    if variant["method"] == "curriculum":
        return [f"{run_dir}/selections/{params['of']}/selection.parquet"]
    return []


def resolve_metarater_fit(config: dict, search: str, proxies: int) -> dict:
    """What `selectlab select metarater-fit` needs for one search fitted on its first N."""
    meta = config["metarater"]
    spec = metarater_searches(config)[search]
    proxy_names(config, search, proxies)  # checks the count
    return {
        "search": search,
        "scores": list(spec["scores"]),
        "proxies_used": proxies,
        "seed": int(spec.get("seed", config["seed"])),
        "regressor": meta.get("regressor", {}),
        "candidates": meta.get("candidates", 100_000),
        "top": meta.get("top", 128),
        "dirichlet_alpha": spec.get("dirichlet_alpha", 1.0),
    }


def metarater_fits(config: dict) -> list[tuple[str, int]]:
    """(search, proxies) pairs some variant's selection uses, in config order."""
    fits = []
    for name, variant in config["variants"].items():
        if variant["method"] == "metarater":
            params = selection_params(config, name)
            fits.append((params["search"], int(params["proxies"])))
    return list(dict.fromkeys(fits))


def preset_name(config: dict, name: str) -> str:
    """The model preset a variant trains (its own `pretrain.preset`, else the default).

    Checked without merging the whole pretraining section: planning asks for it once per
    resource of every pretraining and evaluation job."""
    preset = variant_entry(config, name).get("pretrain", {}).get(
        "preset", config["pretrain"]["preset"])
    presets = config["models"]["presets"]
    if preset not in presets:
        raise ValueError(f"variant {name!r}: unknown model preset {preset!r}; "
                         f"known: {sorted(presets)}")
    return preset


# How a pretraining job runs, not what it learns (selectlab.train.resolve passes them).
LAUNCH_SETTINGS = ("micro_batch_sequences", "activation_checkpointing")
LAUNCH_PRESET_KEYS = ("resources", "fsdp")


def merged_pretrain(config: dict, name: str) -> dict:
    """The `pretrain` section with the variant's overrides."""
    return deep_merge(config["pretrain"], variant_entry(config, name).get("pretrain", {}))


def resolve_pretrain(config: dict, name: str) -> dict:
    """Training settings and model preset for one variant (variant overrides win)."""
    preset = preset_name(config, name)
    settings = merged_pretrain(config, name)
    for key in ("preset", "init_from", *LAUNCH_SETTINGS):
        settings.pop(key, None)
    settings.setdefault("seed", variant_seed(config, name))
    # A preset's job resources and launch settings decide how the job runs, not the model:
    # resizing a job must not change the job's params and so retrain a finished model.
    model = {k: v for k, v in config["models"]["presets"][preset].items()
             if k not in LAUNCH_PRESET_KEYS}
    return {"preset_name": preset, "preset": model, "settings": settings}


def init_variant(config: dict, name: str) -> str | None:
    """The variant whose final model this variant continues from, if any."""
    return variant_entry(config, name).get("pretrain", {}).get("init_from")


def seq_len(config: dict) -> int:
    return int(config["pretrain"]["seq_len"])


def icl_group_order(config: dict) -> list[str]:
    """ICL table groups in display order: local task kinds, or the configured tasks' groups."""
    icl = config["evaluation"]["icl"]
    if icl["tasks"] == "local":
        return list(icl.get("local_tasks", {}).get("kinds", ["continuation", "cloze"]))
    return list(dict.fromkeys(task["group"] for task in icl["tasks"]))


def report_descriptions(config: dict) -> dict:
    """What the tables and figures show about each variant; `order` keeps the config's order
    through the sorted-key JSON the workflow passes (see `config_order`)."""
    return {
        name: {"family": v["family"], "method": v["method"], "label": v.get("label", name),
               "params": v.get("params", {}), "order": index}
        for index, (name, v) in enumerate(config["variants"].items())
    }


def config_order(descriptions: dict) -> dict:
    """`report_descriptions` back in config order (JSON params arrive with sorted keys)."""
    return dict(sorted(descriptions.items(), key=lambda item: item[1].get("order", 0)))


def metarater_figure_fits(config: dict) -> list[tuple[str, int]]:
    """Per search, the fit on the most proxies any variant uses (what the figures show)."""
    largest: dict[str, int] = {}
    for search, proxies in metarater_fits(config):
        largest[search] = max(proxies, largest.get(search, 0))
    return list(largest.items())


def metarater_report(config: dict) -> dict:
    """What the Meta-rater figures need besides the fits: (search, N, table label) per variant."""
    variants = []
    for name, variant in config["variants"].items():
        if variant["method"] == "metarater":
            params = selection_params(config, name)
            variants.append([params["search"], int(params["proxies"]), variant.get("label", name)])
    return {"variants": variants}
