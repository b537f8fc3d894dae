"""The REFERENCE-BASED judge: the offline stand-in for an LLM comparing two answers.

It is no language model. It scores each answer by its word overlap with the instruction's
reference answer (unigram F1 over lower-cased words, as ROUGE-1 F does) and prefers the answer
with the higher score; answers whose scores differ by no more than `tie_margin` are a tie. It
answers the same answer-comparison requests as the LLM backends (`compare.py`), in the same
words ("A", "B" or "tie"), so the comparison, both presentation orders, parsing and the cache
run exactly as with a real judge; it reads which answers were shown as A and B, and the
reference, from the request's `meta`. Every table and figure built on it says so (see
`resolve.judge_notes`), and the schema refuses it at full scale.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from selectlab.judge.backends import Completion, CompletionRequest

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def overlap_f1(answer: str, reference: str) -> float:
    """Unigram F1 of `answer` against `reference` (0 when either has no words)."""
    got, want = Counter(words(answer)), Counter(words(reference))
    common = sum((got & want).values())
    if common == 0:
        return 0.0
    precision, recall = common / sum(got.values()), common / sum(want.values())
    return 2 * precision * recall / (precision + recall)


class ReferenceOverlapJudge:
    kind = "reference"
    supports_logprobs = False

    def __init__(self, answers: Mapping[str, str], references: Mapping[str, str], *,
                 tie_margin: float = 0.0, model_id: str = "reference-overlap-f1"):
        self.answers = answers  # answer id -> answer text
        self.references = references  # instruction id -> reference answer
        self.tie_margin = tie_margin
        self.model_id = model_id

    def fingerprint(self) -> dict:
        return {"kind": self.kind, "metric": "unigram_f1", "tie_margin": self.tie_margin}

    def verdict(self, meta: Mapping) -> str:
        reference = self.references[meta["instruction_id"]]
        first = overlap_f1(self.answers[meta["shown_a"]], reference)
        second = overlap_f1(self.answers[meta["shown_b"]], reference)
        if abs(first - second) <= self.tie_margin:
            return "tie"
        return "A" if first > second else "B"

    def complete(self, requests: Sequence[CompletionRequest]) -> list[Completion]:
        completions = []
        for request in requests:
            try:
                completions.append(Completion([self.verdict(request.meta)], completion_tokens=1))
            except KeyError as missing:
                completions.append(Completion([], error=f"reference judge: no answer or "
                                              f"reference for {missing}"))
        return completions
