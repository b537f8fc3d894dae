"""Every selection method on synthetic sidecars with a planted quality signal.

`selection.synthetic` gives each document a hidden quality; `scores.good` tracks it, `scores.bad`
is its opposite, `scores.noise` is unrelated, `levels.overall_score` is a 1-5 level of it.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from selectlab.selection.methods import METHODS, required_raters, score_columns
from selectlab.selection.ranks import rank_scores
from selectlab.selection.run import SelectionSpec, select_variant
from selectlab.selection.synthetic import write_synthetic_sidecars

SHARDS = ["shard_a", "shard_b", "shard_c"]
DOCS = 1500
BUDGET = 150_000

VARIANTS = {
    "uniform": ("uniform", {}),
    "sample_top": ("rating_sample", {"score": "scores.good", "tau": 0}),
    "sample_t1": ("rating_sample", {"score": "scores.good", "tau": 1.0}),
    "sample_t2": ("rating_sample", {"score": "scores.good", "tau": 2.0}),
    "inverse": ("rating_sample", {"score": "-scores.good", "tau": 1.0}),
    "mix": ("rating_mix", {"scores": ["scores.good", "scores.rating"], "tau": 2.0}),
    "ppl_low": ("topk", {"score": "-scores.ppl"}),
    "ppl_high": ("topk", {"score": "scores.ppl"}),
    "criterion": ("topk", {"score": "scores.rating", "strata": ["set_name", "levels.domain"]}),
    "dsir": ("dsir", {"scores": ["dsir.dsir_wikipedia", "dsir.dsir_book"]}),
    "semdedup": ("semdedup", {"embedding": "embedding.embedding", "clusters": 6,
                              "fit_sample": 2000}),
    "mean": ("mean_rating", {"scores": ["scores.good", "-scores.bad"]}),
    "intersection": ("intersection", {"scores": ["scores.good", "scores.rating"]}),
    "weighted": ("weighted_topk", {"scores": ["scores.good", "scores.noise"],
                                   "weights": [0.8, 0.2]}),
    **{f"level{level}": ("score_level", {"score": "levels.overall_score", "level": level})
       for level in range(1, 6)},
}


@pytest.fixture(scope="module")
def attributes(tmp_path_factory):
    directory = tmp_path_factory.mktemp("attributes")
    quality = write_synthetic_sidecars(directory, SHARDS, DOCS, seed=3)
    rank_scores(directory, ["scores.good", "scores.bad", "scores.rating", "scores.noise"], SHARDS)
    return directory, np.concatenate([quality[s] for s in SHARDS])


@pytest.fixture(scope="module")
def selections(attributes, tmp_path_factory):
    directory, _ = attributes
    out = tmp_path_factory.mktemp("selections")
    results = {}
    for name, (method, params) in VARIANTS.items():
        manifest = select_variant(SelectionSpec(name, method, BUDGET, 7, params), directory,
                                  SHARDS, out / name)
        results[name] = (manifest, pd.read_parquet(out / name / "selection.parquet"))
    return results


def pool_index(selection: pd.DataFrame) -> np.ndarray:
    number = {shard: i for i, shard in enumerate(SHARDS)}
    return selection["shard"].map(number).to_numpy() * DOCS + selection["row"].to_numpy()


def mean_quality(selections, attributes, name) -> float:
    return float(attributes[1][pool_index(selections[name][1])].mean())


def test_every_registered_method_is_exercised():
    assert {method for method, _ in VARIANTS.values()} | {"metarater", "curriculum"} == set(
        METHODS)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_budget_within_one_document_no_duplicates_sources_kept(name, selections, attributes):
    manifest, selection = selections[name]
    total = selection["n_tokens"].sum()
    assert manifest["selected_tokens"] == total
    assert BUDGET <= total < BUDGET + selection["n_tokens"].max()
    assert not selection["id"].duplicated().any()
    meta = pd.concat(pd.read_parquet(attributes[0] / "meta" / f"{s}.parquet") for s in SHARDS)
    pool_share = meta.groupby("set_name")["n_tokens"].sum() / meta["n_tokens"].sum()
    share = selection.groupby("set_name")["n_tokens"].sum() / total
    # Stated tolerance: each stratum lands within one largest document of its quota, so a
    # source is within (its strata) x (largest document) tokens of its share.
    strata_per_source = len(manifest["strata"]) / len(pool_share)
    tolerance = strata_per_source * meta["n_tokens"].max() / total
    assert (share - pool_share).abs().max() < tolerance
    assert manifest["short_strata"] == [] and manifest["upsampled"] == {}


def test_quality_methods_find_the_planted_signal(selections, attributes):
    q = {name: mean_quality(selections, attributes, name) for name in VARIANTS}
    assert q["sample_top"] > q["sample_t1"] > q["sample_t2"] > q["uniform"] + 0.05
    assert q["inverse"] < q["uniform"] - 0.05
    assert q["ppl_low"] > q["uniform"] + 0.2 > q["ppl_high"] + 0.4
    for name in ("mix", "criterion", "dsir", "mean", "intersection", "weighted"):
        assert q[name] > q["uniform"] + 0.05, name
    levels = [q[f"level{level}"] for level in range(1, 6)]
    assert levels == sorted(levels)


def test_score_levels_hold_only_their_level(selections, attributes):
    for level in range(1, 6):
        index = pool_index(selections[f"level{level}"][1])
        values = pd.concat(pd.read_parquet(attributes[0] / "levels" / f"{s}.parquet")
                           for s in SHARDS)["overall_score"].to_numpy()
        assert (values[index] == level).all()


def test_source_by_domain_strata_keep_their_shares(selections, attributes):
    manifest, _ = selections["criterion"]
    assert manifest["strata_by"] == ["set_name", "levels.domain"]
    assert len(manifest["strata"]) == 16  # 4 sources x 4 domains
    for stratum in manifest["strata"]:
        assert abs(stratum["selected_tokens"] - stratum["quota_tokens"]) <= 1200 * 2


def test_rating_mix_is_a_deduplicated_union_subsampled(selections):
    manifest, selection = selections["mix"]
    mix = manifest["mix"]
    assert set(mix["component_documents"]) == {"scores.good", "scores.rating"}
    assert max(mix["component_documents"].values()) < mix["union_documents"]
    assert mix["union_documents"] < sum(mix["component_documents"].values())
    assert len(selection) < mix["union_documents"]


def test_semdedup_keeps_documents_far_from_their_centroid(selections):
    manifest, _ = selections["semdedup"]
    assert manifest["semdedup"]["clusters"] == 6
    assert manifest["semdedup"]["documents_without_embedding"] == 0


def test_uniform_overlap_reference_is_the_uniform_variant(selections):
    assert selections["uniform"][0]["overlap_with_uniform"]["jaccard"] == 1.0
    assert selections["sample_top"][0]["overlap_with_uniform"]["jaccard"] < 0.5


def test_a_variant_with_its_own_seed_is_compared_with_the_uniform_variants_draw(
        selections, attributes, tmp_path):
    # A second uniform draw (own seed 8) against the uniform variant (seed 7): its overlap is
    # that of two independent draws, measured against seed 7's documents, not its own keys.
    directory, _ = attributes
    manifest = select_variant(SelectionSpec("uniform_b", "uniform", BUDGET, 8, {},
                                            reference_seed=7), directory, SHARDS, tmp_path)
    mine = set(pool_index(pd.read_parquet(tmp_path / "selection.parquet")))
    theirs = set(pool_index(selections["uniform"][1]))
    overlap = manifest["overlap_with_uniform"]
    assert overlap["reference"] == "uniform, seed 7, same budget"
    assert overlap["jaccard"] == pytest.approx(len(mine & theirs) / len(mine | theirs), abs=1e-4)
    assert overlap["jaccard"] < 0.5  # a tenth of the pool each: ~0.05 when independent


def test_curriculum_keeps_a_selection_and_orders_it_by_a_score(selections, attributes, tmp_path):
    base = tmp_path / "base.parquet"
    selections["uniform"][1].to_parquet(base)
    for direction in ("ascending", "descending"):
        manifest = select_variant(
            SelectionSpec("curr", "curriculum", BUDGET, 7,
                          {"of": "uniform", "order_by": "scores.good", "order": direction}),
            attributes[0], SHARDS, tmp_path / direction, upstream=base)
        ordered = pd.read_parquet(tmp_path / direction / "selection.parquet")
        assert sorted(ordered["id"]) == sorted(selections["uniform"][1]["id"])
        good = pd.concat(pd.read_parquet(attributes[0] / "scores" / f"{s}.parquet")
                         for s in SHARDS)["good"].to_numpy()[pool_index(ordered)]
        steps = np.diff(good)
        assert (steps >= 0).all() if direction == "ascending" else (steps <= 0).all()
        assert manifest["order"] == {"by": "scores.good", "direction": direction}
        # The uniform base filled every source's quota to within half a document; keeping its
        # documents does not make a stratum short.
        assert manifest["short_strata"] == selections["uniform"][0]["short_strata"] == []
        assert all(s["eligible_tokens"] is None for s in manifest["strata"])


def test_where_filter_and_whole_pool_stratum(attributes, tmp_path):
    manifest = select_variant(
        SelectionSpec("cpt", "topk", 30_000, 7, {"score": "levels.overall_score",
                                                 "where": {"levels.domain": ["A"]},
                                                 "strata": []}),
        attributes[0], SHARDS, tmp_path)
    selection = pd.read_parquet(tmp_path / "selection.parquet")
    domains = pd.concat(pd.read_parquet(attributes[0] / "levels" / f"{s}.parquet")
                        for s in SHARDS)["domain"].to_numpy()[pool_index(selection)]
    assert set(domains) == {"A"}
    assert manifest["excluded"]["filtered_out"] > 0 and manifest["strata_by"] == []


def test_short_stratum_reported_and_upsampled_only_when_asked(attributes, tmp_path):
    params = {"score": "levels.overall_score", "level": 1}
    plain = select_variant(SelectionSpec("l1", "score_level", 1_000_000, 7, params),
                           attributes[0], SHARDS, tmp_path / "plain")
    assert plain["short_strata"] and not plain["budget_reached"] and plain["upsampled"] == {}
    repeated = select_variant(
        SelectionSpec("l1", "score_level", 1_000_000, 7, params | {"upsample_short": True}),
        attributes[0], SHARDS, tmp_path / "upsampled")
    assert repeated["budget_reached"] and repeated["upsampled"]
    assert repeated["unique_documents"] < repeated["selected_documents"]
    # Each repeated document's tokens counted once. The budget is near the pool's size, so
    # every level-1 stratum is short and both selections hold all of level 1.
    assert plain["unique_tokens"] == plain["selected_tokens"] < plain["budget_tokens"]
    assert repeated["unique_tokens"] == plain["unique_tokens"] < repeated["selected_tokens"]


def test_missing_scores_are_never_chosen_and_counted(attributes, tmp_path):
    directory = tmp_path / "attributes"
    for family in ("meta", "scores"):
        (directory / family).mkdir(parents=True)
        for shard in SHARDS:
            frame = pd.read_parquet(attributes[0] / family / f"{shard}.parquet")
            if family == "scores":
                frame.loc[frame.index % 3 == 0, "good"] = None
            frame.to_parquet(directory / family / f"{shard}.parquet")
    manifest = select_variant(SelectionSpec("t", "topk", 50_000, 1, {"score": "scores.good"}),
                              directory, SHARDS, tmp_path / "out")
    selection = pd.read_parquet(tmp_path / "out" / "selection.parquet")
    assert (selection["row"] % 3 != 0).all()
    assert manifest["excluded"]["missing_scores"]["scores.good"] == len(SHARDS) * DOCS // 3


def test_a_sidecar_with_the_wrong_row_count_is_an_error(attributes, tmp_path):
    directory = tmp_path / "attributes"
    for family in ("meta", "scores"):
        (directory / family).mkdir(parents=True)
        for shard in SHARDS:
            frame = pd.read_parquet(attributes[0] / family / f"{shard}.parquet")
            if family == "scores" and shard == "shard_b":
                frame = frame.iloc[:-1]
            frame.to_parquet(directory / family / f"{shard}.parquet")
    with pytest.raises(ValueError, match="scores/shard_b has 1499 rows, meta has 1500"):
        select_variant(SelectionSpec("t", "topk", 50_000, 1, {"score": "scores.good"}),
                       directory, SHARDS, tmp_path / "out")


def test_unknown_method_and_bad_reference_are_errors():
    with pytest.raises(ValueError, match="unknown selection method 'best'"):
        SelectionSpec("x", "best", 10, 0)
    with pytest.raises(ValueError, match="family.column"):
        required_raters({"score": "educational_value"})


def test_required_raters_covers_every_param_that_names_a_score():
    params = {"score": "-qurater.educational_value", "order_by": "qurater.required_expertise",
              "scores": ["prrc.reasoning", "-wanjuan.advertisement"], "embedding": "embedding.e",
              "strata": ["set_name", "dataman.domain"], "where": {"fineweb_edu.edu_score": [3]}}
    assert required_raters(params) == ["dataman", "embedding", "fineweb_edu", "prrc", "qurater",
                                       "wanjuan"]
    assert ("qurater", "educational_value") in score_columns(params)
    assert required_raters({"scores": ["meta.n_tokens"]}) == []


def test_manifest_is_json_with_strata_and_params(selections):
    manifest, _ = selections["criterion"]
    assert json.loads(json.dumps(manifest))["params"]["score"] == "scores.rating"
    assert manifest["seed"] == 7 and manifest["method"] == "topk"
