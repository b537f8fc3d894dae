"""Raters trained on the judge's labels: QuRater, DataMan, PRRC, and the FineWeb-Edu- and
WanjuanCC-style classifiers.

    rater = load_rater("results/default/raters/qurater")
    columns = rater.score(texts)   # {column: one value per text} + missing_reason

Modules: `spec` (heads and sidecar columns per rater), `backbone` (encoders and decoders from
local directories, pooling right for either padding side), `chunks` (window-sized chunks,
length-weighted averages), `heads`, `train` (the shared loop, frozen or fine-tuned backbone),
`qurater` (Bradley-Terry on confident pairs), `pointwise` (DataMan, PRRC, FineWeb-Edu, WanjuanCC
heads), `dataman_generative` (DataMan's full-scale causal LM), `pretrained` (wrapping public
classifiers), `metrics`, `build` (one rater end to end), `io` (save, cards), `load` (any
saved rater), `tables`, `resolve` (config; no torch). Only `resolve` and `spec` may be imported
while the workflow builds its graph; everything else loads torch.
"""

from __future__ import annotations


def load_rater(rater_dir, **options):
    """The rater saved in `rater_dir`; see `selectlab.raters.load.load_rater`."""
    from selectlab.raters.load import load_rater as load

    return load(rater_dir, **options)
