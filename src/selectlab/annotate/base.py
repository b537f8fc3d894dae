"""The contract every rater family implements, and what the registry knows about a family.

An annotator turns a batch of documents into score columns, one value per document in the
order given. It never drops a document: a value it cannot compute is None, and the family's
`missing_reason` column says why.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from selectlab.shards import Document

MISSING_REASON = "missing_reason"


class Annotator(ABC):
    """One rater family's scorer.

    `schema` lists the score columns (without `id`, which the runner adds first); it may depend
    on a loaded model, so it is read only after `setup()`.
    """

    kind: str = ""
    # Shown in the throughput table; a model family names its model here.
    model_label: str = "rules"
    device: str = "cpu"

    def setup(self) -> None:  # noqa: B027 - optional hook; rule-based families load nothing
        """Load models or fitted statistics (timed apart from the annotation itself)."""

    @property
    @abstractmethod
    def schema(self) -> pa.Schema:
        """The score columns this family writes, in order."""

    @abstractmethod
    def annotate_batch(self, docs: Sequence[Document]) -> dict[str, list | pa.Array]:
        """Score columns for `docs`, each a list (or a pyarrow array, for wide values such as
        vectors) with one value per document in input order."""

    @property
    def input_tokens(self) -> int | None:
        """Tokens the family's own model has read so far; None for families without a model
        (their throughput is then counted in the corpus tokenizer's tokens)."""
        return None

    def peak_device_memory_gb(self) -> float | None:
        """Peak accelerator memory of this process, where the family used one."""
        return None

    def failure_counts(self) -> dict[str, int]:
        """Documents scored so far that got no value because the family's model failed on
        them, by cause ("status: reason"; the runner fails the shard above `max_failure_rate`).
        Families that compute every value (rules, forward passes) have none."""
        return {}

    def model_shape(self):
        """The family model's `selectlab.flops.ModelShape` (its FLOPs are inference over
        `input_tokens` plus generated tokens); None for families without a model."""
        return None


def no_fitted_inputs(run_dir: str, name: str, params: dict) -> list[str]:
    return []


@dataclass(frozen=True)
class FamilyKind:
    """How the workflow builds and runs one kind of rater family.

    `build(params, fitted, gpus)` returns the annotator; `fitted` are the paths that
    `fitted_inputs(run_dir, family_name, params)` declared as the annotation job's inputs
    (statistics or models fitted by earlier rules, e.g. `raters/{name}/`), in the same order;
    `gpus` is what the job was given (0: CPU).
    """

    build: Callable[[dict, list[str], int], Annotator]
    fitted_inputs: Callable[[str, str, dict], list[str]] = no_fitted_inputs
    container: str = "cpu"  # key of the workflow's CONTAINERS
    uses_model: bool = False  # a model family: may ask for a GPU at full scale


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    """Indices grouped into batches of similar length (longest first), to cut padding.

    The caller scores each batch and writes the values back by index, so the output keeps the
    input order whatever the batching.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def join_reasons(reasons: Sequence[str]) -> str | None:
    """The `missing_reason` value of one row: the distinct reasons in order, or None."""
    unique = list(dict.fromkeys(reasons))
    return ";".join(unique) if unique else None
