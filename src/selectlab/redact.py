"""Secrets that must never reach a file: registered where they are read, scrubbed on the way out.

A backend that reads an API key registers it here. Everything that could carry it further (an
error body a server echoed, a model answer, a log line, an error message printed by the command
line) goes through `scrub`, which replaces every registered secret with `REDACTED`. Scrubbing
happens before any truncation, so a cut-off echo cannot leave half a key behind.
"""

from __future__ import annotations

import logging

REDACTED = "<redacted>"
MIN_SECRET_CHARS = 4  # shorter values would redact ordinary words

_secrets: set[str] = set()


def register(secret: str | None) -> None:
    if secret and len(secret) >= MIN_SECRET_CHARS:
        _secrets.add(secret)


def forget_all() -> None:
    """Drop every registered secret (tests that register throwaway keys)."""
    _secrets.clear()


def scrub(text: str) -> str:
    # Longest first, so a secret that contains another is replaced whole.
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


class ScrubFilter(logging.Filter):
    """A logging filter that formats each record once and scrubs the result."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _secrets:
            record.msg = scrub(record.getMessage())
            record.args = None
            if record.exc_info and record.exc_info[1] is not None:
                record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
                record.exc_info = None
        return True
