"""Answers of a fine-tuned model to the evaluation instructions.

Prompts are the chat template's (`template.prompt_ids`), token for token what fine-tuning saw.
Greedy decoding at temperature 0, else sampling at `temperature` (and `top_p`) with the
settings' seed; an answer ends at EOS or after `max_new_tokens` (recorded as not finished).
Two backends: transformers (CPU or one GPU; left-padded batches of prompts of similar length)
and vLLM at full scale (the vllm container; one `generate` call over all prompts, which vLLM
batches itself, tensor parallel over the job's GPUs). Both get token ids, not text, so the
tokenizer is applied once, here.

The job's cost (selectlab.flops, inference: one forward pass per token) counts every prompt
token and every generated token up to EOS; padding and what a batch generates past an answer's
EOS are left out. n_ctx is the longest prompt plus `max_new_tokens`, the most an answer attends
over.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

ANSWER_COLUMNS = ["id", "variant", "answer", "answer_tokens", "finished", "backend"]
BACKENDS = ("transformers", "vllm")


@dataclass(frozen=True)
class GenerateSettings:
    max_new_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    batch_size: int = 16
    seed: int = 0
    dtype: str = "float32"

    @classmethod
    def from_dict(cls, params: dict) -> GenerateSettings:
        unknown = set(params) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown generation settings: {sorted(unknown)}")
        return cls(**params)


@dataclass(frozen=True)
class Answer:
    text: str
    tokens: int
    finished: bool  # stopped at EOS rather than at max_new_tokens


def check_context(prompts: Sequence[Sequence[int]], s: GenerateSettings, context: int) -> None:
    longest = max((len(p) for p in prompts), default=0)
    if longest + s.max_new_tokens > context:
        raise ValueError(f"a prompt of {longest} tokens plus {s.max_new_tokens} new tokens "
                         f"exceeds the model's context of {context} tokens")


def cut_at_eos(tokens: Sequence[int], eos_id: int) -> tuple[list[int], bool]:
    tokens = list(tokens)
    if eos_id in tokens:
        return tokens[:tokens.index(eos_id)], True
    return tokens, False


def generate_transformers(model_dir: str, prompts: Sequence[Sequence[int]],
                          s: GenerateSettings, device: str = "cpu") -> list[Answer]:
    import torch
    from transformers import LlamaForCausalLM

    from selectlab.devices import torch_dtype
    from selectlab.tokens import load_tokenizer

    tokenizer = load_tokenizer(model_dir)
    model = LlamaForCausalLM.from_pretrained(model_dir, dtype=torch_dtype(s.dtype, device))
    model.to(device).eval()
    check_context(prompts, s, model.config.max_position_embeddings)
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    order = sorted(range(len(prompts)), key=lambda i: (len(prompts[i]), i))
    answers: list[Answer | None] = [None] * len(prompts)
    for batch_number, start in enumerate(range(0, len(order), s.batch_size)):
        batch = order[start:start + s.batch_size]
        width = max(len(prompts[i]) for i in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, i in enumerate(batch):
            ids[row, width - len(prompts[i]):] = torch.tensor(list(prompts[i]))
            mask[row, width - len(prompts[i]):] = 1
        options = {"max_new_tokens": s.max_new_tokens, "do_sample": s.temperature > 0,
                   "eos_token_id": eos, "pad_token_id": pad}
        if s.temperature > 0:
            options |= {"temperature": s.temperature, "top_p": s.top_p}
            torch.manual_seed(s.seed + batch_number)
        with torch.no_grad():
            output = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device),
                                    **options)
        for row, i in enumerate(batch):
            tokens, finished = cut_at_eos(output[row, width:].tolist(), eos)
            answers[i] = Answer(tokenizer.decode(tokens, skip_special_tokens=True).strip(),
                                len(tokens), finished)
    return answers


def generate_vllm(model_dir: str, prompts: Sequence[Sequence[int]], s: GenerateSettings,
                  gpus: int = 1, gpu_memory_utilization: float = 0.9,
                  enforce_eager: bool = False) -> list[Answer]:
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    llm = LLM(model=model_dir, tensor_parallel_size=max(1, gpus), dtype=s.dtype, seed=s.seed,
              gpu_memory_utilization=gpu_memory_utilization, enforce_eager=enforce_eager)
    context = llm.llm_engine.model_config.max_model_len
    check_context(prompts, s, context)
    eos = llm.get_tokenizer().eos_token_id
    params = SamplingParams(temperature=s.temperature, top_p=s.top_p,
                            max_tokens=s.max_new_tokens, seed=s.seed, stop_token_ids=[eos],
                            skip_special_tokens=True)
    outputs = llm.generate([TokensPrompt(prompt_token_ids=list(p)) for p in prompts], params,
                           use_tqdm=False)
    answers = []
    for output in outputs:
        sample = output.outputs[0]
        tokens, _ = cut_at_eos(sample.token_ids, eos)
        answers.append(Answer(sample.text.strip(), len(tokens), sample.finish_reason == "stop"))
    return answers


def answers_table(ids: Sequence[str], variant: str, answers: Sequence[Answer],
                  backend: str) -> pd.DataFrame:
    rows = [{"id": i, "variant": variant, "answer": a.text, "answer_tokens": a.tokens,
             "finished": a.finished, "backend": backend} for i, a in zip(ids, answers, strict=True)]
    return pd.DataFrame(rows, columns=ANSWER_COLUMNS)


def generation_cost(model_dir: str, prompts: Sequence[Sequence[int]],
                    answers: Sequence[Answer], s: GenerateSettings, seconds: float,
                    device: str, gpus: int) -> dict:
    """The job's `cost` entry (see the module docstring), from the model's config, so that
    both backends count the same way."""
    from transformers import AutoConfig

    from selectlab.flops import config_shape, cost_record, inference_flops

    prompt_tokens = sum(len(p) for p in prompts)
    answer_tokens = sum(a.tokens for a in answers)
    context = max((len(p) for p in prompts), default=0) + s.max_new_tokens
    shape = config_shape(AutoConfig.from_pretrained(model_dir), context)
    tokens = prompt_tokens + answer_tokens
    return cost_record("inference", inference_flops(shape, tokens), seconds=seconds, gpus=gpus,
                       device=device, shape=shape, tokens=tokens, prompt_tokens=prompt_tokens,
                       answer_tokens=answer_tokens)
