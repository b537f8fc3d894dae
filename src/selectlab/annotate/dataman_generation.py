"""DataMan at full scale: the fine-tuned LM writes each document's ratings, which are parsed.

The rater (`selectlab.raters.dataman_generative`, card kind `generative`) builds one verbatim
prompt per document and its judge backend generates the answer: vLLM on the job's GPU at full
scale, greedy, with a budget of a few tokens beyond the longest answer. Every answer goes through
the rater's strict parser. An answer that does not parse is asked again, by sampling at
`retry_temperature` (a greedy model would repeat itself word for word), up to `max_attempts` in
all; a document still without a parseable answer keeps its row, with null ratings, `status`
`parse_error` and a `missing_reason` that quotes the last parser error. A backend error (for
example a prompt longer than the engine's context) is not retried: the same prompt would fail
the same way; it is recorded with `status` `backend_error`. A generation call that fails as a
whole is sent again (`batch_retries`), then fails the job; a dead engine fails it at once. The
runner fails a shard whose share of documents without ratings passes `max_failure_rate`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from selectlab.annotate.rater_family import (
    GENERATIVE,
    RaterAnnotator,
    arrow_columns,
    check_card,
    rater_label,
    sidecar_schema,
)
from selectlab.judge.backends import CompletionRequest, JudgeBackend, complete_with_retries
from selectlab.judge.parse import BACKEND_ERROR, OK, PARSE_ERROR, Parsed
from selectlab.shards import Document

LOG = logging.getLogger(__name__)
STATUS = "status"


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int
    retry_temperature: float
    batch_retries: int = 2

    def __post_init__(self):
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")


@dataclass(frozen=True)
class Answer:
    """One document's outcome: the parsed ratings, or why there are none."""

    value: dict | None
    status: str
    reason: str | None
    attempts: int


@dataclass
class TokenCounts:
    prompt: int = 0
    completion: int = 0


def attempt_request(request: CompletionRequest, attempt: int,
                    retry_temperature: float) -> CompletionRequest:
    temperature = request.temperature
    if attempt > 1 and temperature == 0.0:
        temperature = retry_temperature
    return dataclasses.replace(request, temperature=temperature,
                               meta=dict(request.meta) | {"attempt": attempt})


def generate_with_retries(backend: JudgeBackend, requests: Sequence[CompletionRequest],
                          parse: Callable[[str], Parsed], policy: RetryPolicy,
                          tokens: TokenCounts) -> list[Answer]:
    """One `Answer` per request, in order; `tokens` accumulates what every attempt used."""
    answers: list[Answer | None] = [None] * len(requests)
    pending = list(range(len(requests)))
    for attempt in range(1, policy.max_attempts + 1):
        if not pending:
            break
        asked = [attempt_request(requests[i], attempt, policy.retry_temperature)
                 for i in pending]
        completions = complete_with_retries(backend, asked, policy.batch_retries)
        again = []
        for i, completion in zip(pending, completions, strict=True):
            tokens.prompt += completion.prompt_tokens
            tokens.completion += completion.completion_tokens
            if completion.error:
                answers[i] = Answer(None, BACKEND_ERROR, f"backend error: {completion.error}",
                                    attempt)
                continue
            parsed = parse(completion.text)
            if parsed.ok:
                answers[i] = Answer(parsed.value, OK, None, attempt)
            elif attempt < policy.max_attempts:
                again.append(i)
            else:
                answers[i] = Answer(None, PARSE_ERROR, f"no parseable rating in {attempt} "
                                    f"attempt(s); last: {parsed.error}", attempt)
        if again:
            LOG.info("attempt %d: %d of %d answers did not parse; asking again", attempt,
                     len(again), len(pending))
        pending = again
    return answers  # type: ignore[return-value]  # every index is answered above


def answer_columns(answers: Sequence[Answer], heads: Sequence[str]) -> dict[str, list]:
    """The rating columns (null where there is no answer), `status` and `missing_reason`."""
    columns: dict[str, list] = {name: [] for name in heads}
    columns[STATUS], columns["missing_reason"] = [], []
    for answer in answers:
        for name in heads:
            columns[name].append(answer.value[name] if answer.value is not None else None)
        columns[STATUS].append(answer.status)
        columns["missing_reason"].append(answer.reason)
    return columns


class GenerativeDataManAnnotator(RaterAnnotator):
    kind = "rater_generative"

    def __init__(self, rater_dir: str | Path, policy: RetryPolicy, gpus: int):
        super().__init__(rater_dir, "dataman", forward_batch_size=1, gpus=gpus)
        self.policy = policy
        self.tokens = TokenCounts()
        self.failures: Counter[str] = Counter()  # "status: reason" -> documents without ratings

    def setup(self) -> None:
        from selectlab.raters.dataman_generative import parse_target
        from selectlab.raters.io import read_card
        from selectlab.raters.load import load_rater

        card = read_card(self.rater_dir)
        check_card(card, "dataman", self.rater_dir)
        if card["kind"] != GENERATIVE:
            raise ValueError(f"{self.rater_dir} is a {card['kind']} rater, not a generative "
                             "DataMan: annotate it with a family of kind rater")
        self.device = "cuda" if self.gpus > 0 else "cpu"
        self.rater = load_rater(self.rater_dir, gpus=self.gpus)
        self.model_label = rater_label(card)
        self._schema = sidecar_schema("dataman", self.rater.columns)
        self._heads = [h.name for h in self.rater.heads]
        self._parse = lambda text: parse_target(text, self.rater.version)

    def annotate_batch(self, docs: Sequence[Document]) -> dict[str, pa.Array]:
        requests = self.rater.requests([doc.text for doc in docs])
        answers = generate_with_retries(self.rater.backend, requests, self._parse, self.policy,
                                        self.tokens)
        self.failures.update(f"{a.status}: {a.reason}"[:200] for a in answers if a.status != OK)
        return arrow_columns(answer_columns(answers, self._heads), self.schema)

    @property
    def input_tokens(self) -> int:
        return self.tokens.prompt

    def failure_counts(self) -> dict[str, int]:
        return dict(self.failures)

    def model_shape(self):
        from transformers import AutoConfig

        from selectlab.flops import config_shape
        from selectlab.raters.io import MODEL_DIR

        config = AutoConfig.from_pretrained(str(self.rater_dir / MODEL_DIR))
        return config_shape(config, int(self.rater.card["max_length"]))

    @property
    def output_tokens(self) -> int:
        """Generated tokens, every attempt included (DataMan's Table 10 output speed)."""
        return self.tokens.completion

    def peak_device_memory_gb(self) -> float | None:
        import torch

        if not self.device.startswith("cuda"):
            return None
        # vLLM reserves its KV cache up front and may run the model in a child process, so
        # what this process allocated says little: report what the device holds (as
        # DataMan's Table 10 does).
        free, total = torch.cuda.mem_get_info()
        return (total - free) / 1e9
