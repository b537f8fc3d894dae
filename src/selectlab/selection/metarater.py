"""Meta-rater's weight search: proxy weights, the loss regressor, and the candidate search.

1. Each proxy i of a search draws weights w_i ~ Dirichlet(alpha * 1) over the search's scores
   (`proxy_weights`, seeded by the search seed and i, so adding proxies never changes the first
   ones); its selection is the top-k by sum_j w_ij * percentile_rank(score_j) and its small
   model's validation loss l_i is recorded by the ordinary pretrain/eval jobs.
2. A LightGBM regressor learns l ~ f(w) on the first N proxies: a seeded held-out split gives
   early stopping and the held-out Spearman correlation; the final regressor is refitted on all
   N proxies with the early-stopped number of rounds.
3. `candidates` fresh Dirichlet draws are scored with f; the `top` lowest predictions are
   averaged into the learned weights.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

# Candidates stored with their predictions for the loss-landscape figure.
LANDSCAPE_POINTS = 500
OBJECTIVES = {"l2": "regression", "l1": "regression_l1"}


def proxy_weights(seed: int, index: int, n_scores: int, alpha: float) -> list[float]:
    """Proxy `index`'s weight vector: a Dirichlet draw from its own seeded stream."""
    draw = np.random.default_rng([seed, index]).dirichlet(np.full(n_scores, alpha))
    return [round(float(w), 6) for w in draw]


@dataclass(frozen=True)
class RegressorSettings:
    objective: str = "l2"
    learning_rate: float = 0.01
    rounds: int = 1000
    early_stopping: int = 50
    holdout_fraction: float = 0.2
    num_leaves: int = 15
    min_data_in_leaf: int = 5

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"regressor objective must be one of {sorted(OBJECTIVES)}")
        if not 0 <= self.holdout_fraction < 1:
            raise ValueError("holdout_fraction must be in [0, 1)")

    def lightgbm_params(self, seed: int) -> dict:
        return {"objective": OBJECTIVES[self.objective], "learning_rate": self.learning_rate,
                "num_leaves": self.num_leaves, "min_data_in_leaf": self.min_data_in_leaf,
                "min_data_in_bin": 1, "verbose": -1, "seed": seed, "deterministic": True,
                "force_row_wise": True, "num_threads": 1}


@dataclass(frozen=True)
class FitSettings:
    search: str
    scores: list[str]
    proxies_used: int
    seed: int
    regressor: RegressorSettings
    candidates: int = 100_000
    top: int = 128
    dirichlet_alpha: float = 1.0

    @classmethod
    def from_dict(cls, params: dict) -> FitSettings:
        return cls(**(params | {"regressor": RegressorSettings(**params.get("regressor", {}))}))


@dataclass(frozen=True)
class ProxyResult:
    name: str
    weights: list[float]
    loss: float


def read_proxy_results(scores: list[str], manifests: Sequence[str | Path],
                       perplexity_files: Sequence[str | Path]) -> tuple[list[ProxyResult], dict]:
    """Proxies' weights (from their selection manifests) and validation losses (the `all` nll
    of `eval/{proxy}/perplexity.json`); proxies without a finite loss are excluded, with why."""
    results, excluded = [], {}
    for manifest_path, perplexity_path in zip(manifests, perplexity_files, strict=True):
        manifest = json.loads(Path(manifest_path).read_text())
        name = manifest["variant"]
        if Path(perplexity_path).parent.name != name:
            raise ValueError(f"{perplexity_path} does not belong to proxy {name}")
        if list(manifest["params"]["scores"]) != list(scores):
            raise ValueError(f"proxy {name} was selected on {manifest['params']['scores']}, "
                             f"the search uses {scores}")
        loss = json.loads(Path(perplexity_path).read_text())["validation"]["all"].get("nll")
        if loss is None or not math.isfinite(loss):
            excluded[name] = f"validation loss is {loss}"
            continue
        results.append(ProxyResult(name, list(manifest["params"]["weights"]), float(loss)))
    return results, excluded


def holdout_split(n: int, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray,
                                                                               np.ndarray]:
    """(train, held-out) indices; at least two of each when there is a held-out part at all."""
    held = round(fraction * n)
    if fraction > 0:
        held = max(held, 2)
    if n - held < 2:
        held = 0
    order = rng.permutation(n)
    return np.sort(order[held:]), np.sort(order[:held])


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    from scipy.stats import spearmanr

    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(spearmanr(x, y).statistic)


def fit_regressor(weights: np.ndarray, losses: np.ndarray, settings: RegressorSettings,
                  seed: int) -> tuple[object, dict, np.ndarray, np.ndarray]:
    """(final booster, report, held-out indices, split-model predictions for every proxy)."""
    import lightgbm as lgb

    params = settings.lightgbm_params(seed)
    train, held = holdout_split(len(losses), settings.holdout_fraction,
                                np.random.default_rng(seed))
    train_set = lgb.Dataset(weights[train], losses[train], params={"min_data_in_bin": 1})
    if len(held):
        valid = lgb.Dataset(weights[held], losses[held], reference=train_set)
        model = lgb.train(params, train_set, num_boost_round=settings.rounds, valid_sets=[valid],
                          callbacks=[lgb.early_stopping(settings.early_stopping, verbose=False)])
        best = max(int(model.best_iteration or settings.rounds), 1)
    else:
        model = lgb.train(params, train_set, num_boost_round=settings.rounds)
        best = settings.rounds
    predicted = model.predict(weights, num_iteration=best)
    rho = spearman(predicted[held], losses[held]) if len(held) else None
    final = lgb.train(params, lgb.Dataset(weights, losses, params={"min_data_in_bin": 1}),
                      num_boost_round=best)
    report = asdict(settings) | {
        "best_iteration": best, "train_proxies": int(len(train)), "heldout_proxies": int(len(held)),
        "heldout_spearman": rho,
        "heldout_spearman_note": None if rho is not None else (
            "no held-out split (too few proxies)" if not len(held)
            else "constant predictions or losses on the held-out proxies"),
    }
    return final, report, held, predicted


def search_weights(model, n_scores: int, candidates: int, top: int, alpha: float,
                   rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    """Average of the `top` candidate weight vectors with the lowest predicted loss."""
    draws = rng.dirichlet(np.full(n_scores, alpha), size=candidates)
    predicted = model.predict(draws)
    best = np.argsort(predicted, kind="stable")[:top]
    learned = draws[best].mean(axis=0)
    shown = rng.choice(candidates, size=min(LANDSCAPE_POINTS, candidates), replace=False)
    return learned, {
        "best_predicted": [float(v) for v in predicted[best]],
        "predicted_loss_of_learned_weights": float(model.predict(learned[None, :])[0]),
        "landscape": {"weights": np.round(draws[shown], 6).tolist(),
                      "predicted": [float(v) for v in predicted[shown]]},
    }


def fit_search(settings: FitSettings, proxies: list[ProxyResult], excluded: dict) -> dict:
    """The learned weights and everything the report shows about how they were found."""
    if len(proxies) < 2:
        raise ValueError(f"search {settings.search!r}: {len(proxies)} proxies with a finite "
                         f"loss; at least 2 are needed (excluded: {excluded})")
    weights = np.array([p.weights for p in proxies], dtype=np.float64)
    losses = np.array([p.loss for p in proxies], dtype=np.float64)
    model, report, held, predicted = fit_regressor(weights, losses, settings.regressor,
                                                   settings.seed)
    learned, search = search_weights(model, len(settings.scores), settings.candidates,
                                     min(settings.top, settings.candidates),
                                     settings.dirichlet_alpha,
                                     np.random.default_rng([settings.seed, 1]))
    held_set = set(held.tolist())
    return {
        "search": settings.search,
        "scores": settings.scores,
        "proxies_used": settings.proxies_used,
        "proxies_fitted": len(proxies),
        "weights": [round(float(w), 6) for w in learned],
        "regressor": report,
        "candidates": settings.candidates,
        "top": settings.top,
        "dirichlet_alpha": settings.dirichlet_alpha,
        "proxies": [{"name": p.name, "weights": p.weights, "loss": p.loss,
                     "split": "heldout" if i in held_set else "train",
                     "predicted": float(predicted[i])} for i, p in enumerate(proxies)],
        "excluded_proxies": excluded,
    } | search


def fit_from_proxy_files(settings: FitSettings, manifests: Sequence[str | Path],
                         perplexity_files: Sequence[str | Path]) -> dict:
    if len(manifests) != settings.proxies_used:
        raise ValueError(f"search {settings.search!r}: expected {settings.proxies_used} proxy "
                         f"manifests, got {len(manifests)}")
    proxies, excluded = read_proxy_results(settings.scores, manifests, perplexity_files)
    return fit_search(settings, proxies, excluded)
