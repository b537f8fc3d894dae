"""LLM judgments of corpus documents: the labels QuRating, DataMan and Meta-rater's PRRC learn from.

One `JudgeBackend` interface (`backends.py`) with four implementations (vLLM, an OpenAI-compatible
HTTP endpoint, a local transformers model, and the simulated judge of the offline default); one
module per protocol (`qurating.py`, `dataman.py`, `prrc.py`) that writes prompts and reads answers;
`run.py` ties them together with the on-disk cache (`cache.py`) and the summary table.
"""
