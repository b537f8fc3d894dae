"""The selection stage's plan: which variants exist, and what each selection job needs.

Plain dict functions of the validated config (no pandas or numpy at import time: the workflow
imports this module while it builds the job graph). A variant is a configured entry of
`variants:` (grids already expanded, see `selection.grids`), a replicate of one
(`{variant}__rep{i}`, see `selectlab.replicates`), a Meta-rater proxy generated from
`metarater.searches`, or a stage of a MATES variant generated from the `mates` section (the
stages' probe, fit and annotation jobs are planned by `selectlab.mates.plan`). The workflow
passes each job only its own resolved section (as JSON `params`), so Snakemake reruns exactly
the jobs whose settings changed. A selection job's size follows the pool it reads
(selection.sizing).
"""

from __future__ import annotations

import functools
import hashlib

from selectlab import layout
from selectlab.replicates import all_replicate_names, replicate_entry
from selectlab.resources import rule_shape
from selectlab.selection.mates_stages import (
    INFLUENCE_COLUMN,
    influence_family,
    mates_settings,
    mates_stage_name,
    parse_stage_name,
    stage_budgets,
    stage_name_patterns,
)
from selectlab.selection.sizing import select_size

# Meta-rater proxies are variants generated from `metarater.searches`, named
# `{search}__proxy{index:03d}`; config variant names may not take that form (the schema says so).
PROXY_MARK = "__proxy"
PROXY_FAMILY = "metarater_proxy"


def variant_names(config: dict) -> list[str]:
    """The configured variants (the tables' rows), in config order; proxies left out."""
    return list(config["variants"])


def variant_name_pattern(config: dict) -> str:
    """A regular expression matching every variant, replicate, proxy and MATES stage name (the
    `variant` wildcard)."""
    return "|".join(variant_names(config) + all_replicate_names(config)
                    + proxy_name_patterns(config) + stage_name_patterns(config))


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
    entry = {"family": PROXY_FAMILY, "label": f"{search} proxy {index}",
             "method": "weighted_topk", "params": params, "seed": seed,
             "budget_tokens": spec["budget_tokens"],
             "pretrain": {"preset": spec["preset"]} | spec.get("pretrain", {})}
    if "selections_from" in spec:
        entry["shared_from"] = shared_proxy(config, search, index, entry)
    return entry


def shared_proxy(config: dict, search: str, index: int, entry: dict) -> str:
    """The proxy of `selections_from` whose selection this proxy reuses, checked to be defined
    exactly alike (method, scores, weights, strata, seed, budget)."""
    source = metarater_searches(config)[search]["selections_from"]
    searches = metarater_searches(config)
    if source not in searches or "selections_from" in searches[source]:
        raise ValueError(f"search {search!r}: selections_from {source!r} must name a search "
                         "that selects its own proxies")
    theirs = proxy_entry(config, source, index)
    keys = ("method", "params", "seed", "budget_tokens")
    differ = [key for key in keys if entry[key] != theirs[key]]
    if differ:
        raise ValueError(f"search {search!r} cannot share {source!r}'s selections: its proxies' "
                         f"{differ} differ")
    return proxy_name(source, index)


def variant_entry(config: dict, name: str) -> dict:
    """A configured variant, a replicate of one, a Meta-rater proxy generated from its search,
    or a stage of a MATES variant."""
    if name in config["variants"]:
        return config["variants"][name]
    replicate = replicate_entry(config, name)
    if replicate is not None:
        return replicate
    parsed = parse_proxy_name(name)
    if parsed and parsed[0] in metarater_searches(config):
        return proxy_entry(config, *parsed)
    stage = parse_stage_name(config, name)
    if stage:
        return stage_entry(config, *stage)
    raise KeyError(f"no variant {name!r} in the config (nor a Meta-rater proxy or MATES stage "
                   "of that name)")


def derived_seed(run_seed: int, name: str) -> int:
    """A variant's own seed, a hash of the run seed and its name. With one seed for all, every
    top-k tie-break and Overall-Score level draw reused the uniform variant's random keys, so
    their overlaps with uniform were inflated; a hash keeps each variant reproducible alone."""
    digest = hashlib.blake2b(f"{int(run_seed)}:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % 2**31


def variant_seed(config: dict, name: str) -> int:
    """The seed of a variant's selection: its own `seed` when set, else derived from its name."""
    entry = variant_entry(config, name)
    return int(entry["seed"]) if "seed" in entry else derived_seed(config["seed"], name)


def reference_uniform_seed(config: dict) -> int:
    """The seed of the uniform selection each manifest's overlap is measured against: the
    evaluation baseline's when that samples uniformly (the run's `uniform` row)."""
    baseline = config.get("evaluation", {}).get("baseline", "uniform")
    if config["variants"].get(baseline, {}).get("method") == "uniform":
        return variant_seed(config, baseline)
    return derived_seed(config["seed"], "uniform")


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
        try:
            base = variant_entry(config, str(params.get("of")))
        except KeyError:
            base = None
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
    resolved = {
        "name": name,
        "method": variant["method"],
        "budget_tokens": budget,
        "seed": variant_seed(config, name),
        "reference_seed": reference_uniform_seed(config),
        "params": params,
    }
    if "shared_from" in variant:  # an identical selection of another variant, reused
        resolved["shared_from"] = variant["shared_from"]
    from selectlab.plugins.rows import user_methods

    plugin = user_methods(config).get(variant["method"])
    if plugin is not None:
        resolved["plugin"] = dict(plugin)
    return resolved


def method_inputs(config: dict, name: str) -> list[str]:
    """Your method's own .py file, so that editing it reruns the variants that use it."""
    from selectlab.plugins.loading import module_files
    from selectlab.plugins.rows import user_methods

    return module_files(user_methods(config).get(variant_entry(config, name)["method"], {}))


def selection_raters(config: dict, name: str) -> list[str]:
    """Sidecar families (besides meta) that a variant's selection reads (none when it reuses
    another variant's selection)."""
    from selectlab.selection.methods import required_raters

    if "shared_from" in variant_entry(config, name):
        return []
    return required_raters(selection_params(config, name))


def select_shape(config: dict, name: str, documents: int) -> dict:
    """The selection job of a variant over a pool of `documents` (selection.sizing.pool_documents):
    the `select` job of `selection_job_shape` (memory: the streaming ceiling), with cores and
    time from the pool and the score columns it reads (SemDeDup's in-memory ranks added to its
    memory); `resources.select` still overrides."""
    selection = resolve_selection(config, name)
    columns = len(selection_raters(config, name)) + len(selection["params"].get("scores", []))
    ceiling = selection_job_shape(config, "select")["mem_mb"]
    return rule_shape(config, "select", select_size(selection["method"], selection["params"],
                                                    columns, documents, ceiling))


def score_inputs(config: dict, root: str, name: str) -> list[str]:
    """The throughput table of each score family a variant's selection reads.

    Each is written after every shard of its family, so it stands for all of them."""
    return [layout.family_throughput(root, family, "csv")
            for family in selection_raters(config, name)]


def ranked_scores(config: dict) -> dict[str, list[str]]:
    """Family -> its columns that some selection combines on percentile ranks; each family is
    ranked once over the pool (selectlab select rank)."""
    from selectlab.selection.methods import RANKED_METHODS
    from selectlab.selection.ranks import ranked_columns

    refs = [ref for name, variant in config["variants"].items()
            if variant["method"] in RANKED_METHODS
            for ref in selection_params(config, name)["scores"]]
    refs += [ref for spec in metarater_searches(config).values() for ref in spec["scores"]]
    return ranked_columns(refs)


def selection_ranks(config: dict, name: str) -> list[str]:
    """Families whose rank sidecars a variant's selection reads."""
    from selectlab.selection.methods import RANKED_METHODS

    variant = variant_entry(config, name)
    if variant["method"] not in RANKED_METHODS or "shared_from" in variant:
        return []
    return sorted({ref.lstrip("-").split(".")[0]
                   for ref in selection_params(config, name)["scores"]})


def rank_inputs(config: dict, root: str, name: str) -> list[str]:
    """The rank sidecar directory of each family a variant's selection combines on ranks."""
    return [layout.rank_dir(root, family) for family in selection_ranks(config, name)]


def selection_job_shape(config: dict, rule: str) -> dict:
    """A `select` or `rank_scores` job: the rule's default, its memory the ceiling the job
    streams the pool within (`selection.memory_mb`, passed to the command too), then the
    config's `resources.<rule>`."""
    return rule_shape(config, rule, {"mem_mb": config["selection"].get("memory_mb")})


def selection_upstream(config: dict, root: str, name: str) -> list[str]:
    """The one file a variant's selection reads besides sidecars: fitted Meta-rater weights,
    the selection a curriculum reorders, or the identical selection a proxy of a search with
    `selections_from` reuses; [] for every other method."""
    variant = variant_entry(config, name)
    if "shared_from" in variant:
        return [layout.selection(root, variant["shared_from"])]
    params = selection_params(config, name)
    if variant["method"] == "metarater":
        return [layout.metarater_weights(root, params["search"], params["proxies"])]
    if variant["method"] == "curriculum":
        return [layout.selection(root, params["of"])]
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


def proxy_inputs(config: dict, root: str, search: str, proxies: int) -> dict[str, list[str]]:
    """The manifests and perplexities of the first N proxies of a search (a fit's inputs)."""
    names = proxy_names(config, search, proxies)
    return {"manifests": [layout.selection_manifest(root, name) for name in names],
            "perplexity": [layout.perplexity(root, name) for name in names]}


def metarater_fits(config: dict) -> list[tuple[str, int]]:
    """(search, proxies) pairs some variant's selection uses, in config order."""
    fits = []
    for name, variant in config["variants"].items():
        if variant["method"] == "metarater":
            params = selection_params(config, name)
            fits.append((params["search"], int(params["proxies"])))
    return list(dict.fromkeys(fits))


def metarater_fit_files(config: dict, root: str) -> list[str]:
    return [layout.metarater_weights(root, search, n) for search, n in metarater_fits(config)]


# ---- MATES (Yu et al., 2024): a variant pre-trained in stages ------------------------------
def stage_entry(config: dict, variant: str, stage: int) -> dict:
    """Stage `stage` of a MATES variant as a variant entry, selected, packed and trained by the
    ordinary rules: stage 1 uniform and from scratch, stage k > 1 by predicted influence
    (Gumbel top-k at `temperature`, 0 = top-k) continuing from stage k-1's model. Its learning
    rate follows the run's schedule across stages (selectlab.train.resolve)."""
    spec = mates_settings(config, variant)
    entry = config["variants"][variant]
    budget = stage_budgets(resolve_selection(config, variant)["budget_tokens"],
                           spec["stages"])[stage - 1]
    pretrain = dict(entry.get("pretrain") or {})
    if stage == 1:
        method, params = "uniform", {}
    else:
        method = "rating_sample"
        params = {"score": f"{influence_family(variant, stage)}.{INFLUENCE_COLUMN}",
                  "tau": float(spec["temperature"])}
        pretrain["init_from"] = mates_stage_name(variant, stage - 1)
    return {"family": entry["family"], "label": f"{entry.get('label', variant)} stage {stage}",
            "method": method, "params": params, "seed": variant_seed(config, variant) + stage - 1,
            "budget_tokens": budget, "pretrain": pretrain}
