"""DataMan's corpus statistics (Table 11) and mean rating per domain (Table 7), over every
document of the corpus.

Both tables are sums, so each shard is reduced on its own (`shard_counts`, `shard_domain_sums`)
and the partial results are added up: at full scale no job holds more than one shard. Table 11
counts documents and tokens (the run tokenizer's, from the meta sidecar) by domain, by Overall
Score and by source; a document without a rating is counted as "not rated", so every group
adds up to the whole corpus. Table 7 averages each rating over the documents of a domain that
have it; documents without a domain are left out of it and counted in its notes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from selectlab.analysis.sample import aligned_columns
from selectlab.judge.dataman import CRITERIA, DOMAINS
from selectlab.raters.spec import DATAMAN_RATINGS
from selectlab.report.tables import SOURCE_ORDER, short_source_name

OVERALL = "overall_score"
DOMAIN = "domain"
SOURCE = "set_name"
NOT_RATED = "not rated"
GROUP_LABELS = {DOMAIN: "Domain", OVERALL: "Overall Score", SOURCE: "Source"}
SHARE_DECIMALS = 2
MEAN_DECIMALS = 2


def read_dataman_shard(meta_path: str | Path, sidecar_path: str | Path) -> pd.DataFrame:
    """Source, tokens, ratings, domain and missing reason of every document of one shard."""
    meta = pq.read_table(meta_path, columns=["id", SOURCE, "n_tokens"])
    present = set(pq.read_schema(sidecar_path).names)
    wanted = [c for c in (*DATAMAN_RATINGS, DOMAIN, "missing_reason") if c in present]
    ratings = aligned_columns(sidecar_path, meta.column("id"), wanted, meta_path)
    frame = meta.select([SOURCE, "n_tokens"]).to_pandas()
    for column in wanted:
        frame[column] = ratings.column(column).to_pandas()
    return frame


def group_values(frame: pd.DataFrame, group: str) -> pd.Series:
    if group == OVERALL:
        return frame[group].map(lambda v: NOT_RATED if pd.isna(v) else str(int(v)))
    return frame[group].astype(object).where(frame[group].notna(), NOT_RATED)


def shard_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Documents and tokens per (group, value) of one shard, for the groups it has."""
    parts = []
    for group in (DOMAIN, OVERALL, SOURCE):
        if group not in frame:
            continue
        counted = frame.assign(value=group_values(frame, group)).groupby("value").agg(
            documents=("n_tokens", "size"), tokens=("n_tokens", "sum"))
        parts.append(counted.reset_index().assign(group=group))
    return pd.concat(parts, ignore_index=True)[["group", "value", "documents", "tokens"]]


def missing_reasons(frame: pd.DataFrame) -> pd.Series:
    """How many documents of a shard have no rating, per reason."""
    if "missing_reason" not in frame:
        return pd.Series(dtype="int64")
    return frame["missing_reason"].dropna().value_counts()


def add_counts(parts: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """The shards' `shard_counts` added up."""
    return pd.concat(parts, ignore_index=True).groupby(["group", "value"], as_index=False).sum()


def add_indexed(parts: Iterable[pd.DataFrame | pd.Series]) -> pd.DataFrame | pd.Series:
    """The shards' `shard_domain_sums` (or `missing_reasons`) added up, key by key."""
    parts = list(parts)
    kept = [part for part in parts if not part.empty]
    # All empty: the first (empty) part keeps the caller's type.
    return pd.concat(kept).groupby(level=0).sum() if kept else parts[0]


def value_label(group: str, value: str) -> str:
    if group == DOMAIN and value in DOMAINS:
        return f"{DOMAINS[value]} ({value})"
    if group == SOURCE:
        return short_source_name(value)
    return value


def value_order(group: str, rows: pd.DataFrame) -> list[str]:
    """Domains by documents (most first), scores 5 to 1, sources in the papers' order."""
    values = [v for v in rows["value"] if v != NOT_RATED]
    if group == DOMAIN:
        values = rows[rows["value"] != NOT_RATED].sort_values(
            ["documents", "value"], ascending=[False, True], kind="stable")["value"].tolist()
    elif group == OVERALL:
        values = sorted(values, reverse=True)
    else:
        known = [s for s in SOURCE_ORDER if s in values]
        values = known + sorted(set(values) - set(known))
    return values + ([NOT_RATED] if NOT_RATED in set(rows["value"]) else [])


def corpus_table(counts: pd.DataFrame) -> pd.DataFrame:
    """Table 11: per group, documents and tokens of each value and their shares (%)."""
    rows = []
    total_docs = total_tokens = 0
    for group in (DOMAIN, OVERALL, SOURCE):
        block = counts[counts["group"] == group].set_index("value")
        if block.empty:
            continue
        total_docs, total_tokens = int(block["documents"].sum()), int(block["tokens"].sum())
        for value in value_order(group, block.reset_index()):
            documents, tokens = int(block.at[value, "documents"]), int(block.at[value, "tokens"])
            rows.append({"group": GROUP_LABELS[group], "value": value_label(group, value),
                         "documents": documents, "documents %": 100 * documents / total_docs,
                         "tokens": tokens, "tokens %": 100 * tokens / total_tokens})
    rows.append({"group": "All", "value": "all documents", "documents": total_docs,
                 "documents %": 100.0, "tokens": total_tokens, "tokens %": 100.0})
    table = pd.DataFrame(rows)
    table.attrs["decimals"] = {"documents %": SHARE_DECIMALS, "tokens %": SHARE_DECIMALS}
    return table


def shard_domain_sums(frame: pd.DataFrame) -> pd.DataFrame:
    """Per domain of one shard: documents, and the sum and count of each rating."""
    if DOMAIN not in frame:
        return pd.DataFrame()
    rated = frame[frame[DOMAIN].notna()]
    ratings = [r for r in DATAMAN_RATINGS if r in frame]
    values = rated[ratings].astype("float64")
    sums = values.groupby(rated[DOMAIN]).sum().add_suffix(":sum")
    counts = values.groupby(rated[DOMAIN]).count().add_suffix(":n")
    documents = rated.groupby(DOMAIN).size().rename("documents")
    return pd.concat([documents, sums, counts], axis=1)


def domain_means_table(sums: pd.DataFrame) -> pd.DataFrame:
    """Table 7: mean of each rating per domain, domains by mean Overall Score (best first).

    Without domains (DataMan's score-only version) the table has no rows and says why.
    """
    if sums.empty:
        table = pd.DataFrame(columns=["domain", "documents"])
        table.attrs["notes"] = ["No document has a DataMan domain: this rater version gives "
                                "none, or no document could be rated."]
        return table
    ratings = [r for r in DATAMAN_RATINGS if f"{r}:sum" in sums]
    table = pd.DataFrame({"domain": [value_label(DOMAIN, d) for d in sums.index],
                          "documents": sums["documents"].astype(int).to_numpy()})
    for rating in ratings:
        n = sums[f"{rating}:n"].to_numpy()
        means = sums[f"{rating}:sum"].to_numpy() / n.clip(min=1)
        table[CRITERIA[rating][0]] = pd.Series(means).where(n > 0).to_numpy()
    if OVERALL in ratings:
        table = table.sort_values([CRITERIA[OVERALL][0], "domain"], ascending=[False, True],
                                  kind="stable", ignore_index=True)
    table.attrs["decimals"] = {CRITERIA[r][0]: MEAN_DECIMALS for r in ratings}
    return table


def reasons_note(reasons: pd.Series, total: int) -> list[str]:
    if reasons.empty:
        return []
    listed = "; ".join(f"{reason}: {count}" for reason, count in reasons.items())
    return [f"{int(reasons.sum())} of {total} documents have no DataMan rating ({listed}); "
            f"they are counted as '{NOT_RATED}' and left out of the means."]
