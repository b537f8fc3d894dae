"""How many tokens each variant's selection found and its model trained on, read from the files
the run wrote, never worked out from the config.

- the selection manifest (`selections/{variant}/manifest.json`): the budget, and the tokens of
  the distinct documents chosen (`unique_tokens`; a document repeated by up-sampling counts once);
- the trainer's log (`models/{variant}/train_log.csv`): its last `tokens` value is the optimiser
  steps run times the global batch times the sequence length, repeats included.

A selection that could not fill its budget (DataMan's Overall Score l=1) is short whether its
model then trained on fewer tokens or on repeated documents; the main table shows both numbers
and how far short the selection fell.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

TOKENS_SELECTED = "tokens_selected"
TOKENS_TRAINED = "tokens_trained"
SHORT_OF_BUDGET = "short_of_budget"
TOKEN_COLUMNS = (TOKENS_SELECTED, TOKENS_TRAINED, SHORT_OF_BUDGET)
SHORT_DECIMALS = 3


@dataclass(frozen=True)
class TrainingTokens:
    """One variant's token counts; None where the run wrote no file to read them from."""

    budget: int | None = None  # the selection's budget (manifest `budget_tokens`)
    selected: int | None = None  # tokens of its distinct documents
    trained: int | None = None  # tokens its model was trained on
    upsampled: dict[str, int] = field(default_factory=dict)  # stratum -> passes over it

    def short_of_budget(self) -> float | None:
        """The share of the budget the selection's distinct documents left unfilled (0 when
        they fill it)."""
        if self.budget is None or self.selected is None:
            return None
        return max(0.0, 1.0 - self.selected / self.budget)


def distinct_tokens(manifest: Mapping) -> int | None:
    """`unique_tokens`; a manifest written before it existed gives `selected_tokens` when it
    holds no repeated document, and nothing when it does."""
    if "unique_tokens" in manifest:
        return int(manifest["unique_tokens"])
    documents, unique = manifest.get("selected_documents"), manifest.get("unique_documents")
    if documents is not None and documents == unique:
        return int(manifest["selected_tokens"])
    return None


def read_manifest(path: str | Path) -> tuple[int, int | None, dict[str, int]]:
    """(budget, distinct tokens, up-sampled strata) of a selection manifest."""
    path = Path(path)
    manifest = json.loads(path.read_text(encoding="utf-8"))
    missing = [key for key in ("budget_tokens", "selected_tokens") if key not in manifest]
    if missing:
        raise ValueError(f"{path}: not a selection manifest (no {', '.join(missing)})")
    upsampled = {str(k): int(v) for k, v in (manifest.get("upsampled") or {}).items()}
    return int(manifest["budget_tokens"]), distinct_tokens(manifest), upsampled


def read_trained_tokens(path: str | Path) -> int:
    """The last `tokens` value of a training log: every token the optimiser stepped on."""
    path = Path(path)
    log = pd.read_csv(path)
    if "tokens" not in log.columns or log.empty:
        raise ValueError(f"{path}: a training log needs a `tokens` column and at least one step")
    return int(log["tokens"].iloc[-1])


def variant_of(path: str | Path) -> str:
    """`selections/{variant}/manifest.json`, `models/{variant}/train_log.csv` -> variant."""
    return Path(path).parent.name


def read_training_tokens(manifests: Iterable[str | Path],
                         train_logs: Iterable[str | Path]) -> dict[str, TrainingTokens]:
    """Per variant, its manifest's and its training log's counts (either may be absent)."""
    selections = {variant_of(path): read_manifest(path) for path in manifests}
    trained = {variant_of(path): read_trained_tokens(path) for path in train_logs}
    records = {}
    for name in [*selections, *(n for n in trained if n not in selections)]:
        budget, selected, upsampled = selections.get(name, (None, None, {}))
        records[name] = TrainingTokens(budget, selected, trained.get(name), upsampled)
    return records


def token_cells(record: TrainingTokens | None) -> dict[str, float | None]:
    """The main table's three cells of one variant."""
    record = record or TrainingTokens()
    short = record.short_of_budget()
    return {TOKENS_SELECTED: record.selected, TOKENS_TRAINED: record.trained,
            SHORT_OF_BUDGET: None if short is None else round(short, SHORT_DECIMALS) + 0.0}


def empty_reasons(record: TrainingTokens | None) -> dict[str, str]:
    """Why a variant's token cells are empty, per column."""
    record = record or TrainingTokens()
    reasons = {}
    if record.budget is None:
        reasons[TOKENS_SELECTED] = reasons[SHORT_OF_BUDGET] = "no selection manifest"
    elif record.selected is None:
        reasons[TOKENS_SELECTED] = reasons[SHORT_OF_BUDGET] = (
            "its manifest repeats documents but predates `unique_tokens`; rerun the selection")
    if record.trained is None:
        reasons[TOKENS_TRAINED] = "no training log"
    return reasons


def short_note(label: str, record: TrainingTokens | None) -> str | None:
    """A line under the table for a selection short of its budget: what it held and what its
    model trained on instead."""
    short = None if record is None else record.short_of_budget()
    if not short:
        return None
    held = (f"{label}: its selection holds {record.selected:,} distinct tokens, "
            f"{short:.1%} short of its {record.budget:,}-token budget")
    if record.trained is None:
        return held + "."
    if record.upsampled:
        passes = max(record.upsampled.values())
        how = f"its short strata were repeated (up to {passes} passes), so its model trained on"
    else:
        how = "nothing was repeated: its model trained one pass over them,"
    return f"{held}; {how} {record.trained:,} tokens."


def short_notes(rows: Iterable[str], labels: Mapping[str, str],
                records: Mapping[str, TrainingTokens]) -> list[str]:
    """The short-of-budget lines of a table's rows, in row order (DataMan's Overall Score l=1
    and l=2 rows cannot fill 30B tokens, so they trained on less: the table says by how much)."""
    notes = (short_note(labels.get(row, row), records.get(row)) for row in rows)
    return [note for note in notes if note]
