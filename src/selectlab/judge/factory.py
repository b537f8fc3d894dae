"""From the `judge:` config section to a backend and a protocol's settings."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from selectlab.judge import dataman, fineweb_edu, prrc, qurating, wanjuan
from selectlab.judge.backends import JudgeBackend
from selectlab.judge.resolve import DEFAULT_MAX_FAILURE_RATE
from selectlab.judge.run import RunSettings
from selectlab.judge.simulated import SimulatedDocument, SimulatedJudge, SimulatedSettings


def simulated_documents(sample: pd.DataFrame, ground_truth: pd.DataFrame
                        ) -> dict[str, SimulatedDocument]:
    """The simulated judge's view of every sampled document: source, damage and text."""
    if "doc_id" in sample.columns:
        docs = sample[["doc_id", "set_name", "source_detail", "text"]]
    else:
        sides = [sample[[f"doc_{s}", f"set_name_{s}", f"source_detail_{s}", f"text_{s}"]]
                 .set_axis(["doc_id", "set_name", "source_detail", "text"], axis=1)
                 for s in ("a", "b")]
        docs = pd.concat(sides).drop_duplicates("doc_id")
    truth = ground_truth.set_index("id")
    missing = sorted(set(docs["doc_id"]) - set(truth.index))
    if missing:
        raise ValueError(f"{len(missing)} sampled documents have no ground truth (e.g. "
                         f"{missing[:3]}): the simulated judge needs the embedded corpus")
    return {
        row.doc_id: SimulatedDocument(row.set_name, row.source_detail,
                                      str(truth.at[row.doc_id, "operator"]),
                                      float(truth.at[row.doc_id, "severity"]), row.text)
        for row in docs.itertuples(index=False)
    }


def build_backend(backend: dict, *, seed: int, gpus: int = 0, simulated: dict | None = None,
                  sample: pd.DataFrame | None = None,
                  ground_truth: str | Path | None = None) -> JudgeBackend:
    kind = backend["kind"]
    model = backend.get("model")
    if kind == "simulated":
        if ground_truth is None or sample is None:
            raise ValueError("the simulated judge needs the sample and corpus/ground_truth.parquet")
        documents = simulated_documents(sample, pd.read_parquet(ground_truth))
        settings = SimulatedSettings(seed=seed, **(simulated or {}))
        return SimulatedJudge(documents, settings, model_id=model or "simulated-judge")
    if not model:
        raise ValueError(f"judge backend {kind!r} needs `model`")
    if kind == "transformers":
        from selectlab.judge.transformers_backend import TransformersJudge

        return TransformersJudge(model, gguf_file=backend.get("gguf_file"),
                                 dtype=backend.get("dtype", "float32"),
                                 batch_size=backend.get("batch_size", 4),
                                 max_input_tokens=backend.get("max_model_len", 4096), seed=seed)
    if kind == "vllm":
        from selectlab.judge.vllm_backend import VLLMJudge

        return VLLMJudge(model, tensor_parallel_size=max(1, gpus),
                         dtype=backend.get("dtype", "auto"),
                         max_model_len=backend.get("max_model_len", 4096),
                         top_logprobs=backend.get("top_logprobs", 20), seed=seed,
                         gpu_memory_utilization=backend.get("gpu_memory_utilization", 0.9),
                         enforce_eager=backend.get("enforce_eager", False))
    if kind == "openai":
        from selectlab.judge.openai_backend import OpenAIJudge

        if not backend.get("base_url"):
            raise ValueError("judge backend 'openai' needs `base_url`")
        return OpenAIJudge(backend["base_url"], model, api_key_env=backend.get("api_key_env"),
                           logprobs=backend.get("logprobs", True),
                           label_endpoint=backend.get("label_endpoint", "completions"),
                           concurrency=backend.get("concurrency", 8),
                           max_attempts=backend.get("max_attempts", 6),
                           timeout_s=backend.get("timeout_s", 120.0),
                           backoff_s=backend.get("backoff_s", 1.0),
                           max_backoff_s=backend.get("max_backoff_s", 60.0), seed=seed)
    raise ValueError(f"unknown judge backend kind {kind!r}")


def protocol_settings(name: str, protocol: dict, backend_cfg: dict, backend: JudgeBackend):
    """The protocol's own settings; QuRating's depend on whether the backend gives logprobs."""
    if name == "qurating":
        return qurating.Settings(
            criteria=tuple(protocol.get("criteria", qurating.CRITERIA)),
            use_logprobs=backend.supports_logprobs,
            top_logprobs=backend_cfg.get("top_logprobs", 20),
            samples_without_logprobs=protocol.get("samples_without_logprobs", 5),
            sample_temperature=protocol.get("sample_temperature", 1.0),
        )
    if name == "dataman":
        return dataman.Settings(max_tokens=protocol.get("max_new_tokens", 1024),
                                temperature=protocol.get("temperature", 0.0))
    if name == "prrc":
        return prrc.Settings(dimensions=tuple(protocol.get("dimensions", prrc.DIMENSIONS)),
                             max_tokens=protocol.get("max_new_tokens", 256),
                             temperature=protocol.get("temperature", 0.0))
    if name == "fineweb_edu":
        return fineweb_edu.Settings(max_tokens=protocol.get("max_new_tokens", 256),
                                    temperature=protocol.get("temperature", 0.0))
    if name == "wanjuan":
        return wanjuan.Settings(criteria=tuple(protocol.get("criteria", wanjuan.CRITERIA)),
                                max_tokens=protocol.get("max_new_tokens", 160),
                                temperature=protocol.get("temperature", 0.0))
    raise ValueError(f"unknown judge protocol {name!r}")


def run_settings(protocol: dict, backend_cfg: dict,
                 max_failure_rate: float = DEFAULT_MAX_FAILURE_RATE) -> RunSettings:
    prices = backend_cfg.get("price_per_1k_tokens", {})
    return RunSettings(max_attempts=protocol.get("max_attempts", 3),
                       retry_temperature=backend_cfg.get("retry_temperature", 0.7),
                       batch_size=backend_cfg.get("batch_size", 16),
                       batch_retries=backend_cfg.get("batch_retries", 2),
                       max_failure_rate=max_failure_rate,
                       price_per_1k_prompt=prices.get("prompt", 0.0),
                       price_per_1k_completion=prices.get("completion", 0.0))
