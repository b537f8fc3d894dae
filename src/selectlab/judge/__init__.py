"""LLM judgments of corpus documents: the labels QuRating, DataMan, Meta-rater's PRRC and the
FineWeb-Edu- and WanjuanCC-style classifiers learn from.

One `JudgeBackend` interface (`backends.py`) with four implementations (vLLM, an OpenAI-compatible
HTTP endpoint, a local transformers model, and the simulated judge of the offline default); one
module per protocol (`qurating.py`, `dataman.py`, `prrc.py`, `fineweb_edu.py`, `wanjuan.py`) that
writes prompts and reads answers; `run.py` ties them together with the on-disk cache (`cache.py`)
and the summary table.
"""
