"""The MATES influence family: a stage's data-influence model scores every document of a shard.

Sidecar `{variant}__influence{k}/{shard}.parquet`: `influence`, the influence on the reference
set that the model fitted after stage k-1 predicts for the document's unit (selectlab.mates.units),
in standard deviations of that stage's oracle influence; null, with `missing_reason`, for a
document an earlier stage trained on (stage k selects among the rest) or one without tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from selectlab.annotate.base import MISSING_REASON, Annotator
from selectlab.mates.plan import COLUMN
from selectlab.mates.units import EARLIER_STAGE
from selectlab.shards import Document


class InfluenceAnnotator(Annotator):
    kind = "mates_influence"

    def __init__(self, model_dir: str | Path, tokenizer_dir: str | Path,
                 earlier_selections: Sequence[str | Path], unit_tokens: int,
                 forward_batch_size: int, gpus: int):
        self.model_dir = Path(model_dir)
        self.tokenizer_dir = tokenizer_dir
        self.earlier_selections = list(earlier_selections)
        self.unit_tokens = unit_tokens
        self.forward_batch_size = forward_batch_size
        self.gpus = gpus
        self.model_label = "MATES data-influence model"
        self.device = "cpu"
        self._tokens_read = 0

    def setup(self) -> None:
        from selectlab.devices import select_device
        from selectlab.mates.units import earlier_ids
        from selectlab.raters.load import load_rater
        from selectlab.tokens import load_tokenizer

        self.device = select_device(self.gpus)
        self.rater = load_rater(self.model_dir, gpus=self.gpus,
                                forward_batch_size=self.forward_batch_size)
        self.tokenizer = load_tokenizer(self.tokenizer_dir)
        self.excluded = earlier_ids(self.earlier_selections)
        self.model_label = f"MATES influence heads on {self.rater.backbone.label}"

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(COLUMN, pa.float64()), pa.field(MISSING_REASON, pa.string())])

    @property
    def input_tokens(self) -> int:
        return self._tokens_read

    def model_shape(self):
        from selectlab.flops import module_shape

        backbone = self.rater.backbone
        return module_shape(backbone.model, backbone.window)

    def annotate_batch(self, docs: Sequence[Document]) -> dict[str, list]:
        from selectlab.flops import chunked_tokens
        from selectlab.mates.units import is_excluded, unit_texts

        skip = is_excluded([doc.id for doc in docs], self.excluded)
        values: list[float | None] = [None] * len(docs)
        reasons: list[str | None] = [EARLIER_STAGE if s else None for s in skip]
        todo = np.flatnonzero(~skip)
        if len(todo):
            texts = unit_texts(self.tokenizer, [docs[i].text for i in todo], self.unit_tokens)
            self._tokens_read += sum(chunked_tokens(self.rater.backbone, texts))
            scored = self.rater.score(texts)
            for i, value, reason in zip(todo, scored[COLUMN], scored[MISSING_REASON],
                                        strict=True):
                values[i] = None if reason is not None or not np.isfinite(value) else float(value)
                reasons[i] = reason
        return {COLUMN: values, MISSING_REASON: reasons}

    def peak_device_memory_gb(self) -> float | None:
        import torch

        if not self.device.startswith("cuda"):
            return None
        return torch.cuda.max_memory_allocated() / 1e9


def build(params: dict, fitted: list[str], gpus: int) -> Annotator:
    """fitted: influence model card, its weights, the run's tokenizer, earlier selections
    (selectlab.mates.plan.family_fitted_inputs)."""
    return InfluenceAnnotator(Path(fitted[0]).parent, fitted[2], fitted[3:],
                              params["unit_tokens"], params["forward_batch_size"], gpus)


def fitted_inputs(run_dir: str, name: str, params: dict) -> list[str]:
    from selectlab.mates.plan import family_fitted_inputs

    return family_fitted_inputs(run_dir, name, params)
