"""Asking the judge: cache look-up, batched queries, re-queries of unparseable answers, summary.

`run_protocol` builds a protocol's queries from its sample, answers what the cache already
holds from there, sends the rest to the backend in batches, re-queries answers that failed to
parse (up to `max_attempts` in all), stores every answered judgment in the cache as its batch
completes, and returns the judgments table, the training labels and the summary table. Failed
judgments stay in the judgments table with their status and error; nothing is dropped.

Failures fail the job (`selectlab.judge.failures`): a batch whose backend call raised is sent
again (`batch_retries`); a dead backend, or two batches in a row without a single answer (an
endpoint that is down), stop the run at once; and a finished run whose share of failed
judgments passes `max_failure_rate` raises instead of returning. Failed judgments are never
cached, so the next run asks for exactly those.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pandas as pd

from selectlab.judge import dataman, fineweb_edu, prrc, qurating, wanjuan
from selectlab.judge.backends import BackendDead, Completion, JudgeBackend, complete_with_retries
from selectlab.judge.cache import JudgmentCache, cache_key, settings_fingerprint
from selectlab.judge.failures import check_failure_rate, stopped_early
from selectlab.judge.parse import BACKEND_ERROR, OK, PARSE_ERROR
from selectlab.judge.protocol import Judged, Query

log = logging.getLogger(__name__)

PROTOCOLS: dict[str, ModuleType] = {"qurating": qurating, "dataman": dataman, "prrc": prrc,
                                    "fineweb_edu": fineweb_edu, "wanjuan": wanjuan}

JUDGMENT_COLUMNS = {
    "protocol": "object", "criterion": "object", "doc_id": "object", "doc_a": "object",
    "doc_b": "object", "order": "int64", "backend": "object", "model": "object",
    "template_hash": "object", "raw_response": "object", "parsed": "object",
    "value": "float64", "status": "object", "error": "object", "confidence": "float64",
    "attempts": "int64", "latency_s": "float64", "prompt_tokens": "int64",
    "completion_tokens": "int64",
}


@dataclass(frozen=True)
class RunSettings:
    max_attempts: int = 3
    retry_temperature: float = 0.7
    batch_size: int = 16
    batch_retries: int = 2
    max_failure_rate: float = 0.05
    price_per_1k_prompt: float = 0.0
    price_per_1k_completion: float = 0.0


@dataclass
class JudgeResult:
    judgments: pd.DataFrame
    labels: pd.DataFrame
    summary: pd.DataFrame
    queried: int  # judgments asked of the backend in this run (the rest came from the cache)
    wall_s: float


# Two batches in a row without one answer: the endpoint is down or rejects us (a wrong key),
# and asking the rest of the sample would only take long to fail the same way.
FAILED_BATCHES_BEFORE_STOPPING = 2


def raw_response(completion: Completion) -> str:
    """What the judge said: the text itself, or JSON when there are samples or log-probs."""
    if completion.top_logprobs is None and len(completion.texts) <= 1:
        return completion.text
    payload: dict = {"texts": completion.texts}
    if completion.top_logprobs is not None:
        payload["top_logprobs"] = completion.top_logprobs
    return json.dumps(payload, sort_keys=True)


def judgment_row(query: Query, judged: Judged, completion: Completion, attempts: int,
                 usage: dict, backend: JudgeBackend) -> dict:
    return {
        "protocol": query.protocol, "criterion": query.criterion, "doc_id": query.doc_id,
        "doc_a": query.doc_a, "doc_b": query.doc_b, "order": query.order,
        "backend": backend.kind, "model": backend.model_id,
        "template_hash": query.template_hash,
        "raw_response": raw_response(completion),
        "parsed": judged.parsed_json(), "value": judged.value, "status": judged.status,
        "error": judged.error, "confidence": judged.confidence, "attempts": attempts,
        "latency_s": usage["latency_s"], "prompt_tokens": usage["prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
    }


def ask(queries: Sequence[Query], interpret: Callable[[Query, Completion], Judged],
        backend: JudgeBackend, cache: JudgmentCache,
        settings: RunSettings) -> tuple[list[dict], list[bool]]:
    """One judgment row per query, in query order, and whether each came from the cache."""
    fingerprint = backend.fingerprint()
    keys = [cache_key(q, backend.model_id, settings_fingerprint(fingerprint, q)) for q in queries]
    rows: list[dict | None] = [None] * len(queries)
    for index, row in _cached(cache, keys).items():
        rows[index] = row
    from_cache = [row is not None for row in rows]
    pending = [i for i, row in enumerate(rows) if row is None]
    usage = {i: {"latency_s": 0.0, "prompt_tokens": 0, "completion_tokens": 0} for i in pending}
    failed_batches = 0  # in a row, without a single answer
    for attempt in range(1, settings.max_attempts + 1):
        retry: list[int] = []
        for start in range(0, len(pending), settings.batch_size):
            batch = pending[start:start + settings.batch_size]
            try:
                finished, again = _ask_batch(batch, attempt, queries, interpret, backend,
                                             settings, usage)
            except BackendDead as error:
                raise stopped_early(queries, rows, backend, cache.path,
                                    f"the {backend.kind} backend died ({error})") from error
            for i, row in finished.items():
                rows[i] = row
            # Only answers are cached: whatever failed is asked again by the next run.
            cache.put_many([(keys[i], row) for i, row in finished.items()
                            if row["status"] == OK])
            retry += again
            no_answer = all(row["status"] == BACKEND_ERROR for row in finished.values())
            failed_batches = failed_batches + 1 if no_answer and not again else 0
            if failed_batches >= FAILED_BATCHES_BEFORE_STOPPING:
                raise stopped_early(queries, rows, backend, cache.path,
                                    f"{failed_batches} batches in a row got no answer at all")
        log.info("attempt %d: %d queries, %d to re-query", attempt, len(pending), len(retry))
        pending = retry
        if not pending:
            break
    unanswered = [i for i, row in enumerate(rows) if row is None]
    if unanswered:
        raise RuntimeError(f"{len(unanswered)} queries were left without a judgment row")
    return rows, from_cache


def _ask_batch(batch: list[int], attempt: int, queries: Sequence[Query],
               interpret: Callable[[Query, Completion], Judged], backend: JudgeBackend,
               settings: RunSettings, usage: dict[int, dict]) -> tuple[dict[int, dict], list[int]]:
    """Rows for the queries of `batch` that are done, and those to re-query."""
    requests = [queries[i].for_attempt(attempt, settings.retry_temperature) for i in batch]
    try:
        completions = complete_with_retries(backend, requests, settings.batch_retries)
    except BackendDead:
        raise
    except Exception as error:  # noqa: BLE001 - recorded per query and counted as failures
        failure = (f"{backend.kind}: the batch failed {settings.batch_retries + 1} times: "
                   f"{type(error).__name__}: {error}")
        completions = [Completion([], error=failure) for _ in batch]
    finished: dict[int, dict] = {}
    again: list[int] = []
    for i, completion in zip(batch, completions, strict=True):
        _add_usage(usage[i], completion)
        if completion.error:
            judged = Judged(BACKEND_ERROR, error=completion.error)
        else:
            judged = interpret(queries[i], completion)
        if judged.status == PARSE_ERROR and attempt < settings.max_attempts:
            again.append(i)
        else:
            finished[i] = judgment_row(queries[i], judged, completion, attempt, usage[i],
                                       backend)
    return finished, again


def _cached(cache: JudgmentCache, keys: Sequence[str]) -> dict[int, dict]:
    # Caches written before failures stopped being stored may hold parse failures: ask again.
    stored = cache.get_many(keys)
    return {i: stored[key] for i, key in enumerate(keys)
            if key in stored and stored[key]["status"] == OK}


def _add_usage(usage: dict, completion: Completion) -> None:
    usage["latency_s"] += completion.latency_s
    usage["prompt_tokens"] += completion.prompt_tokens
    usage["completion_tokens"] += completion.completion_tokens


def judgments_table(rows: list[dict]) -> pd.DataFrame:
    table = pd.DataFrame(rows, columns=list(JUDGMENT_COLUMNS))
    for column, dtype in JUDGMENT_COLUMNS.items():
        table[column] = table[column].astype(dtype)
    return table


SUMMARY_COLUMNS = ["backend", "model", "criterion", "queries", "cached", "ok", "parse_error",
                   "backend_error", "failure_rate", "attempts", "prompt_tokens",
                   "completion_tokens", "latency_s", "tokens_per_s", "cost_usd"]


def summary_table(judgments: pd.DataFrame, cached: pd.Series, backend: JudgeBackend,
                  settings: RunSettings) -> pd.DataFrame:
    """Per criterion and overall ("all"): counts, failure rate, tokens, throughput, cost.

    Throughput is tokens over the summed per-query latency; batched backends split a batch's
    time evenly over its queries, so for them the sum is the time spent querying.
    """
    groups = [(c, judgments["criterion"] == c) for c in judgments["criterion"].unique()]
    if len(groups) != 1 or groups[0][0] != "all":
        groups.append(("all", pd.Series(True, index=judgments.index)))
    rows = []
    for criterion, mask in groups:
        part = judgments[mask]
        queries = len(part)
        failed = int((part["status"] != OK).sum())
        tokens = int(part["prompt_tokens"].sum() + part["completion_tokens"].sum())
        latency = float(part["latency_s"].sum())
        cost = (part["prompt_tokens"].sum() * settings.price_per_1k_prompt
                + part["completion_tokens"].sum() * settings.price_per_1k_completion) / 1000.0
        rows.append({
            "backend": backend.kind, "model": backend.model_id, "criterion": criterion,
            "queries": queries, "cached": int(cached[mask].sum()),
            "ok": int((part["status"] == OK).sum()),
            "parse_error": int((part["status"] == PARSE_ERROR).sum()),
            "backend_error": int((part["status"] == BACKEND_ERROR).sum()),
            "failure_rate": failed / queries if queries else 0.0,
            "attempts": int(part["attempts"].sum()),
            "prompt_tokens": int(part["prompt_tokens"].sum()),
            "completion_tokens": int(part["completion_tokens"].sum()),
            "latency_s": round(latency, 4),
            "tokens_per_s": round(tokens / latency, 2) if latency > 0 else None,
            "cost_usd": round(float(cost), 6),
        })
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def run_protocol(name: str, sample: pd.DataFrame, protocol_settings, backend: JudgeBackend,
                 cache_path: str | Path, settings: RunSettings) -> JudgeResult:
    """Judge a protocol's whole sample; see the module docstring."""
    protocol = PROTOCOLS[name]
    queries = protocol.build_queries(sample, protocol_settings)
    started = time.perf_counter()
    with JudgmentCache(cache_path) as cache:
        rows, from_cache = ask(queries, protocol.interpret, backend, cache, settings)
    wall = time.perf_counter() - started
    judgments = judgments_table(rows)
    cached = pd.Series(from_cache, index=judgments.index, dtype=bool)
    asked = len(judgments) - int(cached.sum())
    summary = summary_table(judgments, cached, backend, settings)
    log.info("%s: %d judgments (%d asked, %d from cache) in %.1f s", name, len(judgments),
             asked, len(judgments) - asked, wall)
    check_failure_rate(name, judgments, backend, settings.max_failure_rate, cache_path)
    return JudgeResult(judgments, protocol.labels(judgments, sample), summary, asked, wall)
