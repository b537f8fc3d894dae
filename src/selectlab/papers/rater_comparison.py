"""QuRating Table 6 (Appendix B.2): the QuRater trained as one multi-task model or as a separate
model per criterion, initialised from a pre-trained model or from scratch, each scored by its
held-out pairwise accuracy per criterion on confident judgments.

The workflow trains one QuRater: a multi-task model (a head per criterion on one shared
backbone, `selectlab.raters.qurater`), initialised from a pre-trained encoder unless its
backbone is `random_encoder`. Its row holds what that rater measured on its held-out pairs whose
judge confidence |2p - 1| is at least 50% (QuRating Table 5's lower level, the margin it trains
on); the interval is the binomial one over those pairs. The other three configurations are not
trained here (each is another rater job per criterion or per backbone), so their rows say
"not run" and every claim about them is not run.

Configured as `evaluation.protocols.qurating.tables.table6: {rater: qurater}`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

# Plain data at plan time (the rules import comparison_plan): pandas, scipy and torch are
# imported by the functions that build the table, not here.
RANDOM_ENCODER = "random_encoder"  # selectlab.raters.backbone's randomly initialised encoder

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
    multitask: bool
    pretrained: bool


SETUPS = (
    Setup("qurater_multitask_pretrained", "Multi-task, from a pre-trained model", True, True),
    Setup("qurater_separate_pretrained", "Separate models, from a pre-trained model", False,
          True),
    Setup("qurater_multitask_scratch", "Multi-task, from scratch", True, False),
    Setup("qurater_separate_scratch", "Separate models, from scratch", False, False),
)
ROWS = tuple(s.key for s in SETUPS)


def trained_setup(params: Mapping) -> str:
    """The row the run's QuRater fills: always multi-task; from scratch on a random encoder."""
    pretrained = params.get("backbone") != RANDOM_ENCODER
    return next(s.key for s in SETUPS if s.multitask and s.pretrained == pretrained)


def comparison_plan(config: dict) -> list[dict]:
    """The rater tables a config asks for (none, or QuRating Table 6), resolved for the rules."""
    from selectlab.raters.resolve import configured_raters, rater_kind, rater_params

    tables = (config["evaluation"].get("protocols", {}).get("qurating", {}).get("tables", {}))
    spec = tables.get("table6")
    if spec is None:
        return []
    rater = spec["rater"]
    if rater not in configured_raters(config) or rater_kind(config, rater) != "heads":
        raise ValueError(f"evaluation.protocols.qurating.tables.table6 compares QuRater "
                         f"trainings, but raters.{rater} is not a rater this run trains")
    criteria = config["judge"]["protocols"]["qurating"].get("criteria", list(CRITERION_LABELS))
    return [{"name": TABLE, "rater": rater, "trained": trained_setup(rater_params(config, rater)),
             "criteria": [c for c in CRITERION_LABELS if c in criteria]}]


def accuracy_estimate(metrics: Mapping | None):
    """A criterion's accuracy (%) at the confidence level, with its binomial standard error."""
    from selectlab.papers.estimates import estimate

    accuracy = (metrics or {}).get(f"accuracy_confidence{CONFIDENCE}")
    pairs = (metrics or {}).get(f"pairs_confidence{CONFIDENCE}")
    if accuracy is None or not math.isfinite(accuracy) or not pairs:
        return estimate([None])
    se = math.sqrt(accuracy * (1.0 - accuracy) / pairs)
    return estimate([100.0 * accuracy], [100.0 * se])


def rater_cells(entry: dict, record: Mapping | None) -> list[dict]:
    """Table 6's cells: the trained row from the rater's metrics record, the others not run."""
    from selectlab.papers.estimates import cell_record, estimate

    cells = []
    for setup in SETUPS:
        for criterion in CRITERION_LABELS:
            if setup.key == entry["trained"] and criterion in entry["criteria"]:
                metrics = (record or {}).get("metrics", {}).get(criterion)
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
            if setup.key != entry["trained"]:
                record[label] = NOT_RUN
            elif cell is None or pd.isna(cell["mean"]):
                record[label] = ""
            else:
                record[label] = f"{cell['mean']:.1f} ± {cell['high'] - cell['mean']:.1f}"
        records.append(record)
    frame = pd.DataFrame(records)
    trained = next(s.label for s in SETUPS if s.key == entry["trained"])
    notes = ["QuRating Table 6: QuRater accuracy (%) by training setup (Appendix B.2)."]
    if scale != "same scale":
        notes.append("Different scale from the paper: this run's judge, rater backbone and "
                     "held-out pairs, not the paper's.")
    notes += [f"This run trains one QuRater ({trained.lower()}): its held-out pairs whose "
              f"judge confidence |2p - 1| is at least {CONFIDENCE}%; ± is the 95% binomial "
              "interval over them.",
              "Not run: the other setups are not trained by this workflow (separate models "
              "are one rater per criterion; from scratch is backbone: random_encoder).",
              "The paper's own numbers are not in our copy of QuRating (a summary), so "
              "vs_published has none for this table."]
    frame.attrs["notes"] = notes
    return frame
