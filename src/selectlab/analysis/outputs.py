"""Every analysis figure and table of a run, drawn from the sampled score tables.

`write_figures` is what the `analysis_figures` job does: one distribution figure per score
family, the Spearman heatmap of the full pool's scores, and with a DataMan family its Pearson
heatmap and (with a reference-LM family on its pool) its ratings against the reference NLL,
figure and table. A family's figures come from the sample of the pool it annotates first
(selectlab.analysis.plan). The
matrices behind the heatmaps are written as CSV beside them. Outputs built on raters trained
from the judge's labels carry the judge's notes (a simulated judge says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from selectlab.analysis import correlation as corr
from selectlab.analysis import figures as fig
from selectlab.analysis import plan
from selectlab.analysis.sample import qualified, score_names
from selectlab.corpus.pools import FULL
from selectlab.judge.dataman import CRITERIA
from selectlab.report.table_files import write_table
from selectlab.shards import atomic_path

REF_NLL = "ref_nll"
RATING_LABELS = {key: name for key, (name, _) in CRITERIA.items()}


@dataclass(frozen=True)
class FigureJob:
    families: list[str]  # score families, config order
    rater_families: list[str]
    dataman: str | None
    refppl: str | None
    notes: list[str]  # the judge's caveats
    nll_note: str  # what the reference NLL is (model, tokens scored)
    figures_dir: Path
    matrices_dir: Path
    tables_dir: Path | None  # the DataMan-vs-NLL table's
    qurater: str | None = None  # the QuRater's family (QuRating Figure 7 with a reference LM)
    family_pools: dict[str, str] | None = None  # family -> the pool its figures are drawn from

    def pool_of(self, family: str) -> str:
        return (self.family_pools or {}).get(family, FULL)

    def notes_for(self, families: list[str]) -> list[str]:
        return self.notes if set(families) & set(self.rater_families) else []


def write_figures(frames: dict[str, pd.DataFrame], job: FigureJob) -> list[Path]:
    """The figures from the sample of each pool (`frames`: pool -> sample)."""
    written = []
    for family in job.families:
        frame = frames[job.pool_of(family)]
        size = sample_size(frame, job.pool_of(family))
        columns = corr.paper_order(score_names(frame, [family]), job.dataman)
        written.append(fig.plot_distributions(
            frame, columns, job.figures_dir / f"{plan.DISTRIBUTION_PREFIX}{family}.png",
            title=f"{family}: score distributions per source ({size})",
            notes=job.notes_for([family])))
    if FULL in frames:
        frame, size = frames[FULL], sample_size(frames[FULL], FULL)
        sampled = [family for family in job.families if score_names(frame, [family])]
        every = corr.paper_order(score_names(frame, sampled), job.dataman)
        written.append(write_heatmap(frame, every, "spearman", plan.SPEARMAN,
                                     f"Spearman correlation of {len(every)} scores ({size})",
                                     job.notes_for(sampled), job))
    if job.dataman:
        frame = frames[job.pool_of(job.dataman)]
        size = sample_size(frame, job.pool_of(job.dataman))
        ratings = corr.dataman_columns(frame, job.dataman)
        written.append(write_heatmap(frame, ratings, "pearson", plan.DATAMAN_PEARSON,
                                     f"Pearson correlation of DataMan's ratings ({size})",
                                     job.notes, job))
        if job.refppl and score_names(frame, [job.refppl]):
            written.append(write_ratings_vs_nll(frame, ratings, job))
    frame = frames.get(job.pool_of(job.qurater)) if job.qurater else None
    if frame is not None and job.refppl and score_names(frame, [job.refppl]):
        size = sample_size(frame, job.pool_of(job.qurater))
        ratings = score_names(frame, [job.qurater])
        nll = qualified(job.refppl, REF_NLL)
        written.append(fig.plot_scores_vs_nll(
            frame, ratings, nll, corr.spearman_against(frame, ratings, nll),
            job.figures_dir / f"{plan.QURATER_VS_NLL}.png",
            title=f"QuRater ratings vs reference-LM NLL ({size})",
            notes=[*job.notes, job.nll_note]))
    return written


def sample_size(frame: pd.DataFrame, pool: str) -> str:
    """How many units the figure's sample holds, and of which pool when not the full one."""
    return f"{len(frame):,} documents" if pool == FULL else f"{len(frame):,} units of pool {pool}"


def write_heatmap(frame: pd.DataFrame, columns: list[str], method: str, name: str, title: str,
                  notes: list[str], job: FigureJob) -> Path:
    matrix = corr.correlation_matrix(frame, columns, method)
    job.matrices_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(job.matrices_dir / f"{name}.csv") as tmp:
        matrix.to_csv(tmp)
    return fig.plot_heatmap(matrix, job.figures_dir / f"{name}.png", title=title,
                            colorbar_label=f"{method.capitalize()} correlation", notes=notes)


def write_ratings_vs_nll(frame: pd.DataFrame, ratings: list[str], job: FigureJob) -> Path:
    nll = qualified(job.refppl, REF_NLL)
    rho = corr.spearman_against(frame, ratings, nll)
    notes = [*job.notes, job.nll_note]
    table = rho.assign(rating=[RATING_LABELS.get(r, r) for r in rho["rating"]])
    table.attrs = dict(rho.attrs)
    write_table(table, job.tables_dir / f"{plan.DATAMAN_VS_NLL_TABLE}.csv",
                job.tables_dir / f"{plan.DATAMAN_VS_NLL_TABLE}.md", notes)
    return fig.plot_ratings_vs_nll(frame, ratings, nll, rho, RATING_LABELS,
                                   job.figures_dir / f"{plan.DATAMAN_VS_NLL}.png", notes=notes)
