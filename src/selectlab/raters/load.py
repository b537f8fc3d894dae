"""Loading a saved rater of any kind: the one entry point that knows all three.

Kept apart from `raters.io` (cards, the shared `Rater` interface, trained heads), which the
kinds' own modules (`pretrained`, `dataman_generative`) import: loading here imports them, so
no module of the package imports its own importer.
"""

from __future__ import annotations

from pathlib import Path

from selectlab.devices import select_device
from selectlab.raters.io import Rater, load_head_rater, read_card


def load_rater(rater_dir: str | Path, *, gpus: int = 0, forward_batch_size: int = 64) -> Rater:
    """The rater saved in `rater_dir` (raters/{rater}/), ready to `score(texts)`."""
    rater_dir = Path(rater_dir)
    card = read_card(rater_dir)
    kind = card["kind"]
    if kind == "heads":
        return load_head_rater(rater_dir, card, select_device(gpus), forward_batch_size)
    if kind == "pretrained_classifier":
        from selectlab.raters.pretrained import PretrainedClassifierRater

        return PretrainedClassifierRater.from_card(card, select_device(gpus),
                                                   forward_batch_size)
    if kind == "generative":
        from selectlab.raters.dataman_generative import GenerativeDataManRater

        return GenerativeDataManRater.from_card(rater_dir, card, gpus)
    if kind == "separate":
        raise ValueError(f"{rater_dir} holds QuRating Table 6's separate models, one per "
                         f"criterion: load one of them, {sorted(card['parts'].values())}")
    raise ValueError(f"{rater_dir}: unknown rater kind {kind!r}")
