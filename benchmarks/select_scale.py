"""Selection at the pool's scale: every method streamed over sidecars on disk under a memory
ceiling, against today's in-memory path.

Phases (run separately, each well under 10 minutes at 10^8 units; `all` runs them in turn):
  write     synthetic sidecars for --units documents in --shards shards under --dir: meta (id,
            set_name of 7 sources, n_tokens 20-1999, token_offset) and 4 scores in two
            families, quality (good, rating 1-5) and other (noise, ppl)
  rank      the pool-level rank step per family (timed; --families picks), plus 21 further
            stored rank columns in 3 families (`extra`: random numerators written directly
            rather than ranked, to keep the setup short): 25 rank columns in 5 sidecar
            families, as the paper's 25 Meta-rater scores come from a handful of raters
  select    each method in its own process through `selectlab.selection.run.run_selection` with
            `--memory-mb` (default 2000): reads the sidecars, takes, writes selection.parquet and
            the manifest; prints seconds, units/s, the process's peak RSS (ru_maxrss), passes over
            the stored columns and candidates held
  baseline  today's in-memory path at --baseline-units (10^7) in this process: the whole pool's
            arrays and scores in memory, percentile ranks computed per score, full sorts in
            `budgeted_take` (the core every select job ran before; reading and writing files
            excluded, which favours the baseline); prints units/s per method
  report    per method: streamed and in-memory units/s (wall and CPU; the machine may be shared,
            CPU seconds are the steadier measure), their ratios, peak RSS, and the CPU minutes
            extrapolated to --target-units (6x10^8, SlimPajama in 1024-token sequences)

Methods: uniform, topk (rating, ties broken by a random key), rating_sample (tau 2, z-scores and
Gumbel keys), score_level, dsir, weighted_topk (4 rank columns), metarater_proxy (25 rank
columns), curriculum (the uniform selection ordered by a score). Budgets: 10% of the pool's
tokens (the papers' 30B of 260-627B), a proxy's 0.4B of 627B for metarater_proxy. SemDeDup is
not here: its cluster ranks stay in memory by design (see selection.semdedup).

Usage: python benchmarks/select_scale.py --units 100000000 --phase write|rank|select|baseline|report
       [--methods ...] [--dir /tmp/i15/select_scale] [--memory-mb 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

SOURCES = [f"source{i}" for i in range(7)]
# The 4 scores, in two families as raters write them (each family is ranked by its own job).
FAMILIES = {"quality": ["good", "rating"], "other": ["noise", "ppl"]}
SCORES = [f"{family}.{column}" for family, columns in FAMILIES.items() for column in columns]
EXTRA_FAMILIES, EXTRA_COLUMNS = 3, 7  # 21 stored rank columns beyond the 4 scores
BUDGET_FRACTION = 0.1  # the papers select 30B of 260-627B tokens
PROXY_FRACTION = 0.4 / 627  # a Meta-rater proxy selects 0.4B of SlimPajama's 627B tokens
METHODS = {
    "uniform": ("uniform", {}),
    "topk": ("topk", {"score": "quality.rating"}),
    "rating_sample": ("rating_sample", {"score": "quality.good", "tau": 2.0}),
    "score_level": ("score_level", {"score": "quality.rating", "level": 5}),
    "dsir": ("dsir", {"scores": ["quality.good", "other.noise"]}),
    "weighted_topk": ("weighted_topk", {"scores": SCORES, "weights": [0.4, 0.3, 0.2, 0.1]}),
    "metarater_proxy": ("weighted_topk", {
        "scores": SCORES + [f"extra{f}.r{j}" for f in range(EXTRA_FAMILIES)
                            for j in range(EXTRA_COLUMNS)],
        "weights": [round(float(w), 6) for w in np.random.default_rng(0).dirichlet(
            np.ones(len(SCORES) + EXTRA_FAMILIES * EXTRA_COLUMNS))]}),
    "curriculum": ("curriculum", {"of": "uniform", "order_by": "quality.good"}),
}


def shard_names(shards: int) -> list[str]:
    return [f"shard{i:04d}" for i in range(shards)]


def shard_sizes(units: int, shards: int) -> list[int]:
    return [units // shards + (1 if i < units % shards else 0) for i in range(shards)]


def write_phase(root: Path, units: int, shards: int) -> None:
    started = time.perf_counter()
    attributes = root / "attributes"
    for family in ("meta", *FAMILIES):
        (attributes / family).mkdir(parents=True, exist_ok=True)
    for index, (shard, n) in enumerate(zip(shard_names(shards), shard_sizes(units, shards),
                                           strict=True)):
        rng = np.random.default_rng([1, index])
        n_tokens = rng.integers(20, 2000, size=n)
        ids = pc.binary_join_element_wise(pa.scalar(f"{shard}-"),
                                          pa.array(np.arange(n)).cast(pa.string()), "")
        sources = pa.DictionaryArray.from_arrays(
            pa.array(rng.integers(0, len(SOURCES), size=n).astype(np.int32)), pa.array(SOURCES))
        pq.write_table(pa.table({"id": ids, "set_name": sources, "n_tokens": n_tokens,
                                 "token_offset": np.r_[0, np.cumsum(n_tokens)[:-1]]}),
                       attributes / "meta" / f"{shard}.parquet")
        quality = rng.random(n, dtype=np.float32)
        pq.write_table(pa.table({
            "good": quality + rng.normal(0, 0.05, n).astype(np.float32),
            "rating": np.clip(np.round(quality * 4 + 1 + rng.normal(0, 0.5, n)), 1, 5)
            .astype(np.float32)}), attributes / "quality" / f"{shard}.parquet")
        pq.write_table(pa.table({
            "noise": rng.normal(size=n).astype(np.float32),
            "ppl": (10 - 5 * quality + rng.normal(0, 0.3, n)).astype(np.float32)}),
            attributes / "other" / f"{shard}.parquet")
    print(f"write: {units:,} units in {shards} shards, {time.perf_counter() - started:.1f} s",
          flush=True)


def rank_phase(root: Path, units: int, shards: int, memory_mb: float,
               families: list[str]) -> None:
    """The rank step per score family (timed); then the extra stored rank columns."""
    from selectlab.selection.memory import plan_memory
    from selectlab.selection.ranks import SUMMARY, rank_dir, rank_family

    attributes, names, sizes = root / "attributes", shard_names(shards), \
        shard_sizes(units, shards)
    for family in families:
        if family not in FAMILIES:
            continue
        limits = plan_memory(memory_mb, units, max(sizes))
        started, cpu = time.perf_counter(), time.process_time()
        rank_family(attributes, family, FAMILIES[family], names,
                    capacity=limits.take.solve_units * 8, spill=limits.spill)
        seconds = time.perf_counter() - started
        print(f"rank: {family} ({len(FAMILIES[family])} scores) over {units:,} units in "
              f"{seconds:.1f} s, {time.process_time() - cpu:.1f} cpu s "
              f"({len(FAMILIES[family]) * units / seconds:,.0f} unit-scores/s), "
              f"peak RSS {peak_rss_mb():.0f} MB", flush=True)
    if "extra" not in families:
        return
    # Stored exactly as ranks are (int32 numerators, uncompressed), drawn at random rather than
    # ranked from scores: reading and combining them costs the same, and the setup stays short.
    for f in range(EXTRA_FAMILIES):
        out = rank_dir(attributes, f"extra{f}")
        out.mkdir(parents=True, exist_ok=True)
        for index, (shard, n) in enumerate(zip(names, sizes, strict=True)):
            rng = np.random.default_rng([2, f, index])
            pq.write_table(pa.table({f"r{j}": rng.integers(0, 2 * units - 1, size=n,
                                                           dtype=np.int32)
                                     for j in range(EXTRA_COLUMNS)}),
                           out / f"{shard}.parquet", compression="none", use_dictionary=False)
        (out / SUMMARY).write_text(json.dumps({
            "family": f"extra{f}", "shards": names, "rows": sizes,
            "columns": {f"r{j}": {"present": units, "missing": 0}
                        for j in range(EXTRA_COLUMNS)}}))
    print(f"rank: {EXTRA_FAMILIES * EXTRA_COLUMNS} stored rank columns written", flush=True)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def budget_of(root: Path, name: str) -> int:
    tokens = sum(pq.read_table(path, columns=["n_tokens"]).column(0).to_numpy().sum()
                 for path in sorted((root / "attributes" / "meta").glob("*.parquet")))
    return int(tokens * (PROXY_FRACTION if name == "metarater_proxy" else BUDGET_FRACTION))


def select_one(root: Path, name: str, shards: int, memory_mb: float) -> dict:
    """One method in this process; the parent reads its peak RSS."""
    from selectlab.selection.run import SelectionSpec, run_selection

    method, params = METHODS[name]
    spec = SelectionSpec(name, method, budget_of(root, name), 1, params)
    upstream = root / "selections" / "uniform" / "selection.parquet" \
        if method == "curriculum" else None
    started, cpu = time.perf_counter(), time.process_time()
    manifest, taken = run_selection(spec, root / "attributes", shard_names(shards),
                                    root / "selections" / name, upstream, memory_mb=memory_mb)
    return {"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu,
            "selected": manifest["selected_documents"],
            "walks": taken.walks if taken else 0, "collected": taken.collected if taken else 0}


def select_phase(root: Path, units: int, shards: int, memory_mb: float,
                 methods: list[str]) -> None:
    results_path = root / "select_results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; ceiling "
          f"{memory_mb:.0f} MB", flush=True)
    print(f"{'method':16s} {'seconds':>8s} {'cpu s':>6s} {'units/s':>12s} {'peak RSS MB':>11s} "
          f"{'passes':>6s} {'held':>11s} {'selected':>11s}", flush=True)
    for name in methods:
        command = [sys.executable, __file__, "--phase", "one", "--method", name, "--dir",
                   str(root), "--units", str(units), "--shards", str(shards),
                   "--memory-mb", str(memory_mb)]
        process = subprocess.run(command, stdout=subprocess.PIPE, text=True)
        if process.returncode:
            raise RuntimeError(f"{name} failed (exit {process.returncode})")
        result = json.loads(process.stdout.strip().splitlines()[-1])
        result["peak_rss_mb"] = result.pop("own_peak_rss_mb")
        result["units_per_second"] = units / result["seconds"]
        results[name] = result
        met = "ok" if result["peak_rss_mb"] <= memory_mb else "OVER"
        print(f"{name:16s} {result['seconds']:8.1f} {result['cpu_seconds']:6.1f} "
              f"{result['units_per_second']:12,.0f} "
              f"{result['peak_rss_mb']:8.0f} {met:>2s} {result['walks']:6d} "
              f"{result['collected']:11,d} {result['selected']:11,d}", flush=True)
        results_path.write_text(json.dumps(results, indent=1))


def baseline_step(name: str, pool: dict, scores: dict, budget: int) -> np.ndarray:
    """Today's in-memory path for one method (whole-pool arrays, full sorts)."""
    from selectlab.selection.budget import budgeted_take, stratum_quotas
    from selectlab.selection.gumbel import gumbel_keys, gumbel_noise, tempered_logits
    from selectlab.selection.scores import percentile_ranks, z_scores

    n, rng = len(pool["n_tokens"]), np.random.default_rng(1)
    quotas = stratum_quotas(pool["source"], pool["n_tokens"], len(SOURCES), budget)

    def take(priority, tiebreak=None):
        return budgeted_take(pool["source"], pool["n_tokens"], priority, budget, quotas, tiebreak)

    def weighted(refs, weights):
        total = np.zeros(n, dtype=np.float32)
        for ref, weight in zip(refs, weights, strict=True):
            ranks = percentile_ranks(scores[ref])
            ranks *= np.float32(weight)
            total += ranks
        return take(total, rng.random(n, dtype=np.float32))

    method, params = METHODS[name]
    uniform = np.random.default_rng(1).random(n, dtype=np.float32)
    if method == "uniform":
        return take(uniform)
    if method == "curriculum":
        chosen = take(uniform)
        return chosen[np.argsort(scores["quality.good"][chosen], kind="stable")]
    if method == "topk":
        return take(scores[params["score"]], rng.random(n, dtype=np.float32))
    if method == "rating_sample":
        return take(gumbel_keys(tempered_logits(z_scores(scores[params["score"]]), 2.0), rng))
    if method == "score_level":
        priority = rng.random(n, dtype=np.float32)
        priority[scores[params["score"]] != np.float32(5)] = -np.inf
        return take(priority)
    if method == "dsir":
        log_weight = np.logaddexp(scores["quality.good"], scores["other.noise"]) - np.float32(
            np.log(2))
        return take(gumbel_noise(n, rng) + log_weight)
    return weighted(params["scores"], params["weights"])


def baseline_phase(root: Path, units: int, methods: list[str]) -> None:
    rng = np.random.default_rng(0)
    pool = {"n_tokens": rng.integers(20, 2000, size=units),
            "source": rng.integers(0, len(SOURCES), size=units).astype(np.int32)}
    quality = rng.random(units, dtype=np.float32)
    scores = {"quality.good": quality + rng.normal(0, 0.05, units).astype(np.float32),
              "other.noise": rng.normal(size=units).astype(np.float32),
              "quality.rating": np.clip(np.round(quality * 4 + 1), 1, 5).astype(np.float32),
              "other.ppl": (10 - 5 * quality).astype(np.float32)}
    for f in range(EXTRA_FAMILIES):
        for j in range(EXTRA_COLUMNS):
            scores[f"extra{f}.r{j}"] = rng.random(units, dtype=np.float32)
    tokens = int(pool["n_tokens"].sum())
    results_path = root / "baseline_results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; in-memory path "
          f"at {units:,} units", flush=True)
    for name in methods:
        started, cpu = time.perf_counter(), time.process_time()
        fraction = PROXY_FRACTION if name == "metarater_proxy" else BUDGET_FRACTION
        baseline_step(name, pool, scores, int(tokens * fraction))
        seconds = time.perf_counter() - started
        results[name] = {"units": units, "seconds": seconds,
                         "cpu_seconds": time.process_time() - cpu,
                         "units_per_second": units / seconds}
        print(f"{name:16s} {seconds:8.1f} s  {results[name]['cpu_seconds']:6.1f} cpu s  "
              f"{units / seconds:12,.0f} units/s", flush=True)
        results_path.write_text(json.dumps(results, indent=1))


def report_phase(root: Path, units: int, memory_mb: float, target: float) -> None:
    """Streamed vs in-memory per method, per wall and CPU second, and the time at `target`."""
    streamed = json.loads((root / "select_results.json").read_text())
    baseline_path = root / "baseline_results.json"
    baseline = json.loads(baseline_path.read_text()) if baseline_path.exists() else {}
    print(f"streamed at {units:,} units under {memory_mb:.0f} MB vs in-memory at 10^7; "
          f"time at {target:.0e} units extrapolated linearly from the streamed CPU seconds")
    print(f"{'method':16s} {'units/s':>11s} {'cpu units/s':>11s} {'RSS MB':>7s} "
          f"{'in-mem u/s':>11s} {'cpu':>11s} {'ratio':>6s} {'cpu ratio':>9s} "
          f"{'cpu min @target':>15s}")
    for name, result in streamed.items():
        cpu_rate = units / result["cpu_seconds"]
        line = (f"{name:16s} {result['units_per_second']:11,.0f} {cpu_rate:11,.0f} "
                f"{result['peak_rss_mb']:7.0f} ")
        if name in baseline:
            base = baseline[name]
            base_cpu = base["units"] / base["cpu_seconds"]
            line += (f"{base['units_per_second']:11,.0f} {base_cpu:11,.0f} "
                     f"{result['units_per_second'] / base['units_per_second']:6.2f} "
                     f"{cpu_rate / base_cpu:9.2f} ")
        else:
            line += f"{'':11s} {'':11s} {'':6s} {'':9s} "
        print(line + f"{target / cpu_rate / 60:15.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", required=True,
                        choices=["write", "rank", "select", "baseline", "report", "all", "one"])
    parser.add_argument("--units", type=int, default=100_000_000)
    parser.add_argument("--baseline-units", type=int, default=10_000_000)
    parser.add_argument("--shards", type=int, default=100)
    parser.add_argument("--target-units", type=float, default=6e8,
                        help="report phase: extrapolate to this pool (SlimPajama in sequences)")
    parser.add_argument("--memory-mb", type=float, default=2000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/i15/select_scale"))
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--families", nargs="+", default=[*FAMILIES, "extra"],
                        choices=[*FAMILIES, "extra"], help="rank phase: what to rank")
    parser.add_argument("--method", choices=list(METHODS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    root = args.dir
    if args.phase == "one":
        result = select_one(root, args.method, args.shards, args.memory_mb)
        print(json.dumps(result | {"own_peak_rss_mb": peak_rss_mb()}))
        return
    if args.phase in ("write", "all"):
        write_phase(root, args.units, args.shards)
    if args.phase in ("rank", "all"):
        rank_phase(root, args.units, args.shards, args.memory_mb, args.families)
    if args.phase in ("select", "all"):
        select_phase(root, args.units, args.shards, args.memory_mb, args.methods)
    if args.phase in ("baseline", "all"):
        baseline_phase(root, args.baseline_units, args.methods)
    if args.phase in ("report", "all"):
        report_phase(root, args.units, args.memory_mb, args.target_units)


if __name__ == "__main__":
    main()
