"""Model-rater families: a trained (or wrapped public) rater scores every document of a shard.

The rater is the directory `raters/{rater}/` that `train_rater` wrote, loaded with
`selectlab.raters.load.load_rater`; its `score(texts)` gives the columns of the rater's sidecar
family (docs/layout.md) and `missing_reason`. This family writes exactly those columns. The
rater reads long documents in chunks and batches the chunks by length itself, so the runner's
batches go to it whole.

Column types come from the rater's heads, not from the values of a batch, so every shard of a
family has the same schema: class labels (DataMan and PRRC ratings) are int64, the DataMan
domain and status strings, every other score or probability float64. A value the rater could
not compute (NaN or NA in `score`'s output) is null in the sidecar.

Kind `rater` serves every rater whose card is `heads` or `pretrained_classifier`. A generative
DataMan (fine-tuned LM that writes its ratings) belongs to kind `rater_generative`
(selectlab.annotate.dataman_generation), which re-asks unparseable answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow as pa

from selectlab import layout
from selectlab.annotate.base import MISSING_REASON, Annotator
from selectlab.shards import Document

GENERATIVE = "generative"


def rater_dir_inputs(run_dir: str, rater: str) -> list[str]:
    """What `train_rater` writes for a rater: its card first, then its model directory."""
    return [layout.rater_card(run_dir, rater), layout.rater_model(run_dir, rater)]


def rater_dir_of(fitted: Sequence[str]) -> Path:
    return Path(fitted[0]).parent


def sidecar_schema(rater: str, columns: Sequence[str]) -> pa.Schema:
    """The rater's score columns typed by its heads, then `missing_reason`."""
    from selectlab.raters.spec import CLASSES, DOMAIN, STATUS, heads

    class_heads = {h.name for h in heads(rater) if h.kind == CLASSES and h.name != DOMAIN}
    fields = []
    for name in columns:
        if name in (DOMAIN, STATUS):
            fields.append(pa.field(name, pa.string()))
        elif name in class_heads:
            fields.append(pa.field(name, pa.int64()))
        else:
            fields.append(pa.field(name, pa.float64()))
    return pa.schema([*fields, pa.field(MISSING_REASON, pa.string())])


def arrow_columns(values: Mapping[str, object], schema: pa.Schema) -> dict[str, pa.Array]:
    """`Rater.score` output as arrays of the sidecar schema; NaN and NA become null."""
    missing = [name for name in schema.names if name not in values]
    if missing:
        raise ValueError(f"the rater returned no values for columns {missing}")
    return {field.name: pa.array(values[field.name], type=field.type, from_pandas=True)
            for field in schema}


def rater_label(card: Mapping) -> str:
    """The throughput table's model column: what scores, and whether its labels are simulated."""
    backbone = card.get("backbone", {}).get("label", "?")
    kind = card["kind"]
    if kind == "heads":
        label = f"{card['rater']} heads on {backbone}"
    elif kind == GENERATIVE:
        label = f"{backbone} fine-tuned ({card['version']} ratings)"
    else:
        label = f"public classifier(s) {backbone}"
    if card.get("judge", {}).get("simulated"):
        label += " [trained on simulated-judge labels]"
    return label


def check_card(card: Mapping, rater: str, rater_dir: Path) -> None:
    if card.get("rater") != rater:
        raise ValueError(f"{rater_dir} holds rater {card.get('rater')!r}, the family names "
                         f"{rater!r}")


class RaterAnnotator(Annotator):
    kind = "rater"

    def __init__(self, rater_dir: str | Path, rater: str, forward_batch_size: int, gpus: int):
        self.rater_dir = Path(rater_dir)
        self.rater_name = rater
        self.forward_batch_size = forward_batch_size
        self.gpus = gpus
        self.model_label = rater
        self.device = "cpu"
        self._schema: pa.Schema | None = None
        self._tokens_read = 0

    def setup(self) -> None:
        from selectlab.devices import select_device
        from selectlab.raters.io import read_card
        from selectlab.raters.load import load_rater

        card = read_card(self.rater_dir)
        check_card(card, self.rater_name, self.rater_dir)
        if card["kind"] == GENERATIVE:
            raise ValueError(f"{self.rater_dir} is a generative DataMan: annotate it with a "
                             "family of kind rater_generative, which re-asks unparseable answers")
        self.device = select_device(self.gpus)
        self.rater = load_rater(self.rater_dir, gpus=self.gpus,
                                forward_batch_size=self.forward_batch_size)
        self.model_label = rater_label(card)
        self._schema = sidecar_schema(self.rater_name, self.rater.columns)

    @property
    def schema(self) -> pa.Schema:
        if self._schema is None:
            raise RuntimeError("setup() loads the rater before its schema is known")
        return self._schema

    def annotate_batch(self, docs: Sequence[Document]) -> dict[str, pa.Array]:
        from selectlab.flops import chunked_tokens

        texts = [doc.text for doc in docs]
        self._tokens_read += sum(sum(chunked_tokens(r, texts)) for r in self.readers())
        return arrow_columns(self.rater.score(texts), self.schema)

    def readers(self) -> list:
        """The encoder(s) the rater runs, each reading every text in chunks: the backbone of
        trained heads, or each wrapped public classifier."""
        if hasattr(self.rater, "backbone"):
            return [self.rater.backbone]
        return list(getattr(self.rater, "classifiers", {}).values())

    @property
    def input_tokens(self) -> int | None:
        return self._tokens_read if self.readers() else None

    def model_shape(self):
        from selectlab.flops import combined_shape, module_shape

        return combined_shape([module_shape(r.model, r.content_size + len(r.prefix)
                                            + len(r.suffix)) for r in self.readers()])

    def peak_device_memory_gb(self) -> float | None:
        import torch

        if not self.device.startswith("cuda"):
            return None
        return torch.cuda.max_memory_allocated() / 1e9
