"""The one interface every judge backend implements, and what passes through it.

A protocol turns a document (or a pair) into `CompletionRequest`s; a backend answers each with a
`Completion`: the generated text (one per sample), optionally the top log-probabilities of the
first generated token, token counts and latency. Protocols read label probabilities out of those
top log-probabilities with `label_logprobs`, so every backend only has to report what it saw.
A backend never raises for one bad request: it returns a `Completion` with `error` set, and the
runner records a `backend_error` row. A call that fails as a whole (an engine error for the
batch) raises; the caller sends the batch again (`complete_with_retries`). A backend that can
answer nothing more (a crashed engine) raises `BackendDead`, which is never retried: the job
stops, keeping what it has finished.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

KINDS = ("simulated", "transformers", "vllm", "openai")

log = logging.getLogger(__name__)


class BackendDead(RuntimeError):
    """The backend cannot answer any further request (its engine died): stop the job."""


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" or "user"
    content: str


@dataclass(frozen=True)
class CompletionRequest:
    messages: tuple[ChatMessage, ...]
    max_tokens: int
    temperature: float = 0.0
    n: int = 1  # independent samples (pairwise judgments without log-probabilities)
    top_logprobs: int = 0  # > 0: report this many top log-probabilities of the first token
    # Who and what is being judged (protocol, criterion, doc ids, order, attempt). Real backends
    # ignore it; the simulated judge answers from it.
    meta: Mapping[str, Any] = field(default_factory=dict)
    prompt: str | None = None  # a verbatim prompt (plain completion endpoints) instead of messages


@dataclass
class Completion:
    texts: list[str]
    top_logprobs: dict[str, float] | None = None  # decoded token -> log-probability, 1st position
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    error: str | None = None

    @property
    def text(self) -> str:
        return self.texts[0] if self.texts else ""


@runtime_checkable
class JudgeBackend(Protocol):
    kind: str
    model_id: str
    supports_logprobs: bool

    def complete(self, requests: Sequence[CompletionRequest]) -> list[Completion]:
        """One `Completion` per request, in order; failures are reported in `error`."""
        ...

    def fingerprint(self) -> dict:
        """The settings that change answers (beyond the prompt): part of every cache key."""
        ...


def complete_with_retries(backend: JudgeBackend, requests: Sequence[CompletionRequest],
                          retries: int) -> list[Completion]:
    """`backend.complete`, sent again up to `retries` times when the call fails as a whole.

    A wrong number of completions counts as such a failure. `BackendDead` is not retried, and
    the last failure is raised when every try failed.
    """
    for attempt in range(retries + 1):
        try:
            completions = backend.complete(requests)
            if len(completions) != len(requests):
                raise RuntimeError(f"{backend.kind} returned {len(completions)} completions "
                                   f"for {len(requests)} requests")
            return completions
        except BackendDead:
            raise
        except Exception as error:  # noqa: BLE001 - any engine failure of the call is retried
            if attempt == retries:
                raise
            log.warning("%s: batch of %d failed (%s: %s); sending it again (%d/%d)",
                        backend.kind, len(requests), type(error).__name__, error, attempt + 1,
                        retries)
    raise AssertionError("unreachable")


def plain_prompt(messages: Sequence[ChatMessage]) -> str:
    """A prompt for models or endpoints without a chat template: the turns, then an answer cue."""
    parts = [message.content.strip() for message in messages]
    return "\n\n".join(parts) + "\n\nAnswer:"


def label_logprobs(top: Mapping[str, float] | None, labels: Sequence[str]) -> dict[str, float]:
    """Log-probability of each label among a first token's top alternatives.

    Tokenizers spell a label several ways (" A", "A", "▁A", "ĠA"); every spelling that strips to
    the label counts, and their probabilities add up. Labels absent from `top` are left out.
    """
    found: dict[str, list[float]] = {}
    for token, logprob in (top or {}).items():
        key = token.replace("\u2581", " ").replace("\u0120", " ").strip()
        if key in labels and logprob is not None and math.isfinite(logprob):
            found.setdefault(key, []).append(float(logprob))
    return {label: _logsumexp(values) for label, values in found.items()}


def _logsumexp(values: Sequence[float]) -> float:
    peak = max(values)
    return peak + math.log(sum(math.exp(v - peak) for v in values))


def messages_as_dicts(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def render_messages(tokenizer, messages: Sequence[ChatMessage]) -> str:
    """The prompt text for a local model: its chat template if it has one, else `plain_prompt`."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages_as_dicts(messages), tokenize=False,
                                             add_generation_prompt=True)
    return plain_prompt(messages)
