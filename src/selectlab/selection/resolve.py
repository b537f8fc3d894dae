"""The selection stage's plan: which variants exist, and what each selection job needs.

Plain dict functions of the validated config (no pandas or numpy at import time: the workflow
imports this module while it builds the job graph). A variant is a configured entry of
`variants:` (grids already expanded, see `selection.grids`) or a Meta-rater proxy generated
from `metarater.searches`. The workflow passes each job only its own resolved section (as JSON
`params`), so Snakemake reruns exactly the jobs whose settings changed.
"""

from __future__ import annotations

import functools

from selectlab import layout

# Meta-rater proxies are variants generated from `metarater.searches`, named
# `{search}__proxy{index:03d}`; config variant names may not take that form (the schema says so).
PROXY_MARK = "__proxy"
PROXY_FAMILY = "metarater_proxy"


def variant_names(config: dict) -> list[str]:
    """The configured variants (the tables' rows), in config order; proxies left out."""
    return list(config["variants"])


def variant_name_pattern(config: dict) -> str:
    """A regular expression matching every variant and proxy name (the `variant` wildcard)."""
    return "|".join(variant_names(config) + proxy_name_patterns(config))


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


def score_inputs(config: dict, root: str, name: str) -> list[str]:
    """The throughput table of each score family a variant's selection reads.

    Each is written after every shard of its family, so it stands for all of them."""
    return [layout.family_throughput(root, family, "csv")
            for family in selection_raters(config, name)]


def selection_upstream(config: dict, root: str, name: str) -> list[str]:
    """The one file a variant's selection reads besides sidecars: fitted Meta-rater weights,
    or the selection a curriculum reorders; [] for every other method."""
    variant = variant_entry(config, name)
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
