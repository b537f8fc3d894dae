"""Selection cases covering every method and option, and the outputs the in-memory selection
gave on them before selection streamed (`data/selection_reference.json`).

The reference was captured once from the in-memory code (commit 6509020) with
`PYTHONPATH=src python tests/unit/selection_cases.py`; a test checks that today's selection,
in memory and streamed under a ceiling that forces several passes, still gives exactly those
documents in that order, so no variant's numbers moved.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from selectlab.selection.synthetic import write_synthetic_sidecars

REFERENCE = Path(__file__).parent / "data" / "selection_reference.json.gz"
SHARDS = ["shard_a", "shard_b", "shard_c"]
DOCS = 1500
BUDGET = 150_000
MR_SCORES = ["scores.good", "-scores.bad", "scores.noise", "dsir.dsir_wikipedia"]
MR_WEIGHTS = [0.45, 0.25, 0.1, 0.2]

# name -> (method, budget, seed, params); `upstream` cases read another case's output.
CASES = {
    "uniform": ("uniform", BUDGET, 7, {}),
    "uniform_other_seed": ("uniform", 90_000, 11, {}),
    "sample_top": ("rating_sample", BUDGET, 7, {"score": "scores.good", "tau": 0}),
    "sample_top_rating": ("rating_sample", BUDGET, 7, {"score": "scores.rating", "tau": 0}),
    "sample_t1": ("rating_sample", BUDGET, 7, {"score": "scores.good", "tau": 1.0}),
    "sample_t2": ("rating_sample", BUDGET, 7, {"score": "scores.good", "tau": 2.0}),
    "inverse": ("rating_sample", BUDGET, 7, {"score": "-scores.good", "tau": 2.0}),
    "mix": ("rating_mix", BUDGET, 7, {"scores": ["scores.good", "scores.rating"], "tau": 2.0}),
    "ppl_low": ("topk", BUDGET, 7, {"score": "-scores.ppl"}),
    "ppl_high": ("topk", BUDGET, 3, {"score": "scores.ppl"}),
    "criterion": ("topk", BUDGET, 7, {"score": "scores.rating",
                                       "strata": ["set_name", "levels.domain"]}),
    "level_topk_where": ("topk", 30_000, 7, {"score": "levels.overall_score",
                                              "where": {"levels.domain": ["A"]}, "strata": []}),
    "where_numeric": ("uniform", 40_000, 5, {"where": {"levels.overall_score": [4, 5]}}),
    "gappy_topk": ("topk", 50_000, 1, {"score": "gappy.good"}),
    "dsir": ("dsir", BUDGET, 7, {"scores": ["dsir.dsir_wikipedia", "dsir.dsir_book"]}),
    "dsir_one": ("dsir", BUDGET, 9, {"scores": ["dsir.dsir_wikipedia"]}),
    "semdedup": ("semdedup", BUDGET, 7, {"embedding": "embedding.embedding", "clusters": 6,
                                         "fit_sample": 2000}),
    "mean": ("mean_rating", BUDGET, 7, {"scores": ["scores.good", "-scores.bad"]}),
    "intersection": ("intersection", BUDGET, 7, {"scores": ["scores.good", "scores.rating"]}),
    "weighted": ("weighted_topk", BUDGET, 7, {"scores": ["scores.good", "scores.noise"],
                                              "weights": [0.8, 0.2]}),
    "weighted_gappy": ("weighted_topk", BUDGET, 2, {"scores": ["gappy.good", "scores.rating"],
                                                    "weights": [0.5, 0.5],
                                                    "strata": ["levels.domain"]}),
    "metarater": ("metarater", BUDGET, 4, {"search": "s", "proxies": 8, "scores": MR_SCORES}),
    **{f"level{level}": ("score_level", BUDGET, 7, {"score": "levels.overall_score",
                                                    "level": level})
       for level in range(1, 6)},
    "level1_short": ("score_level", 1_000_000, 7, {"score": "levels.overall_score", "level": 1}),
    "level1_upsampled": ("score_level", 1_000_000, 7, {"score": "levels.overall_score",
                                                       "level": 1, "upsample_short": True}),
    "topk_upsampled": ("topk", 400_000, 6, {"score": "scores.good", "upsample_short": True,
                                            "strata": ["levels.overall_score"],
                                            "where": {"scores.rating": [4, 5]}}),
    "beyond_pool": ("topk", 1_300_000, 7, {"score": "gappy.good"}),
    "curriculum_up": ("curriculum", BUDGET, 7, {"of": "uniform", "order_by": "scores.good"}),
    "curriculum_down": ("curriculum", BUDGET, 7, {"of": "sample_t1", "order_by": "scores.rating",
                                                  "order": "descending"}),
    "curriculum_shuffled": ("curriculum", BUDGET, 8, {"of": "dsir"}),
}


def build_inputs(root: Path) -> Path:
    """Synthetic sidecars, a `gappy` family missing every third score, fitted weights, and the
    pool's rank sidecars of every score a combining method reads."""
    attributes = root / "attributes"
    write_synthetic_sidecars(attributes, SHARDS, DOCS, seed=3)
    (attributes / "gappy").mkdir()
    for shard in SHARDS:
        frame = pd.read_parquet(attributes / "scores" / f"{shard}.parquet")[["id", "good"]]
        frame.loc[frame.index % 3 == 0, "good"] = None
        frame.to_parquet(attributes / "gappy" / f"{shard}.parquet", index=False)
    (root / "weights.json").write_text(json.dumps({
        "scores": MR_SCORES, "weights": MR_WEIGHTS, "proxies_used": 8,
        "regressor": {"heldout_spearman": 0.5, "best_iteration": 12}}))
    rank_inputs(attributes)
    return attributes


def rank_inputs(attributes: Path) -> None:
    from selectlab.selection.ranks import rank_family, ranked_columns

    combining = ("weighted_topk", "mean_rating", "intersection", "metarater")
    refs = [ref for method, _, _, params in CASES.values() if method in combining
            for ref in params["scores"]]
    for family, columns in ranked_columns(refs).items():
        rank_family(attributes, family, columns, SHARDS, capacity=1000, spill=False)


def upstream_of(name: str, root: Path, out: Path) -> Path | None:
    method, _, _, params = CASES[name]
    if method == "metarater":
        return root / "weights.json"
    if method == "curriculum":
        return out / params["of"] / "selection.parquet"
    return None


def positions(selection: pd.DataFrame) -> list[int]:
    number = {shard: i for i, shard in enumerate(SHARDS)}
    return (selection["shard"].map(number).to_numpy() * DOCS
            + selection["row"].to_numpy()).tolist()


def run_cases(root: Path, select) -> dict[str, tuple[dict, pd.DataFrame]]:
    """Every case through `select(spec, attributes, shards, out_dir, upstream)`."""
    from selectlab.selection.run import SelectionSpec

    attributes = build_inputs(root)
    out = root / "selections"
    results = {}
    for name, (method, budget, seed, params) in CASES.items():
        manifest = select(SelectionSpec(name, method, budget, seed, params), attributes, SHARDS,
                          out / name, upstream_of(name, root, out))
        results[name] = (manifest, pd.read_parquet(out / name / "selection.parquet"))
    return results


def capture(root: Path) -> dict:
    from selectlab.selection.run import select_variant

    results = run_cases(root, select_variant)
    return {name: {"positions": positions(selection), "manifest": manifest}
            for name, (manifest, selection) in results.items()}


def load_reference() -> dict:
    with gzip.open(REFERENCE, "rt") as handle:
        return json.load(handle)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        reference = capture(Path(tmp))
    REFERENCE.parent.mkdir(exist_ok=True)
    with gzip.open(REFERENCE, "wt") as handle:
        json.dump(reference, handle, default=lambda v: v.item() if isinstance(v, np.generic)
                  else str(v))
    sizes = {name: len(case["positions"]) for name, case in reference.items()}
    print(f"{len(reference)} cases written to {REFERENCE}: {sizes}", file=sys.stderr)
