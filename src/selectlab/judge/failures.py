"""When judging has failed: the threshold check and the messages that say why.

A judge job fails, rather than passing on labels that silently lack part of the sample, when
the share of failed judgments passes the configured `max_failure_rate`, and it stops early when
its backend died or an endpoint answers nothing at all. The message names the protocol, the
backend and where it was reached, the failure counts and the most frequent errors (status codes
and bodies included), and what a rerun will do: answered judgments are cached, failed ones are
not, so a plain rerun asks for exactly the failed ones.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from selectlab.errors import StageError
from selectlab.judge.parse import BACKEND_ERROR, OK, PARSE_ERROR

ERRORS_SHOWN = 3
ERROR_CHARS = 300


def describe_backend(backend) -> str:
    """Which judge, and where it was reached (an endpoint's URL, a local model directory)."""
    where = getattr(backend, "base_url", None)
    text = f"{backend.kind} model {backend.model_id!r}"
    return f"{text} at {where}" if where else text


def frequent_errors(errors: Iterable[str]) -> list[str]:
    """The most frequent error texts, each with its count, clipped to one readable line."""
    counted = Counter(" ".join(str(e).split()) for e in errors if e)
    lines = []
    for text, count in counted.most_common(ERRORS_SHOWN):
        clipped = text if len(text) <= ERROR_CHARS else text[:ERROR_CHARS] + " ..."
        lines.append(f"{count} x {clipped}")
    return lines


def _message(headline: str, backend, counts: dict[str, int], errors: list[str],
             answered: int, failed: int, cache_path: str | Path) -> str:
    lines = [headline, f"  judge: {describe_backend(backend)}",
             "  failures: " + ", ".join(f"{k} {v}" for k, v in counts.items())]
    if errors:
        lines.append("  most frequent errors:")
        lines += [f"    {line}" for line in errors]
    lines.append(f"  {answered} answered judgments are kept in {cache_path}; once the cause is "
                 f"fixed, a plain rerun asks only for the {failed} others.")
    return "\n".join(lines)


def check_failure_rate(protocol: str, judgments: pd.DataFrame, backend, max_rate: float,
                       cache_path: str | Path) -> None:
    """Raise `StageError` when more than `max_rate` of the judgments failed."""
    total = len(judgments)
    failed = judgments[judgments["status"] != OK]
    if total == 0 or len(failed) / total <= max_rate:
        return
    counts = {status: int((failed["status"] == status).sum())
              for status in (BACKEND_ERROR, PARSE_ERROR)}
    headline = (f"judge {protocol}: {len(failed)} of {total} judgments failed "
                f"({len(failed) / total:.1%}, above judge.max_failure_rate {max_rate:.1%}); "
                "no labels were written.")
    raise StageError(_message(headline, backend, counts, frequent_errors(failed["error"]),
                              total - len(failed), len(failed), cache_path))


def stopped_early(queries: Sequence, rows: Sequence[dict | None], backend,
                  cache_path: str | Path, reason: str) -> StageError:
    """The error for a run that stopped before asking everything (`reason` says why)."""
    protocol = queries[0].protocol if queries else "?"
    done = [row for row in rows if row is not None]
    answered = sum(row["status"] == OK for row in done)
    counts = {status: sum(row["status"] == status for row in done)
              for status in (BACKEND_ERROR, PARSE_ERROR)}
    counts["not asked"] = len(rows) - len(done)
    headline = (f"judge {protocol}: stopped: {reason}; {answered} of {len(rows)} judgments "
                "are answered, no labels were written.")
    errors = frequent_errors(row["error"] for row in done if row["status"] != OK)
    return StageError(_message(headline, backend, counts, errors, answered,
                               len(rows) - answered, cache_path))


FAILURE_COLUMNS = ["protocol", "backend", "model", "queries", "ok", "parse_error",
                   "backend_error", "failure_rate"]


def failure_table(summaries: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per protocol from its summary.csv ("all" row): how many judgments failed.

    Counts only: the summaries' timings and throughput vary from run to run and stay out of
    the report and the archive.
    """
    rows = []
    for protocol, summary in sorted(summaries.items()):
        overall = summary[summary["criterion"] == "all"].iloc[0]
        rows.append({"protocol": protocol} | {c: overall[c] for c in FAILURE_COLUMNS[1:]})
    table = pd.DataFrame(rows, columns=FAILURE_COLUMNS)
    table.attrs["decimals"] = {"failure_rate": 4}
    return table
