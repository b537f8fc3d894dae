"""Plan-time checks of every name the config refers to, before any job runs.

The schema checks each value on its own; this module checks what the values refer to: score
columns (`family.column`) against what the configured annotation families write, Meta-rater
searches, curriculum bases, `init_from` variants, model presets, the evaluation baseline,
annotation families' raters, raters' judge protocols, your own families and methods
(selectlab.plugins.checks), DSIR's held-out targets and each
variant's selection pool (its scores annotated there, its method able to use it). It also
checks numbers that only make sense together: a weighted top-k's weights against its scores,
the micro batch against the global batch and the job's world size, and (once tokenisation has
run) every budget against the pool. Every problem is reported at once, each on one line with
a "did you mean" where a known name is close.

Called by the Snakefile right after schema validation, and by `selectlab config check`.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

from selectlab import layout
from selectlab.config_errors import ConfigError, suggestion
from selectlab.plugins import checks as plugin_checks

META_COLUMNS = ("set_name", "source_detail", "n_chars", "n_tokens", "token_offset")
REFPPL_COLUMNS = ("ref_nll", "ref_ppl", "ref_tokens")
RATER_PROTOCOL_OPTIONAL = {"qurater": False, "dataman": False, "prrc": False,
                           "fineweb_edu": True, "wanjuan": True}


def family_columns(config: dict) -> dict[str, list[str]]:
    """Family -> the score columns its sidecars will have (docs/layout.md), from the config."""
    from selectlab.annotate.signals import SIGNAL_COLUMNS

    columns: dict[str, list[str]] = {"meta": list(META_COLUMNS)}
    for name, family in config["annotate"]["families"].items():
        kind = family["kind"]
        if kind == "signals":
            columns[name] = list(SIGNAL_COLUMNS)
        elif kind == "dsir":
            columns[name] = [f"dsir_{target}" for target in family.get("targets", {})]
        elif kind == "refppl":
            columns[name] = list(REFPPL_COLUMNS)
        elif kind == "embedding":
            columns[name] = ["embedding"]
        elif kind in ("rater", "rater_generative"):
            columns[name] = rater_columns(config, family["rater"])
        elif kind == "plugin":
            columns[name] = plugin_checks.family_columns(family, name)
    return columns


def rater_columns(config: dict, rater: str) -> list[str]:
    from selectlab.raters.spec import heads, sidecar_columns

    entry = (config.get("raters") or {}).get(rater) or {}
    criteria = entry.get("criteria")
    return sidecar_columns(rater, heads(rater, tuple(criteria) if criteria else None))


class Checker:
    def __init__(self, config: dict):
        self.config = config
        self.problems: list[str] = []
        self.columns = family_columns(config)
        self.variants = config["variants"]
        self.presets = config["models"]["presets"]
        self.searches = config.get("metarater", {}).get("searches", {})

    def name(self, where: str, value: str, known, what: str) -> bool:
        if value in known:
            return True
        listing = ", ".join(sorted(map(str, known))) or "none"
        self.problems.append(f"{where}: {value!r} is not a {what}{suggestion(value, known)}; "
                             f"known: {listing}")
        return False

    def score(self, where: str, text: str) -> None:
        from selectlab.selection.scores import ScoreRef

        ref = ScoreRef.parse(text)
        if not self.name(where, ref.family, self.columns, "score family (an annotation family "
                                                           "of annotate.families, or meta)"):
            return
        known = self.columns[ref.family]
        if ref.column not in known:
            full = [f"{ref.family}.{c}" for c in known]
            self.problems.append(
                f"{where}: {text!r} is not a column of family {ref.family!r}"
                f"{suggestion(f'{ref.family}.{ref.column}', full)}; {ref.family} writes: "
                f"{', '.join(known)}")

    def scores(self, where: str, params: dict) -> None:
        from selectlab.selection.methods import REF_KEYS, REF_LIST_KEYS, REF_MAP_KEYS, SET_NAME

        for key in REF_KEYS:
            if isinstance(params.get(key), str):
                self.score(f"{where}.{key}", params[key])
        for key in REF_LIST_KEYS:
            for i, text in enumerate(params.get(key, [])):
                if text != SET_NAME:
                    self.score(f"{where}.{key}[{i}]", text)
        for key in REF_MAP_KEYS:
            for text in params.get(key, {}):
                self.score(f"{where}.{key}.{text}", text)

    def variant(self, name: str, variant: dict) -> None:
        where = f"variants.{name}"
        params = variant.get("params", {})
        self.scores(f"{where}.params", params)
        method = variant["method"]
        self.name(f"{where}.method", method, plugin_checks.known_methods(self.config),
                  "selection method (built-in, or yours in selection.methods)")
        if method == "weighted_topk" and len(params["weights"]) != len(params["scores"]):
            self.problems.append(f"{where}.params.weights: {len(params['weights'])} weights for "
                                 f"{len(params['scores'])} scores; give one weight per score")
        if method == "metarater":
            self.name(f"{where}.params.search", params["search"], self.searches,
                      "Meta-rater search (metarater.searches)")
            search = self.searches.get(params["search"])
            if search and params.get("proxies", 0) > search["proxies"]:
                self.problems.append(f"{where}.params.proxies: {params['proxies']} proxies asked "
                                     f"for, search {params['search']!r} has {search['proxies']}")
        if method == "curriculum" and self.name(f"{where}.params.of", params["of"],
                                                self.variants, "variant"):
            if self.variants[params["of"]]["method"] == "curriculum":
                self.problems.append(f"{where}.params.of: {params['of']!r} is itself a "
                                     "curriculum; name the selection it reorders instead")
        pretrain = variant.get("pretrain", {})
        if "init_from" in pretrain:
            self.name(f"{where}.pretrain.init_from", pretrain["init_from"], self.variants,
                      "variant")
        self.training(where, pretrain, self.budget(variant))

    def budget(self, variant: dict) -> int | None:
        if variant["method"] == "curriculum":
            return None
        budget = variant.get("budget_tokens", self.config["selection"]["budget_tokens"])
        return int(round(budget * variant.get("budget_scale", 1.0)))

    def training(self, where: str, overrides: dict, budget: int | None) -> None:
        """The preset exists; the batch splits into micro batches over the job's processes."""
        settings = self.config["pretrain"] | overrides
        preset = settings["preset"]
        key = "pretrain.preset" if "preset" not in overrides else f"{where}.pretrain.preset"
        if not self.name(key, preset, self.presets, "model preset (models.presets)"):
            return
        resources = self.presets[preset].get("resources", {})
        world = max(1, resources.get("gpu", 0)) * resources.get("nodes", 1)
        micro, total = settings["micro_batch_sequences"], settings["global_batch_sequences"]
        batch_keys = ("preset", "micro_batch_sequences", "global_batch_sequences")
        # Reported where the batch is set, once, rather than for every variant inheriting it.
        batch_where = where if any(k in overrides for k in batch_keys) else "pretrain"
        if total % (micro * world):
            self.problems.append(
                f"{batch_where}: global_batch_sequences {total} is not a multiple of "
                f"micro_batch_sequences {micro} x {world} process(es) of preset {preset!r}")
        if budget is not None and budget < total * settings["seq_len"]:
            self.problems.append(
                f"{where}: a budget of {budget:,} tokens is less than one global batch "
                f"({total} x {settings['seq_len']} tokens)")

    def search(self, name: str, search: dict) -> None:
        where = f"metarater.searches.{name}"
        for i, text in enumerate(search["scores"]):
            self.score(f"{where}.scores[{i}]", text)
        for i, text in enumerate(search.get("strata", [])):
            if text != "set_name":
                self.score(f"{where}.strata[{i}]", text)
        overrides = {"preset": search["preset"]} | search.get("pretrain", {})
        self.training(where, overrides, int(search["budget_tokens"]))

    def families(self) -> None:
        raters = (self.config.get("raters") or {})
        configured = [r for r in raters if r != "defaults"]
        set_names = list(self.config["corpus"]["set_names"].values())
        for name, family in self.config["annotate"]["families"].items():
            where = f"annotate.families.{name}"
            if family["kind"] in ("rater", "rater_generative"):
                self.name(f"{where}.rater", family["rater"], configured,
                          "rater configured under raters:")
            for target, spec in family.get("targets", {}).items():
                if isinstance(spec, str) and spec.startswith("heldout:"):
                    self.name(f"{where}.targets.{target}", spec.removeprefix("heldout:"),
                              set_names, "source of corpus.set_names")

    def raters(self) -> None:
        from selectlab.raters.spec import PROTOCOL

        raters = self.config.get("raters") or {}
        protocols = self.config["judge"]["protocols"]
        defaults = raters.get("defaults") or {}
        for rater in (r for r in raters if r != "defaults"):
            entry = defaults | (raters[rater] or {})
            if not entry.get("pretrained") and PROTOCOL.get(rater) not in protocols:
                self.problems.append(f"raters.{rater}: learns from the judge protocol "
                                     f"{PROTOCOL.get(rater)!r}, which judge.protocols lacks")

    def pool(self, pool_tokens: int | None) -> None:
        if pool_tokens is None:
            return
        budgets = {f"variants.{n}": self.budget(v) for n, v in self.variants.items()}
        budgets |= {f"metarater.searches.{n}": int(s["budget_tokens"])
                    for n, s in self.searches.items()}
        for where, budget in budgets.items():
            if budget is not None and budget > pool_tokens:
                self.problems.append(f"{where}: a budget of {budget:,} tokens is larger than "
                                     f"the whole pool ({pool_tokens:,} tokens)")


def pool_tokens(run_dir: str | Path | None) -> int | None:
    """The pool's size in tokens from its shards' read reports, once tokenisation has run."""
    if run_dir is None:
        return None
    reports = sorted(glob.glob(layout.shard_read_report(str(run_dir), "*")))
    if not reports:
        return None
    return sum(int(json.loads(Path(path).read_text())["tokens"]) for path in reports)


def problems(config: dict, run_dir: str | Path | None = None) -> list[str]:
    checker = Checker(config)
    checker.problems += plugin_checks.family_problems(config)
    checker.problems += plugin_checks.method_problems(config)
    checker.training("pretrain", {}, None)
    for name, variant in config["variants"].items():
        checker.variant(name, variant)
    for name, search in checker.searches.items():
        checker.search(name, search)
    checker.name("evaluation.baseline", config["evaluation"]["baseline"], checker.variants,
                 "variant")
    checker.families()
    checker.raters()
    checker.pool(pool_tokens(run_dir))
    if not checker.problems:  # pools are checked once every name they lean on resolves
        from selectlab.selection.pools import pool_problems

        checker.problems += pool_problems(config)
    return list(dict.fromkeys(checker.problems))


def check_config(config: dict, run_dir: str | Path | None = None) -> None:
    """Raise `ConfigError` listing every reference problem of `config` (see the module)."""
    found = problems(config, run_dir)
    if found:
        raise ConfigError("config refers to names or sizes that do not exist", found)
