"""Annotation throughput per rater family, in the shape of DataMan's Table 10.

DataMan reports, per rater version, input speed (tokens/s), output speed (tokens/s), processing
speed (documents/s) and memory (GB) of one worker. Here a row is a rater family, aggregated over
its shard jobs: documents and tokens over the summed annotation seconds of the jobs (model loading
is reported apart), and the largest peak memory of any job (accelerator memory when the family
ran on one, resident memory otherwise). Scoring families generate no tokens, so their output
speed is 0. Rule-based families read whole documents and count tokens of the run's tokenizer;
model families count the tokens their model read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from selectlab.shards import atomic_path

COLUMNS = ["family", "kind", "model", "device", "shards", "documents", "input_tokens",
           "token_unit", "seconds", "setup_seconds", "input_tokens_per_s",
           "output_tokens_per_s", "docs_per_s", "memory_gb", "memory_kind", "flops",
           "flops_per_doc", "metarater_flops", "gpu_hours", "wall_hours"]
MARKDOWN_HEADERS = {
    "family": "Rater", "model": "Model", "device": "Device",
    "input_tokens_per_s": "Input Speed (Tok/s)", "output_tokens_per_s": "Output Speed (Tok/s)",
    "docs_per_s": "Processing Speed (Docs/s)", "memory_gb": "Memory (G)",
    "flops": "FLOPs", "flops_per_doc": "FLOPs/Doc",
}


def load_stats(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Shard stats from annotation jobs' files: each a list with one entry per shard it scored
    (one, or annotate.shards_per_job)."""
    rows = []
    for path in paths:
        content = json.loads(Path(path).read_text())
        rows.extend(content if isinstance(content, list) else [content])
    return pd.DataFrame(rows)


def family_row(name: str, jobs: pd.DataFrame) -> dict:
    seconds = float(jobs["seconds"].sum())
    on_device = jobs["peak_device_gb"].notna().any()
    memory = jobs["peak_device_gb"] if on_device else jobs["peak_rss_gb"]

    def rate(total: float) -> float:
        return total / seconds if seconds > 0 else 0.0

    return {
        "family": name, "kind": jobs["kind"].iloc[0], "model": jobs["model"].iloc[0],
        "device": ",".join(sorted(set(jobs["device"]))), "shards": len(jobs),
        "documents": int(jobs["documents"].sum()),
        "input_tokens": int(jobs["input_tokens"].sum()),
        "token_unit": jobs["token_unit"].iloc[0], "seconds": round(seconds, 3),
        "setup_seconds": round(float(jobs["setup_seconds"].sum()), 3),
        "input_tokens_per_s": round(rate(jobs["input_tokens"].sum()), 1),
        "output_tokens_per_s": round(rate(jobs["output_tokens"].sum()), 1),
        "docs_per_s": round(rate(jobs["documents"].sum()), 2),
        "memory_gb": round(float(memory.max()), 3),
        "memory_kind": "device" if on_device else "rss",
        **cost_columns(jobs),
    }


def cost_columns(jobs: pd.DataFrame) -> dict:
    """FLOPs (selectlab.flops: inference over the tokens the family's model read and wrote)
    and hours of the family's jobs, summed."""
    costs = [c for c in jobs.get("cost", pd.Series(dtype=object)) if isinstance(c, dict) and c]
    flops = float(sum(c["flops"] for c in costs))
    documents = int(jobs["documents"].sum())
    return {"flops": flops, "flops_per_doc": flops / documents if documents else 0.0,
            "metarater_flops": float(sum(c.get("metarater_flops", 0.0) for c in costs)),
            "gpu_hours": float(sum(c["gpu_hours"] for c in costs)),
            "wall_hours": float(sum(c["wall_hours"] for c in costs))}


def throughput_table(stats: pd.DataFrame) -> pd.DataFrame:
    """One row per family, in the order families first appear in `stats`."""
    if stats.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = [family_row(name, jobs) for name, jobs in stats.groupby("family", sort=False)]
    return pd.DataFrame(rows, columns=COLUMNS)


def to_markdown(table: pd.DataFrame) -> str:
    shown = table[list(MARKDOWN_HEADERS)].rename(columns=MARKDOWN_HEADERS)
    shown = shown.assign(**{header: [f"{v:.3g}" for v in shown[header]]
                            for header in ("FLOPs", "FLOPs/Doc")})
    lines = ["| " + " | ".join(shown.columns) + " |",
             "|" + "|".join(["---"] * len(shown.columns)) + "|"]
    lines += ["| " + " | ".join(str(value) for value in row) + " |"
              for row in shown.itertuples(index=False)]
    caption = ("Annotation throughput per rater family (shape of DataMan's Table 10); speeds are "
               "per worker over the summed annotation time of all shard jobs, model loading "
               "excluded. Rule-based families count the run tokenizer's tokens. FLOPs: inference "
               "over every token the family's model read and wrote (selectlab.flops; 0 for "
               "rule-based families).")
    return caption + "\n\n" + "\n".join(lines) + "\n"


def write_throughput(stat_paths: Sequence[str | Path], out_csv: str | Path,
                     out_md: str | Path) -> pd.DataFrame:
    table = throughput_table(load_stats(stat_paths))
    with atomic_path(out_csv) as tmp:
        table.to_csv(tmp, index=False)
    with atomic_path(out_md) as tmp:
        tmp.write_text(to_markdown(table))
    return table
