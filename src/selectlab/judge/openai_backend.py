"""Any OpenAI-compatible HTTP endpoint as judge (`vllm serve` of a large model, a hosted API).

Requests go out concurrently from a thread pool (at most `concurrency` in flight). Each one is
retried with exponential backoff and jitter on 429, 5xx, timeouts, dropped connections and
unreadable bodies, up to `max_attempts` tries; a `Retry-After` header lengthens the wait. Other
4xx answers are not retried. Generation goes to `/chat/completions`; requests that need label
log-probabilities go to `label_endpoint` (`/completions` with `logprobs: k`, or
`/chat/completions` with `logprobs: true, top_logprobs: k`).

The API key is read from the environment variable named in the config (`api_key_env`) and is
kept only in the request headers: it is never part of the fingerprint, a log line, an error
message or an output. A server that echoes it (in an error body or an answer) gets it scrubbed
(`selectlab.redact`) before the text goes anywhere.

Response bodies are read defensively: a field of the wrong type (a `usage` that is not an
object, a log-probability that is not a number, a choice without text) is a malformed answer,
retried like an unreadable body and finally a counted error for that request, never a crash.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import random
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from selectlab.judge.backends import Completion, CompletionRequest, messages_as_dicts, plain_prompt
from selectlab.redact import register, scrub

log = logging.getLogger(__name__)

ENDPOINTS = {"chat": "/chat/completions", "completions": "/completions"}


class RetryableError(Exception):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class OpenAIJudge:
    kind = "openai"

    def __init__(self, base_url: str, model: str, *, api_key_env: str | None = None,
                 logprobs: bool = True, label_endpoint: str = "completions",
                 concurrency: int = 8, max_attempts: int = 6, timeout_s: float = 120.0,
                 backoff_s: float = 1.0, max_backoff_s: float = 60.0, seed: int = 0):
        if label_endpoint not in ENDPOINTS:
            raise ValueError(f"label_endpoint must be one of {sorted(ENDPOINTS)}")
        self.base_url = base_url.rstrip("/")
        self.model_id = model
        self.supports_logprobs = logprobs
        self.label_endpoint = label_endpoint
        self.concurrency = concurrency
        self.max_attempts = max_attempts
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.seed = seed
        self._headers = {"Content-Type": "application/json"}
        if api_key_env:
            key = os.environ.get(api_key_env)
            if not key:
                raise ValueError(f"environment variable {api_key_env} (api_key_env) is not set")
            register(key)
            self._headers["Authorization"] = f"Bearer {key}"
        self._rng = random.Random(seed)

    def fingerprint(self) -> dict:
        # Not the URL: the same model behind another address (a restarted server) answers alike.
        return {"kind": self.kind, "logprobs": self.supports_logprobs,
                "label_endpoint": self.label_endpoint, "seed": self.seed}

    def complete(self, requests: Sequence[CompletionRequest]) -> list[Completion]:
        if not requests:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(self._complete_one, requests))

    def body(self, request: CompletionRequest) -> tuple[str, dict]:
        """The endpoint and JSON body for one request."""
        endpoint = "chat" if request.top_logprobs == 0 else self.label_endpoint
        if request.prompt is not None:
            endpoint = "completions"
        body = {"model": self.model_id, "max_tokens": request.max_tokens,
                "temperature": request.temperature, "n": request.n,
                "seed": self.seed + int(request.meta.get("attempt", 1))}
        if endpoint == "chat":
            body["messages"] = messages_as_dicts(request.messages)
            if request.top_logprobs:
                body |= {"logprobs": True, "top_logprobs": request.top_logprobs}
        else:
            body["prompt"] = (request.prompt if request.prompt is not None
                              else plain_prompt(request.messages))
            if request.top_logprobs:
                body["logprobs"] = request.top_logprobs
        return endpoint, body

    def _complete_one(self, request: CompletionRequest) -> Completion:
        endpoint, body = self.body(request)
        started = time.perf_counter()
        for attempt in range(1, self.max_attempts + 1):
            try:
                payload = self._post(ENDPOINTS[endpoint], body)
                completion = parse_response(endpoint, payload)
                completion.texts = [scrub(text) for text in completion.texts]
                completion.latency_s = time.perf_counter() - started
                return completion
            except RetryableError as error:
                if attempt == self.max_attempts:
                    return Completion([], latency_s=time.perf_counter() - started,
                                      error=f"openai: gave up after {attempt} attempts: {error}")
                delay = self._delay(attempt, error.retry_after)
                log.warning("openai: %s; retry %d/%d in %.2f s", error, attempt,
                            self.max_attempts - 1, delay)
                time.sleep(delay)
            except PermanentError as error:
                return Completion([], latency_s=time.perf_counter() - started,
                                  error=f"openai: {error}")
        raise AssertionError("unreachable")

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        delay = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        delay *= 0.5 + self._rng.random()  # jitter: concurrent retries do not arrive together
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, self.max_backoff_s)

    def _post(self, path: str, body: dict) -> dict:
        data = json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.base_url + path, data=data, headers=self._headers,
                                         method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            detail = _snippet(error.read())
            if error.code == 429 or error.code >= 500:
                raise RetryableError(f"HTTP {error.code} from {path}: {detail}",
                                     _retry_after(error.headers)) from None
            raise PermanentError(f"HTTP {error.code} from {path}: {detail}") from None
        except (urllib.error.URLError, http.client.HTTPException, ConnectionError,
                TimeoutError) as error:
            reason = getattr(error, "reason", error)
            raise RetryableError(f"{type(error).__name__} on {path}: {reason}") from None
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            raise RetryableError(f"unreadable JSON from {path}: {_snippet(raw)}") from None


class PermanentError(Exception):
    pass


def parse_response(endpoint: str, payload: object) -> Completion:
    """A Completion from an OpenAI-style response body of either endpoint.

    Anything that does not have the documented shape raises `RetryableError` naming the field.
    """
    try:
        return _parse_body(endpoint, payload)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
        raise RetryableError(f"malformed response body ({type(error).__name__}: "
                             f"{scrub(str(error))})") from None


def _parse_body(endpoint: str, payload: object) -> Completion:
    body = _object(payload, "the body")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ValueError(f"`choices` is {_shown(choices)}, not a non-empty list")
    choices = sorted((_object(c, "a choice") for c in choices), key=_choice_index)
    texts = [_choice_text(endpoint, choice) for choice in choices]
    top = _top_logprobs(endpoint, choices[0].get("logprobs"))
    usage = body.get("usage")
    usage = {} if usage is None else _object(usage, "`usage`")
    return Completion(texts, top, _count(usage, "prompt_tokens"),
                      _count(usage, "completion_tokens"))


def _object(value: object, what: str) -> dict:
    if not isinstance(value, dict):
        raise TypeError(f"{what} is {_shown(value)}, not an object")
    return value


def _shown(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def _choice_index(choice: dict) -> int:
    index = choice.get("index", 0)
    if not isinstance(index, int) or isinstance(index, bool):
        raise TypeError(f"a choice's `index` is {_shown(index)}, not an integer")
    return index


def _choice_text(endpoint: str, choice: dict) -> str:
    if endpoint == "chat":
        text = _object(choice.get("message"), "a choice's `message`").get("content")
    else:
        text = choice.get("text")
    if text is not None and not isinstance(text, str):
        raise TypeError(f"a choice's text is {_shown(text)}, not a string")
    return text or ""


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} is {_shown(value)}, not a number")
    return float(value)


def _count(usage: dict, key: str) -> int:
    value = usage.get(key)
    if value is None:
        return 0
    number = _number(value, f"`usage.{key}`")
    if number < 0 or number != int(number):
        raise ValueError(f"`usage.{key}` is {value!r}, not a token count")
    return int(number)


def _top_logprobs(endpoint: str, logprobs: object) -> dict[str, float] | None:
    if not logprobs:
        return None
    logprobs = _object(logprobs, "`logprobs`")
    if endpoint == "chat":
        content = logprobs.get("content") or []
        if not isinstance(content, list):
            raise TypeError(f"`logprobs.content` is {_shown(content)}, not a list")
        if not content:
            return None
        top = _object(content[0], "`logprobs.content[0]`").get("top_logprobs") or []
        if not isinstance(top, list):
            raise TypeError(f"`top_logprobs` is {_shown(top)}, not a list")
        entries = [_object(item, "a `top_logprobs` entry") for item in top]
        return {str(item["token"]): _number(item["logprob"], "a log-probability")
                for item in entries}
    firsts = logprobs.get("top_logprobs") or [None]
    if not isinstance(firsts, list):
        raise TypeError(f"`logprobs.top_logprobs` is {_shown(firsts)}, not a list")
    first = {} if firsts[0] is None else _object(firsts[0], "`top_logprobs[0]`")
    return {str(token): _number(value, "a log-probability") for token, value in first.items()}


def _retry_after(headers) -> float | None:
    value = headers.get("Retry-After") if headers else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _snippet(raw: bytes, limit: int = 200) -> str:
    # Scrubbed before it is cut, so an echoed key cannot survive as a fragment.
    return scrub(raw[:1 << 16].decode("utf-8", "replace"))[:limit].replace("\n", " ")
