"""Variant configs: the schema checks each method's params; every variant of the shipped
configs (embedded default, tests-only, full scale, claims demo) resolves to a selection and a
pretraining."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from snakemake.utils import validate as snakemake_validate

from selectlab import config as cfg_loader
from selectlab import resources as res
from selectlab.config import read_with_includes
from selectlab.config_errors import ConfigError
from selectlab.schema import forget_schemas, validate_config
from selectlab.selection import resolve as cfg
from selectlab.selection.grids import grid_variants
from selectlab.train import resolve as train

REPO = Path(__file__).resolve().parents[2]
SCHEMA = str(REPO / "config" / "schema" / "config.schema.yaml")
VARIANT_SET = str(REPO / "config" / "schema" / "variant_set.schema.yaml")
CONFIGS = {name: REPO / path for name, path in
           {"default": "config/config.yaml", "test": ".test/config.yaml",
            "paper": "config/paper.yaml", "claims_demo": "config/claims_demo.yaml"}.items()}


def load(name: str) -> dict:
    """A shipped config with its variant grids expanded, as the workflow sees it."""
    return cfg_loader.load_config(CONFIGS[name])


def validate(config: dict, schema: str) -> dict:
    return validate_config(config, schema)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_schema_files_are_read_once_and_fill_in_snakemakes_defaults(name, monkeypatch):
    # What the Snakefile checks: the config as written, then the variants its grids expand into;
    # job sizes then read their defaults from the same parsed files.
    theirs, ours = (read_with_includes(CONFIGS[name]) for _ in range(2))
    snakemake_validate(theirs, SCHEMA)
    their_grids = grid_variants(theirs["variants"])
    snakemake_validate(their_grids, VARIANT_SET)
    forget_schemas()
    res._schema.cache_clear()
    reads = []
    read_text = Path.read_text
    monkeypatch.setattr(Path, "read_text",
                        lambda self, *args, **kw: reads.append(self.name)
                        or read_text(self, *args, **kw))
    validate(ours, SCHEMA)
    our_grids = validate_config(grid_variants(ours["variants"]), VARIANT_SET)
    assert res.rule_shape(ours, "select")["runtime"] == 120
    assert res.schema_default("raters.schema.yaml", "$defs", "resources")
    assert ours == theirs and ours["selection"]["memory_mb"] == 8000
    assert our_grids == their_grids
    assert sorted(reads) == sorted(p.name for p in Path(SCHEMA).parent.glob("*.schema.yaml"))


@pytest.mark.parametrize("name", list(CONFIGS))
def test_shipped_configs_validate_and_every_variant_resolves(name):
    validate(read_with_includes(CONFIGS[name]), SCHEMA)
    config = load(name)
    proxies = [name for search in cfg.metarater_searches(config)
               for name in cfg.proxy_names(config, search)[:3]]
    names = list(config["variants"]) + proxies
    for variant in names:
        selection = cfg.resolve_selection(config, variant)
        assert selection["budget_tokens"] > 0
        train.resolve_pretrain(config, variant)
        cfg.selection_raters(config, variant)
        cfg.selection_ranks(config, variant)
        for parent in [train.init_variant(config, variant)]:
            assert parent is None or parent in config["variants"]
    for search, proxies in cfg.metarater_fits(config):
        assert cfg.resolve_metarater_fit(config, search, proxies)["proxies_used"] == proxies


def test_paper_config_lists_every_family_of_the_three_papers():
    config = load("paper")
    families = {v["family"] for v in config["variants"].values()}
    assert {"baseline", "qurating", "qurating_curriculum", "dataman", "dataman_level",
            "dataman_domain", "budget_60b", "metarater_baseline", "metarater",
            "metarater_combination", "metarater_proxies", "metarater_ablation",
            "scale"} <= families
    methods = {v["method"] for v in config["variants"].values()}
    assert methods >= {"uniform", "rating_sample", "rating_mix", "topk", "score_level", "dsir",
                       "semdedup", "mean_rating", "intersection", "metarater", "curriculum"}
    dataman = [v for v in config["variants"].values() if v["family"] == "dataman"]
    assert len(dataman) == 13
    assert all(v["params"]["strata"] == ["set_name", "dataman.domain"] for v in dataman)
    proxies = {s: cfg.metarater_searches(config)[s]["proxies"] for s in ("prrc4", "all25")}
    assert proxies == {"prrc4": 256, "all25": 512}
    assert len(cfg.metarater_searches(config)["all25"]["scores"]) == 25
    assert sorted(n for s, n in cfg.metarater_fits(config) if s == "all25") == [32, 64, 128, 256,
                                                                             512]
    assert config["selection"]["budget_tokens"] == 30_000_000_000
    # The 46M proxy ablation trains on the 18M search's selections, and says so.
    assert cfg.resolve_selection(config, "all25_46m__proxy007")["shared_from"] == "all25__proxy007"
    assert sorted(cfg.ranked_scores(config)) == ["dsir", "fineweb_edu", "prrc", "qurater",
                                                 "signals", "wanjuan"]


def test_paper_config_judges_rates_and_annotates_with_real_models():
    config = load("paper")
    assert config["judge"]["backend"]["kind"] == "vllm"
    assert config["judge"]["protocols"]["qurating"]["pairs"] == 250_000
    raters = config["raters"]
    assert raters["defaults"]["train_backbone"] is True and raters["defaults"]["window"] == 512
    assert raters["dataman"]["objective"] == "generative"
    assert raters["dataman"]["inference"]["kind"] == "vllm"
    assert set(raters["fineweb_edu"]["pretrained"]) == {"edu_score"}
    assert set(raters["wanjuan"]["pretrained"]) == {"advertisement", "fluency"}
    families = config["annotate"]["families"]
    assert families["dataman"]["kind"] == "rater_generative"
    models = [f for f in families.values() if f["kind"] not in ("signals", "dsir")]
    assert len(models) == 7 and all(f["resources"]["gpu"] == 1 for f in models)
    assert config["analysis"]["sample_rows"] == 200_000


@pytest.mark.parametrize("mutate, message", [
    (lambda v: v["params"].update(tau=-1), "tau"),
    (lambda v: v["params"].update(temperature=2), "temperature"),
    (lambda v: v["params"].update(score="educational_value"), "educational_value"),
    (lambda v: v["params"].update(strata=["source"]), "source"),
])
def test_schema_rejects_bad_params_per_method(mutate, message):
    config = load("default")
    variant = {"family": "qurating", "method": "rating_sample",
               "params": {"score": "qurater.educational_value", "tau": 2.0}}
    config["variants"]["edu"] = copy.deepcopy(variant)
    validate(copy.deepcopy(config), SCHEMA)
    mutate(config["variants"]["edu"])
    with pytest.raises(ConfigError) as error:
        validate(config, SCHEMA)
    assert message in str(error.value)


def test_schema_reserves_proxy_names_and_checks_searches():
    config = load("default")
    config["variants"]["model_free__proxy001"] = {"family": "baseline", "method": "uniform"}
    with pytest.raises(ConfigError, match="variants"):
        validate(config, SCHEMA)
    config = load("default")
    config["metarater"]["searches"]["model_free"]["proxies"] = 1
    with pytest.raises(ConfigError, match="proxies"):
        validate(config, SCHEMA)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_configs_only_read_sidecars_their_annotation_writes(name):
    config = load(name)
    families = set(config["annotate"]["families"])
    for variant in list(config["variants"]) + cfg.proxy_variant_names(config):
        assert set(cfg.selection_raters(config, variant)) <= families, variant


def test_each_variant_selects_with_its_own_seed_and_trains_with_the_runs():
    # Issue: one seed for all variants made top-k tie-breaks and level draws reuse uniform's
    # random keys. Each variant's selection seed is derived from the run seed and its name.
    config = load("paper")
    names = list(config["variants"])
    seeds = {name: cfg.variant_seed(config, name) for name in names}
    assert len(set(seeds.values())) == len(names)
    assert seeds["uniform"] == cfg.derived_seed(config["seed"], "uniform")
    assert cfg.derived_seed(config["seed"], "uniform") != cfg.derived_seed(config["seed"] + 1,
                                                                          "uniform")
    for name in names:
        resolved = cfg.resolve_selection(config, name)
        assert resolved["seed"] == seeds[name]
        assert resolved["reference_seed"] == seeds["uniform"]
        assert train.resolve_pretrain(config, name)["settings"]["seed"] == config["seed"]
    config["variants"]["uniform"]["seed"] = 5  # a set seed wins, and moves the reference
    assert cfg.resolve_selection(config, "overall_l5")["reference_seed"] == 5
    proxy = cfg.proxy_names(config, "all25")[0]  # proxies keep their search's seed: the
    assert cfg.variant_seed(config, proxy) == config["seed"]  # 46M ablation reuses the draws
