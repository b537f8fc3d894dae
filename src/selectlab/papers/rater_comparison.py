"""QuRating Table 6 (Appendix B.2): the QuRater trained as one multi-task model or as a separate
model per criterion, initialised from a pre-trained model or from scratch, each scored by its
held-out pairwise accuracy per criterion on confident judgments.

The `qurater` that annotates is one of the four setups: a multi-task model (a head per
criterion on one shared backbone, `selectlab.raters.qurater`), from a pre-trained model unless
its backbone is `random_encoder`. `raters.qurater.setups` trains others as `qurater_<setup>`
(`selectlab.raters.resolve`), every one on the same held-out pairs. A setup's row holds what its
rater measured on the held-out pairs whose judge confidence |2p - 1| is at least 50% (QuRating
Table 5's lower level, the margin it trains on); the interval is the binomial one over those
pairs. A setup the run does not train says "not run", as do the claims about it.

Configured as `evaluation.protocols.qurating.tables.table6: {rater: qurater}`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

# Plain data at plan time (the rules import comparison_plan): pandas, scipy and torch are
# imported by the functions that build the table, not here.
from selectlab.raters.spec import QURATER_SETUPS, qurater_instance

TABLE = "qurating_table6"
RATER = "qurater"
NOT_RUN = "not run"
CONFIDENCE = 50  # percent: QuRating B.2 trains and evaluates on |2p - 1| >= 50%
# Column labels, in the order the paper lists its criteria (QuRating section 2).
CRITERION_LABELS = {"writing_style": "Writing Style", "facts_and_trivia": "Facts & Trivia",
                    "educational_value": "Educational Value",
                    "required_expertise": "Required Expertise"}
ROW_HEADER = "QuRater training"


@dataclass(frozen=True)
class Setup:
    key: str  # the row's name in cells, claims and config/published/qurating_table6.csv
    label: str


# In QURATER_SETUPS' (the paper's) order; a row's key is the rater its setup trains as.
LABELS = {"multitask_pretrained": "Multi-task, from a pre-trained model",
          "separate_pretrained": "Separate models, from a pre-trained model",
          "multitask_scratch": "Multi-task, from scratch",
          "separate_scratch": "Separate models, from scratch"}
SETUPS = tuple(Setup(qurater_instance(s), LABELS[s]) for s in QURATER_SETUPS)
ROWS = tuple(s.key for s in SETUPS)


def trained_raters(config: dict) -> dict[str, str]:
    """Each trained setup's row key -> the rater that trains it (`qurater` for the one that
    annotates, `qurater_<setup>` for the others)."""
    from selectlab.raters.resolve import qurater_setups

    annotating, others = qurater_setups(config)
    return {qurater_instance(annotating): RATER} | {qurater_instance(s): qurater_instance(s)
                                                    for s in others}


def comparison_plan(config: dict) -> list[dict]:
    """The rater tables a config asks for (none, or QuRating Table 6), resolved for the rules."""
    from selectlab.raters.resolve import configured_raters, rater_kind

    tables = (config["evaluation"].get("protocols", {}).get("qurating", {}).get("tables", {}))
    spec = tables.get("table6")
    if spec is None:
        return []
    rater = spec["rater"]
    if rater not in configured_raters(config) or rater_kind(config, rater) != "heads":
        raise ValueError(f"evaluation.protocols.qurating.tables.table6 compares QuRater "
                         f"trainings, but raters.{rater} is not a rater this run trains")
    criteria = config["judge"]["protocols"]["qurating"].get("criteria", list(CRITERION_LABELS))
    return [{"name": TABLE, "rater": rater, "trained": trained_raters(config),
             "criteria": [c for c in CRITERION_LABELS if c in criteria]}]


def compared_raters(entry: dict) -> list[str]:
    """The raters whose metrics a Table 6 entry reads, in row order."""
    return [entry["trained"][key] for key in ROWS if key in entry["trained"]]


def accuracy_estimate(metrics: Mapping | None):
    """A criterion's accuracy (%) at the confidence level, with its binomial standard error."""
    from selectlab.papers.estimates import estimate

    accuracy = (metrics or {}).get(f"accuracy_confidence{CONFIDENCE}")
    pairs = (metrics or {}).get(f"pairs_confidence{CONFIDENCE}")
    if accuracy is None or not math.isfinite(accuracy) or not pairs:
        return estimate([None])
    se = math.sqrt(accuracy * (1.0 - accuracy) / pairs)
    return estimate([100.0 * accuracy], [100.0 * se])


def rater_cells(entry: dict, records: Mapping[str, Mapping | None]) -> list[dict]:
    """Table 6's cells: each trained setup's from its rater's metrics record (`records`, by
    rater name), the others not run."""
    from selectlab.papers.estimates import cell_record, estimate

    cells = []
    for setup in SETUPS:
        rater = entry["trained"].get(setup.key)
        for criterion in CRITERION_LABELS:
            if rater is not None and criterion in entry["criteria"]:
                metrics = (records.get(rater) or {}).get("metrics", {}).get(criterion)
                cells.append(cell_record(TABLE, "", setup.key, criterion,
                                         accuracy_estimate(metrics)))
            else:
                cell = cell_record(TABLE, "", setup.key, criterion, estimate([None]))
                cells.append(cell | {"basis": NOT_RUN})
    return cells


def rater_table(entry: dict, cells, scale: str):
    """Table 6 in the paper's shape (a DataFrame): a row per training setup, a column per
    criterion."""
    import pandas as pd

    mine = cells[cells["table"] == TABLE]
    records = []
    for setup in SETUPS:
        record = {ROW_HEADER: setup.label}
        for criterion, label in CRITERION_LABELS.items():
            row = mine[(mine["variant"] == setup.key) & (mine["column"] == criterion)]
            cell = row.iloc[0] if len(row) else None
            if setup.key not in entry["trained"]:
                record[label] = NOT_RUN
            elif cell is None or pd.isna(cell["mean"]):
                record[label] = ""
            else:
                record[label] = f"{cell['mean']:.1f} ± {cell['high'] - cell['mean']:.1f}"
        records.append(record)
    frame = pd.DataFrame(records)
    trained = [s.label.lower() for s in SETUPS if s.key in entry["trained"]]
    notes = ["QuRating Table 6: QuRater accuracy (%) by training setup (Appendix B.2)."]
    if scale != "same scale":
        notes.append("Different scale from the paper: this run's judge, rater backbone and "
                     "held-out pairs, not the paper's.")
    notes += [f"Trained here: {'; '.join(trained)}. Each row: its held-out pairs whose judge "
              f"confidence |2p - 1| is at least {CONFIDENCE}%, the same pairs for every setup; "
              "± is the 95% binomial interval over them.",
              "Separate models are one rater per criterion; from scratch starts from random "
              "weights of the same architecture (raters.qurater.setups trains the rows not "
              "run).",
              "The paper's own numbers are not in our copy of QuRating (a summary), so "
              "vs_published has none for this table."]
    frame.attrs["notes"] = notes
    return frame
