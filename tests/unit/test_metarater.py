"""Meta-rater: proxy weights, the loss regressor and weight search, the proxies as variants."""

from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest

from selectlab.report import plan as report_plan
from selectlab.selection import resolve as cfg
from selectlab.selection.metarater import (
    FitSettings,
    ProxyResult,
    RegressorSettings,
    fit_from_proxy_files,
    fit_search,
    holdout_split,
    proxy_weights,
    read_proxy_results,
)
from selectlab.selection.ranks import rank_scores
from selectlab.selection.run import SelectionSpec, select_variant
from selectlab.selection.synthetic import write_synthetic_sidecars
from selectlab.train.resolve import resolve_pretrain

SHARDS = ["s0", "s1"]
DOCS = 1500
REGRESSOR = RegressorSettings(rounds=1000, early_stopping=50, holdout_fraction=0.25,
                              num_leaves=7, min_data_in_leaf=3)


def settings(scores, proxies, **extra) -> FitSettings:
    return FitSettings(search="s", scores=scores, proxies_used=proxies, seed=5,
                       regressor=REGRESSOR, candidates=20_000, top=64, **extra)


def test_proxy_weights_are_seeded_dirichlet_draws_independent_of_the_proxy_count():
    first = [proxy_weights(9, i, 5, 1.0) for i in range(4)]
    assert first == [proxy_weights(9, i, 5, 1.0) for i in range(4)]
    assert all(min(w) >= 0 and abs(sum(w) - 1) < 1e-5 for w in first)
    assert len({tuple(w) for w in first}) == 4
    assert proxy_weights(10, 0, 5, 1.0) != first[0]


def test_holdout_split_keeps_two_of_each_or_none():
    train, held = holdout_split(10, 0.2, np.random.default_rng(0))
    assert len(held) == 2 and len(train) == 8 and not set(train) & set(held)
    train, held = holdout_split(3, 0.5, np.random.default_rng(0))
    assert len(held) == 0 and len(train) == 3


def test_regressor_finds_the_weight_that_determines_the_loss():
    rng = np.random.default_rng(1)
    scores = [f"f.s{i}" for i in range(5)]
    proxies = []
    for i in range(120):
        weights = proxy_weights(3, i, 5, 1.0)
        loss = 4.0 - 1.5 * weights[2] + rng.normal(0, 0.02)
        proxies.append(ProxyResult(f"p{i}", weights, loss))
    result = fit_search(settings(scores, 120), proxies, {})
    learned = np.array(result["weights"])
    assert learned.argmax() == 2 and learned[2] > 0.5
    assert result["regressor"]["heldout_spearman"] > 0.8
    assert result["regressor"]["heldout_proxies"] == 30
    assert len(result["best_predicted"]) == 64
    assert result["predicted_loss_of_learned_weights"] < np.mean([p.loss for p in proxies])


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Proxies selected from synthetic sidecars; a proxy's 'loss' falls with the hidden quality
    of what it selected, and only `scores.good` carries that quality."""
    root = tmp_path_factory.mktemp("metarater")
    quality = write_synthetic_sidecars(root / "attributes", SHARDS, DOCS, seed=2)
    quality = np.concatenate([quality[s] for s in SHARDS])
    scores = ["scores.noise", "scores.good", "dsir.dsir_book"]
    rank_scores(root / "attributes", scores, SHARDS)
    manifests, perplexity = [], []
    for i in range(40):
        name = f"planted__proxy{i:03d}"
        params = {"scores": scores, "weights": proxy_weights(4, i, len(scores), 1.0)}
        select_variant(SelectionSpec(name, "weighted_topk", 60_000, 1, params),
                       root / "attributes", SHARDS, root / "selections" / name)
        chosen = pd.read_parquet(root / "selections" / name / "selection.parquet")
        index = chosen["shard"].map({"s0": 0, "s1": 1}).to_numpy() * DOCS + chosen["row"]
        loss = 3.0 - quality[index.to_numpy()].mean()
        (root / "eval" / name).mkdir(parents=True)
        (root / "eval" / name / "perplexity.json").write_text(
            json.dumps({"validation": {"all": {"nll": loss, "ppl": float(np.exp(loss))}}}))
        manifests.append(root / "selections" / name / "manifest.json")
        perplexity.append(root / "eval" / name / "perplexity.json")
    return root, scores, manifests, perplexity


def test_planted_score_gets_most_of_the_learned_weight(planted, tmp_path):
    root, scores, manifests, perplexity = planted
    result = fit_from_proxy_files(settings(scores, 40), manifests, perplexity)
    assert result["proxies_fitted"] == 40 and result["excluded_proxies"] == {}
    weights = dict(zip(scores, result["weights"], strict=True))
    assert max(weights, key=weights.get) == "scores.good" and weights["scores.good"] > 0.5
    # The learned weights then select as a `metarater` variant, recorded in its manifest.
    fitted = tmp_path / "weights.json"
    fitted.write_text(json.dumps(result))
    manifest = select_variant(
        SelectionSpec("mr", "metarater", 60_000, 1,
                      {"search": "planted", "proxies": 40, "scores": scores}),
        root / "attributes", SHARDS, tmp_path / "mr", upstream=fitted)
    assert manifest["metarater"]["weights"] == weights
    assert manifest["metarater"]["heldout_spearman"] == result["regressor"]["heldout_spearman"]
    with pytest.raises(ValueError, match="rerun fit_metarater"):
        select_variant(SelectionSpec("mr", "metarater", 60_000, 1,
                                     {"search": "planted", "scores": scores[:2]}),
                       root / "attributes", SHARDS, tmp_path / "bad", upstream=fitted)


def test_proxies_without_a_finite_loss_are_excluded_with_a_reason(planted, tmp_path):
    root, scores, manifests, perplexity = planted
    broken = tmp_path / "planted__proxy001" / "perplexity.json"
    broken.parent.mkdir()
    broken.write_text(json.dumps({"validation": {"all": {"nll": float("nan")}}}))
    files = [perplexity[0], broken, *perplexity[2:]]
    results, excluded = read_proxy_results(scores, manifests, files)
    assert len(results) == 39 and set(excluded) == {"planted__proxy001"}
    with pytest.raises(ValueError, match="does not belong"):
        read_proxy_results(scores, manifests[:2], perplexity[1:3])
    with pytest.raises(ValueError, match="selected on"):
        read_proxy_results(scores[::-1], manifests[:1], perplexity[:1])
    with pytest.raises(ValueError, match="expected 5 proxy manifests"):
        fit_from_proxy_files(settings(scores, 5), manifests, perplexity)


@pytest.fixture
def config():
    return {
        "seed": 1, "selection": {"budget_tokens": 1000},
        "pretrain": {"preset": "big", "seq_len": 64, "lr": 0.01},
        "models": {"presets": {"big": {"hidden_size": 64, "num_layers": 2, "num_heads": 2},
                               "small": {"hidden_size": 8, "num_layers": 1, "num_heads": 1}}},
        "variants": {
            "uniform": {"family": "baseline", "method": "uniform"},
            "mr16": {"family": "metarater", "method": "metarater", "label": "MR 16",
                     "params": {"search": "all", "proxies": 16}},
            "mr": {"family": "metarater", "method": "metarater", "params": {"search": "all"}},
            "curr": {"family": "qurating", "method": "curriculum",
                     "params": {"of": "uniform", "order_by": "qurater.required_expertise"}},
        },
        "metarater": {
            "searches": {"all": {"scores": ["signals.a", "-dsir.b", "prrc.c"], "proxies": 32,
                                 "preset": "small", "budget_tokens": 500, "seed": 7}},
            "regressor": {"objective": "l1"}, "candidates": 1000, "top": 8,
        },
    }


def test_proxies_are_variants_with_their_own_weights_preset_and_budget(config):
    names = cfg.proxy_variant_names(config)
    assert names[:2] == ["all__proxy000", "all__proxy001"] and len(names) == 32
    assert cfg.parse_proxy_name("all__proxy007") == ("all", 7)
    assert cfg.parse_proxy_name("uniform") is None
    selection = cfg.resolve_selection(config, "all__proxy003")
    assert selection["method"] == "weighted_topk" and selection["budget_tokens"] == 500
    assert selection["params"]["weights"] == proxy_weights(7, 3, 3, 1.0)
    assert resolve_pretrain(config, "all__proxy003")["preset_name"] == "small"
    assert cfg.selection_raters(config, "all__proxy003") == ["dsir", "prrc", "signals"]
    assert cfg.proxy_names(config, "all", 16) == names[:16]
    with pytest.raises(ValueError, match="has 32 proxies, not 33"):
        cfg.variant_entry(config, "all__proxy032")
    with pytest.raises(KeyError, match="no variant"):
        cfg.variant_entry(config, "other__proxy001")
    with pytest.raises(ValueError, match="32 proxies, 40 asked"):
        cfg.proxy_names(config, "all", 40)


def test_metarater_variants_read_their_search_and_fitted_weights(config):
    selection = cfg.resolve_selection(config, "mr16")
    assert selection["params"]["scores"] == ["signals.a", "-dsir.b", "prrc.c"]
    assert cfg.selection_raters(config, "mr16") == ["dsir", "prrc", "signals"]
    assert cfg.selection_upstream(config, "r", "mr16") == ["r/metarater/all/n16/weights.json"]
    assert cfg.selection_upstream(config, "r", "mr") == ["r/metarater/all/n32/weights.json"]
    assert cfg.selection_upstream(config, "r", "curr") == ["r/selections/uniform/selection.parquet"]
    assert cfg.selection_upstream(config, "r", "uniform") == []
    assert cfg.metarater_fits(config) == [("all", 16), ("all", 32)]
    assert report_plan.metarater_figure_fits(config) == [("all", 32)]
    assert report_plan.metarater_report(config)["variants"] == [["all", 16, "MR 16"],
                                                                ["all", 32, "mr"]]
    fit = cfg.resolve_metarater_fit(config, "all", 16)
    assert fit["proxies_used"] == 16 and fit["seed"] == 7 and fit["regressor"]["objective"] == "l1"
    assert FitSettings.from_dict(fit).regressor.objective == "l1"


def test_bad_metarater_references_are_clear_errors(config):
    bad = copy.deepcopy(config)
    bad["variants"]["mr"]["params"] = {"search": "nope"}
    with pytest.raises(ValueError, match="unknown Meta-rater search 'nope'"):
        cfg.resolve_selection(bad, "mr")
    bad["variants"]["mr"]["params"] = {"search": "all", "proxies": 64}
    with pytest.raises(ValueError, match="32 proxies, 64 asked"):
        cfg.resolve_selection(bad, "mr")
    bad["variants"]["curr"]["params"]["of"] = "missing"
    with pytest.raises(ValueError, match="curriculum over unknown variant"):
        cfg.resolve_selection(bad, "curr")
    bad["variants"]["curr"]["params"]["of"] = "curr"
    with pytest.raises(ValueError, match="itself a curriculum"):
        cfg.resolve_selection(bad, "curr")


def test_a_curriculum_has_its_base_variants_budget(config):
    config["variants"]["uniform"]["budget_scale"] = 1.5
    assert cfg.resolve_selection(config, "curr")["budget_tokens"] == 1500


def test_scores_combined_on_ranks_are_ranked_once_per_family(config):
    config["variants"]["mean"] = {"family": "metarater", "method": "mean_rating",
                                  "params": {"scores": ["prrc.c", "prrc.d"]}}
    assert cfg.ranked_scores(config) == {"dsir": ["b"], "prrc": ["c", "d"], "signals": ["a"]}
    assert cfg.selection_ranks(config, "all__proxy003") == ["dsir", "prrc", "signals"]
    assert cfg.selection_ranks(config, "mean") == ["prrc"]
    assert cfg.selection_ranks(config, "uniform") == []


def test_a_search_reuses_another_searchs_identical_selections_explicitly(config):
    searches = config["metarater"]["searches"]
    searches["big"] = searches["all"] | {"proxies": 8, "preset": "big",
                                         "selections_from": "all"}
    entry = cfg.variant_entry(config, "big__proxy005")
    assert entry["shared_from"] == "all__proxy005"
    selection = cfg.resolve_selection(config, "big__proxy005")
    mine, theirs = selection, cfg.resolve_selection(config, "all__proxy005")
    assert selection["shared_from"] == "all__proxy005" and "shared_from" not in theirs
    assert {k: mine[k] for k in ("method", "params", "seed", "budget_tokens")} == \
        {k: theirs[k] for k in ("method", "params", "seed", "budget_tokens")}
    assert cfg.selection_upstream(config, "r", "big__proxy005") == [
        "r/selections/all__proxy005/selection.parquet"]
    assert cfg.selection_raters(config, "big__proxy005") == []
    assert cfg.selection_ranks(config, "big__proxy005") == []
    assert resolve_pretrain(config, "big__proxy005")["preset_name"] == "big"
    searches["big"]["seed"] = 8  # different weights: sharing would be silent and wrong
    with pytest.raises(ValueError, match=r"cannot share 'all'.*\['params', 'seed'\]"):
        cfg.variant_entry(config, "big__proxy005")
    searches["big"] = searches["all"] | {"selections_from": "nope"}
    with pytest.raises(ValueError, match="selections_from 'nope'"):
        cfg.variant_entry(config, "big__proxy001")


def test_a_shared_selection_is_copied_and_the_manifest_says_whose(planted, tmp_path):
    root, scores, manifests, _ = planted
    source = manifests[3].parent / "selection.parquet"
    original = json.loads(manifests[3].read_text())
    spec = SelectionSpec("big__proxy003", "weighted_topk", original["budget_tokens"],
                         original["seed"], original["params"], shared_from="planted__proxy003")
    manifest = select_variant(spec, root / "attributes", SHARDS, tmp_path / "big", source)
    assert manifest == original | {"variant": "big__proxy003",
                                    "selection_shared_from": "planted__proxy003"}
    assert pd.read_parquet(tmp_path / "big" / "selection.parquet").equals(
        pd.read_parquet(source))
    other = SelectionSpec("x", "weighted_topk", original["budget_tokens"], original["seed"] + 1,
                          original["params"], shared_from="planted__proxy003")
    with pytest.raises(ValueError, match="cannot share"):
        select_variant(other, root / "attributes", SHARDS, tmp_path / "x", source)
