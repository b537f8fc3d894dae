"""Analyses of the judge's own labels, the raters' training sets (not the annotated corpus):

* QuRating Figure 5: Pearson correlation of the four criteria's judgments, over the pairs judged
  on both criteria of each cell (the judge's order-averaged probability that the second text
  wins, `p_b_better`);
* DataMan Table 6: the fine-tuning set's documents by domain, Overall Score and source;
* DataMan Figure 5: Pearson correlation of the 14 ratings over the fine-tuning set.
"""

from __future__ import annotations

import pandas as pd

from selectlab.analysis.dataman_tables import OVERALL, corpus_table, shard_counts
from selectlab.judge.dataman import CRITERIA
from selectlab.judge.dataman import QUALITY_COLUMNS as DATAMAN_QUALITY


def qurating_label_pearson(labels: pd.DataFrame) -> pd.DataFrame:
    """criteria x criteria Pearson of `p_b_better` over the pairs both criteria judged."""
    wide = labels.pivot_table(index=["doc_a", "doc_b"], columns="criterion",
                              values="p_b_better", aggfunc="mean")
    order = [c for c in ("writing_style", "facts_and_trivia", "educational_value",
                         "required_expertise") if c in wide.columns]
    order += sorted(set(wide.columns) - set(order))
    return wide[order].astype(float).corr(method="pearson", min_periods=3)


def dataman_finetune_table(labels: pd.DataFrame) -> pd.DataFrame:
    """Table 6: documents and their share per domain, Overall Score and source."""
    counted = shard_counts(labels.assign(n_tokens=1))
    table = corpus_table(counted).drop(columns=["tokens", "tokens %"])
    table.attrs["decimals"] = {"documents %": 2}
    return table


def dataman_label_pearson(labels: pd.DataFrame) -> pd.DataFrame:
    """The 14 ratings' Pearson matrix over the fine-tuning documents, named as in the paper."""
    columns = [*DATAMAN_QUALITY, OVERALL]
    matrix = labels[columns].astype(float).corr(method="pearson")
    names = {key: CRITERIA[key][0] for key in columns}
    return matrix.rename(index=names, columns=names)
