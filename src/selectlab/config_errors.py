"""Schema errors a person can act on: the key, the bad value and what was expected.

A JSON-schema validator reports one error at a time, or an error with the whole schema and the
whole config around it; for a misspelt key deep in the config that is hundreds of lines for
one fact. `error_line` turns one error into one line with a "did you mean" where a known key is
close; `selectlab.schema` validates and raises every line as one `ConfigError`. This module
imports nothing of selectlab, so every module may raise a `ConfigError`.
"""

from __future__ import annotations

import difflib

MAX_PROBLEMS = 10
VALUE_CHARS = 80


class ConfigError(ValueError):
    """The config cannot run: every problem found, one per line."""

    def __init__(self, what: str, problems: list[str]):
        shown = problems[:MAX_PROBLEMS]
        more = len(problems) - len(shown)
        lines = [f"{what}: {len(problems)} problem{'s' * (len(problems) != 1)}, found before "
                 "any job ran:", *[f"  {p}" for p in shown]]
        if more:
            lines.append(f"  ... and {more} more")
        super().__init__("\n".join(lines))
        self.problems = problems


def suggestion(name: str, known) -> str:
    """' (did you mean 'x'?)' for the closest known name, or ''."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS] + "..."


def key_path(path) -> str:
    parts = []
    for part in path:
        parts.append(f"[{part}]" if isinstance(part, int) else f".{part}")
    return "".join(parts).lstrip(".") or "(top level)"


def _expected(error) -> str:
    kind, value, schema = error.validator, error.validator_value, error.schema
    if kind == "type":
        return f"a value of type {value}"
    if kind == "enum":
        return "one of " + ", ".join(map(repr, value))
    if kind == "const":
        return f"exactly {value!r}"
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        sign = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=",
                "exclusiveMaximum": "<"}[kind]
        return f"a number {sign} {value}"
    if kind == "pattern":
        return f"text matching {value}"
    if kind in ("minItems", "maxItems", "minLength", "maxLength", "uniqueItems"):
        return f"{kind} {value}"
    if kind in ("additionalProperties", "unevaluatedProperties"):
        allowed = sorted(schema.get("properties", {}))
        return "one of the keys " + ", ".join(allowed) if allowed else "no further keys"
    return error.message


def error_line(error) -> str:
    """One jsonschema error as one line: where, the bad value, what was expected."""
    from jsonschema.exceptions import best_match

    if error.validator in ("anyOf", "oneOf") and error.context:
        error = best_match(error.context)
    where = key_path(error.absolute_path)
    if error.validator in ("additionalProperties", "unevaluatedProperties"):
        known = sorted(error.schema.get("properties", {}))
        unexpected = [k for k in error.instance if k not in known] if isinstance(
            error.instance, dict) else []
        hints = "; ".join(f"{key!r} is not a known key{suggestion(key, known)}"
                          for key in unexpected)
        return f"{where}: {hints or error.message}; expected {_expected(error)}"
    if error.validator == "required":
        return f"{where}: {error.message}"
    if error.validator == "not":
        return f"{where}: {shown(error.instance)} is not allowed here ({error.message})"
    return f"{where}: {shown(error.instance)} is not valid; expected {_expected(error)}"
