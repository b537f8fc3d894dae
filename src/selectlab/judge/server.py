"""A minimal OpenAI-compatible HTTP server around a judge backend (`selectlab judge serve`).

It answers `POST /v1/chat/completions` and `POST /v1/completions` (with `n`, `temperature`,
`max_tokens` and the endpoints' log-probability options), `GET /v1/models` and `GET /stats`. It
exists to test the `openai` backend against a real socket on loopback, so it can also misbehave
on purpose: fail the first K completion requests with given HTTP statuses, then drop the next M
connections without answering, and answer 503 to everything after N admitted completion requests
(an endpoint that dies mid-run). With `api_key_env` set it rejects requests without that key.

`answers` cycles through how each admitted request is answered: `ok`, or one of the bad
answers a real endpoint has been seen to give (BAD_ANSWERS): a 200 whose body is not JSON, a
200 whose `usage` is not an object, whose log-probability is not a number, or that has no
choices; a request left hanging for `hang_s` seconds; a 500 whose body echoes the request's
Authorization header (an API key in an error message).
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from selectlab.judge.backends import ChatMessage, Completion, CompletionRequest, JudgeBackend

BAD_ANSWERS = ("garbage", "bad_usage", "bad_logprob", "no_choices", "hang", "echo_key")


@dataclass
class Faults:
    fail_first: int = 0
    fail_statuses: tuple[int, ...] = (429, 500)
    drop_first: int = 0  # after the failures
    fail_after: int | None = None  # completions admitted before the endpoint "dies"
    answers: tuple[str, ...] = ("ok",)  # cycled over admitted requests: "ok" or BAD_ANSWERS
    hang_s: float = 30.0

    def __post_init__(self):
        unknown = set(self.answers) - {"ok", *BAD_ANSWERS}
        if unknown or not self.answers:
            raise ValueError(f"unknown answers {sorted(unknown)}; known: ok, {BAD_ANSWERS}")


@dataclass
class Stats:
    requests: int = 0
    served: int = 0
    failed: int = 0
    dropped: int = 0
    admitted: int = 0  # passed on to the backend (counted on arrival, unlike `served`)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def as_dict(self) -> dict:
        return {"requests": self.requests, "served": self.served, "failed": self.failed,
                "dropped": self.dropped}


def completion_request(endpoint: str, body: dict) -> CompletionRequest:
    """Translate an OpenAI request body into the backend interface."""
    common = {"max_tokens": int(body.get("max_tokens") or 16),
              "temperature": float(body.get("temperature", 1.0)), "n": int(body.get("n", 1))}
    if endpoint == "chat":
        messages = tuple(ChatMessage(m["role"], m["content"]) for m in body["messages"])
        top = int(body.get("top_logprobs") or 1) if body.get("logprobs") else 0
        return CompletionRequest(messages, top_logprobs=top, **common)
    return CompletionRequest((), prompt=str(body["prompt"]),
                             top_logprobs=int(body.get("logprobs") or 0), **common)


def response_body(endpoint: str, completion: Completion, model: str) -> dict:
    choices = []
    for index, text in enumerate(completion.texts):
        choice: dict = {"index": index, "finish_reason": "stop"}
        top = completion.top_logprobs if index == 0 and completion.top_logprobs else None
        if endpoint == "chat":
            choice["message"] = {"role": "assistant", "content": text}
            if top is not None:
                choice["logprobs"] = {"content": [{
                    "token": text, "logprob": top.get(text, min(top.values())),
                    "top_logprobs": [{"token": t, "logprob": v} for t, v in top.items()]}]}
        else:
            choice["text"] = text
            if top is not None:
                choice["logprobs"] = {"tokens": [text], "top_logprobs": [top]}
        choices.append(choice)
    return {"object": "chat.completion" if endpoint == "chat" else "text_completion",
            "model": model, "choices": choices,
            "usage": {"prompt_tokens": completion.prompt_tokens,
                      "completion_tokens": completion.completion_tokens,
                      "total_tokens": completion.prompt_tokens + completion.completion_tokens}}


class JudgeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], backend: JudgeBackend, model_name: str,
                 faults: Faults, api_key: str | None = None):
        super().__init__(address, _Handler)
        self.backend = backend
        self.model_name = model_name
        self.faults = faults
        self.api_key = api_key
        self.stats = Stats()
        self.backend_lock = threading.Lock()  # one model, one request at a time

    def fault_for_next(self) -> tuple[str, int] | None:
        """Count a completion request and say whether (and how) to misbehave on it."""
        with self.stats.lock:
            self.stats.requests += 1
            n, f = self.stats.requests, self.faults
            if n <= f.fail_first:
                self.stats.failed += 1
                return "status", f.fail_statuses[(n - 1) % len(f.fail_statuses)]
            if n <= f.fail_first + f.drop_first:
                self.stats.dropped += 1
                return "drop", 0
            if f.fail_after is not None and self.stats.admitted >= f.fail_after:
                self.stats.failed += 1
                return "status", 503
            answer = f.answers[self.stats.admitted % len(f.answers)]
            self.stats.admitted += 1
            return None if answer == "ok" else (answer, 0)


class _Handler(BaseHTTPRequestHandler):
    server: JudgeServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (signature is the stdlib's)
        pass  # the test reads /stats; no per-request noise on stderr

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 429:
            self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (stdlib naming)
        if self.path.rstrip("/") == "/stats":
            with self.server.stats.lock:
                self._send(200, self.server.stats.as_dict())
        elif self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list",
                             "data": [{"id": self.server.model_name, "object": "model"}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        endpoint = {"/v1/chat/completions": "chat", "/v1/completions": "completions"}.get(
            self.path.rstrip("/"))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if endpoint is None:
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        if self.server.api_key is not None and \
                self.headers.get("Authorization") != f"Bearer {self.server.api_key}":
            self._send(401, {"error": {"message": "missing or wrong API key"}})
            return
        fault = self.server.fault_for_next()
        if fault is not None and fault[0] in ("status", "drop", "garbage", "hang", "echo_key"):
            self._misbehave(*fault)
            return
        try:
            request = completion_request(endpoint, json.loads(raw))
        except (KeyError, TypeError, ValueError) as error:
            self._send(400, {"error": {"message": f"bad request: {error}"}})
            return
        with self.server.backend_lock:
            completion = self.server.backend.complete([request])[0]
        if completion.error:
            self._send(500, {"error": {"message": completion.error}})
            return
        with self.server.stats.lock:
            self.server.stats.served += 1
        body = response_body(endpoint, completion, self.server.model_name)
        if fault is not None:
            body = malformed(body, fault[0])
        self._send(200, body)

    def _misbehave(self, kind: str, status: int) -> None:
        if kind == "drop":
            self.close_connection = True
            self.connection.shutdown(2)
        elif kind == "status":
            self._send(status, {"error": {"message": f"injected failure ({status})"}})
        elif kind == "garbage":
            data = b"<html><body>502 Bad Gateway</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif kind == "hang":
            time.sleep(self.server.faults.hang_s)
            self.close_connection = True
        elif kind == "echo_key":
            received = self.headers.get("Authorization", "")
            self._send(500, {"error": {"message": f"upstream rejected credentials {received}"}})


def malformed(body: dict, kind: str) -> dict:
    """A 200 body broken the way `kind` says (see BAD_ANSWERS)."""
    if kind == "bad_usage":
        return body | {"usage": "lots"}
    if kind == "no_choices":
        return body | {"choices": []}
    if kind == "bad_logprob":
        choice = dict(body["choices"][0])
        choice["logprobs"] = {"tokens": ["A"], "top_logprobs": [{"A": "high", "B": -1.0}],
                              "content": [{"token": "A", "logprob": "high",
                                           "top_logprobs": [{"token": "A", "logprob": "high"}]}]}
        return body | {"choices": [choice, *body["choices"][1:]]}
    return body


def make_server(backend: JudgeBackend, *, host: str = "127.0.0.1", port: int = 0,
                model_name: str | None = None, faults: Faults | None = None,
                api_key_env: str | None = None) -> JudgeServer:
    api_key = None
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise ValueError(f"environment variable {api_key_env} is not set")
    return JudgeServer((host, port), backend, model_name or backend.model_id,
                       faults or Faults(), api_key)
