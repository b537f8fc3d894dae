"""The chat template: how an instruction and its response become the tokens a model sees.

A training example is `[start] + prompt + response + [EOS]`, where `start` is the tokenizer's
BOS token (EOS where it has none: our BPE tokenizer, whose pretraining sequences separate
documents with EOS) and `prompt` is the configured template with the instruction filled in.
Prompt and response are tokenized separately, so generation, which feeds `[start] + prompt`,
continues from exactly the tokens training saw. The loss covers the response and its EOS only
(the prompt's labels are IGNORE), as supervised fine-tuning usually does; the papers do not
say otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

IGNORE = -100  # the label transformers' loss skips
PLACEHOLDER = "{instruction}"


@dataclass(frozen=True)
class ChatTemplate:
    prompt: str

    def __post_init__(self) -> None:
        if self.prompt.count(PLACEHOLDER) != 1:
            raise ValueError(f"the chat template must contain {PLACEHOLDER} exactly once: "
                             f"{self.prompt!r}")

    def render(self, instruction: str) -> str:
        return self.prompt.replace(PLACEHOLDER, instruction.strip())


def start_id(tokenizer) -> int:
    return tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id


def encode(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def prompt_ids(tokenizer, template: ChatTemplate, instruction: str) -> list[int]:
    return [start_id(tokenizer), *encode(tokenizer, template.render(instruction))]


def training_example(tokenizer, template: ChatTemplate, instruction: str, response: str,
                     max_len: int) -> tuple[list[int], list[int]]:
    """(input ids, labels), cut to `max_len` tokens: a response that does not fit loses its
    end (and its EOS); a prompt that leaves no room for any response token is an error."""
    prompt = prompt_ids(tokenizer, template, instruction)
    answer = [*encode(tokenizer, response.strip()), tokenizer.eos_token_id]
    if len(prompt) >= max_len:
        raise ValueError(f"prompt of {len(prompt)} tokens leaves no room for a response in "
                         f"{max_len} tokens: {instruction[:80]!r}")
    ids = (prompt + answer)[:max_len]
    labels = ([IGNORE] * len(prompt) + answer)[:max_len]
    return ids, labels
