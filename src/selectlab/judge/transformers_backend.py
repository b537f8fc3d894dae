"""A local causal LM as judge, through transformers, on CPU or GPU.

The model and tokenizer load from a local directory, or from a GGUF file inside it
(`gguf_file`, dequantised by transformers' GGUF loader). Prompts use the tokenizer's chat
template when it has one, else `plain_prompt`. Requests that ask for top log-probabilities are
answered with one forward pass (the first token's distribution; the greedy token is the text);
the rest are generated in left-padded batches, greedily at temperature 0, else by sampling.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from itertools import groupby

from selectlab.judge.backends import Completion, CompletionRequest, render_messages


class TransformersJudge:
    kind = "transformers"
    supports_logprobs = True

    def __init__(self, model: str, *, gguf_file: str | None = None, device: str | None = None,
                 dtype: str = "float32", batch_size: int = 4, max_input_tokens: int = 4096,
                 seed: int = 0, model_id: str | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        extra = {"gguf_file": gguf_file} if gguf_file else {}
        self.tokenizer = AutoTokenizer.from_pretrained(model, **extra)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(
            model, dtype=getattr(torch, dtype), **extra).to(self.device).eval()
        self.batch_size = batch_size
        self.max_input_tokens = max_input_tokens
        self.seed = seed
        self.model_id = model_id or (f"{model}/{gguf_file}" if gguf_file else model)
        self._settings = {"dtype": dtype, "max_input_tokens": max_input_tokens, "seed": seed}

    def fingerprint(self) -> dict:
        return {"kind": self.kind} | self._settings

    def render(self, request: CompletionRequest) -> str:
        if request.prompt is not None:
            return request.prompt
        return render_messages(self.tokenizer, request.messages)

    def complete(self, requests: Sequence[CompletionRequest]) -> list[Completion]:
        results: list[Completion | None] = [None] * len(requests)
        # Requests that share generation settings run together, in batches.
        indexed = sorted(range(len(requests)), key=lambda i: _group_key(requests[i]))
        for _, members in groupby(indexed, key=lambda i: _group_key(requests[i])):
            members = list(members)
            for start in range(0, len(members), self.batch_size):
                batch = members[start:start + self.batch_size]
                for i, completion in zip(batch, self._run_batch([requests[i] for i in batch]),
                                         strict=True):
                    results[i] = completion
        return results

    def _run_batch(self, requests: list[CompletionRequest]) -> list[Completion]:
        prompts = [self.render(r) for r in requests]
        started = time.perf_counter()
        try:
            encoded = self.tokenizer(prompts, return_tensors="pt", padding=True,
                                     add_special_tokens=False)
            width = encoded["input_ids"].shape[1]
            if width > self.max_input_tokens:
                raise ValueError(f"prompt of {width} tokens exceeds max_input_tokens "
                                 f"{self.max_input_tokens}")
            encoded = encoded.to(self.device)
            if requests[0].top_logprobs > 0:
                completions = self._first_token(encoded, requests[0].top_logprobs)
            else:
                completions = self._generate(encoded, requests[0])
        except (RuntimeError, ValueError) as error:
            message = f"transformers: {type(error).__name__}: {error}"
            return [Completion([], error=message) for _ in requests]
        share = (time.perf_counter() - started) / len(requests)
        prompt_lengths = encoded["attention_mask"].sum(dim=1).tolist()
        for completion, length in zip(completions, prompt_lengths, strict=True):
            completion.prompt_tokens = int(length)
            completion.latency_s = share
        return completions

    def _first_token(self, encoded, k: int) -> list[Completion]:
        import torch

        with torch.no_grad():
            logits = self.model(**encoded).logits[:, -1, :].float()
        logprobs = torch.log_softmax(logits, dim=-1)
        top = torch.topk(logprobs, k=min(k, logprobs.shape[-1]), dim=-1)
        completions = []
        for values, ids in zip(top.values.tolist(), top.indices.tolist(), strict=True):
            alternatives: dict[str, float] = {}
            for value, token_id in zip(values, ids, strict=True):
                token = self.tokenizer.decode([token_id])
                # Two ids can decode alike; keep the likelier (`label_logprobs` adds variants
                # that differ in spelling, not duplicates of one spelling).
                alternatives.setdefault(token, value)
            completions.append(Completion([self.tokenizer.decode([ids[0]])], alternatives,
                                          completion_tokens=1))
        return completions

    def _generate(self, encoded, request: CompletionRequest) -> list[Completion]:
        import torch

        sampling = request.temperature > 0
        options = {"max_new_tokens": request.max_tokens, "do_sample": sampling,
                   "num_return_sequences": request.n,
                   "pad_token_id": self.tokenizer.pad_token_id}
        if sampling:
            options["temperature"] = request.temperature
            torch.manual_seed(self.seed + int(request.meta.get("attempt", 1)))
        with torch.no_grad():
            output = self.model.generate(**encoded, **options)
        new_tokens = output[:, encoded["input_ids"].shape[1]:]
        completions = []
        for row in range(encoded["input_ids"].shape[0]):
            samples = new_tokens[row * request.n:(row + 1) * request.n]
            texts, used = [], 0
            for sample in samples:
                kept = sample[sample != self.tokenizer.pad_token_id]
                used += int(kept.numel())
                texts.append(self.tokenizer.decode(kept, skip_special_tokens=True))
            completions.append(Completion(texts, completion_tokens=used))
        return completions


def _group_key(request: CompletionRequest) -> tuple:
    return (request.top_logprobs > 0, request.top_logprobs, request.max_tokens,
            request.temperature, request.n)
