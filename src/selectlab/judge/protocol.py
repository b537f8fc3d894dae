"""What the judging protocols share: queries, interpreted answers, template hashes, labels.

A protocol (`qurating`, `dataman`, `prrc`, `fineweb_edu`, `wanjuan`) turns its sample into
`Query`s, reads each answer into a `Judged` (parsed value, scalar value, confidence, status), and
folds the judgments into training labels. Templates are hashed so that the cache never mixes
answers to different wordings of a prompt.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from selectlab.judge.backends import ChatMessage, CompletionRequest
from selectlab.judge.parse import OK, Parsed

# QuRating's authors found a plain assistant persona judged better than an expert persona;
# every protocol uses the same one.
SYSTEM_PROMPT = "You are a helpful assistant."


def template_hash(*parts: str) -> str:
    """sha256 of a prompt template's text (placeholders unfilled), as hex."""
    return hashlib.sha256("\n\x1e\n".join(parts).encode("utf-8")).hexdigest()


def chat(user: str) -> tuple[ChatMessage, ...]:
    return (ChatMessage("system", SYSTEM_PROMPT), ChatMessage("user", user))


@dataclass(frozen=True)
class Query:
    """One question to the judge: a document (or ordered pair) under one criterion."""

    protocol: str
    criterion: str
    template_hash: str
    request: CompletionRequest
    doc_id: str | None = None  # pointwise protocols
    doc_a: str | None = None  # pairwise: the pair as sampled, whatever the order shown
    doc_b: str | None = None
    order: int = 0  # pairwise: 0 = doc_a shown as excerpt A, 1 = doc_b shown as excerpt A

    @property
    def doc_ids(self) -> tuple[str, ...]:
        return (self.doc_id,) if self.doc_id is not None else (self.doc_a, self.doc_b)

    def for_attempt(self, attempt: int, retry_temperature: float) -> CompletionRequest:
        """The request for attempt `attempt` (1-based).

        A greedy judge repeats an unparseable answer word for word, so re-queries sample at
        `retry_temperature` instead.
        """
        temperature = self.request.temperature
        if attempt > 1 and temperature == 0.0:
            temperature = retry_temperature
        meta = dict(self.request.meta) | {"attempt": attempt}
        return dataclasses.replace(self.request, temperature=temperature, meta=meta)

    def generation_settings(self) -> dict:
        r = self.request
        return {"max_tokens": r.max_tokens, "temperature": r.temperature, "n": r.n,
                "top_logprobs": r.top_logprobs, "verbatim": r.prompt is not None}


def request_meta(protocol: str, criterion: str, **ids: Any) -> dict:
    return {"protocol": protocol, "criterion": criterion} | ids


@dataclass(frozen=True)
class Judged:
    """An answer read by its protocol."""

    status: str
    parsed: Any = None  # JSON-serialisable parsed answer, None on failure
    value: float | None = None  # the scalar the judgments table shows
    confidence: float | None = None
    error: str = ""

    @classmethod
    def from_parsed(cls, parsed: Parsed, value: float | None = None,
                    confidence: float | None = None) -> Judged:
        if not parsed.ok:
            return cls(parsed.status, error=parsed.error)
        return cls(OK, parsed.value, value, confidence)

    def parsed_json(self) -> str | None:
        return None if self.parsed is None else json.dumps(self.parsed, sort_keys=True)


def pointwise_queries(protocol: str, templates: dict[str, str], sample: pd.DataFrame,
                      max_tokens: int, temperature: float) -> list[Query]:
    """One query per (criterion, document): `templates` maps criterion -> prompt with `{text}`."""
    queries = []
    for criterion, template in templates.items():
        digest = template_hash(SYSTEM_PROMPT, template)
        for row in sample.itertuples(index=False):
            request = CompletionRequest(chat(template.replace("{text}", row.text)),
                                        max_tokens=max_tokens, temperature=temperature,
                                        meta=request_meta(protocol, criterion, doc_id=row.doc_id))
            queries.append(Query(protocol, criterion, digest, request, doc_id=row.doc_id))
    return queries


def judged_number(parsed: Parsed) -> Judged:
    """A parsed number (or yes/no as 1/0) as the judgment's value; failures stay failures."""
    return Judged.from_parsed(parsed, value=float(parsed.value) if parsed.ok else None)


def integer_labels(judgments: pd.DataFrame, sample: pd.DataFrame,
                   criteria: tuple[str, ...]) -> pd.DataFrame:
    """One row per document with at least one criterion parsed; null where one failed.

    Columns: doc_id, text, set_name, then one nullable integer column per criterion.
    """
    ok = judgments[judgments["status"] == OK]
    wide = ok.pivot_table(index="doc_id", columns="criterion", values="value", aggfunc="first")
    wide = wide.reindex(columns=list(criteria)).reset_index()
    table = wide.merge(sample[["doc_id", "text", "set_name"]], on="doc_id", how="left",
                       validate="one_to_one")
    for criterion in criteria:
        table[criterion] = table[criterion].round().astype("Int64")
    columns = ["doc_id", "text", "set_name", *criteria]
    return table[columns].sort_values("doc_id", ignore_index=True)
