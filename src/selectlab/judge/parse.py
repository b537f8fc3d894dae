"""Strict readers of judge answers: a value, or a failure that says what was wrong.

No parser raises on model output and none guesses: an answer that does not follow the requested
format exactly enough to be unambiguous becomes `Parsed(None, "parse_error", reason)`, which the
runner re-queries up to a limit and otherwise records as a failed judgment.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

OK = "ok"
PARSE_ERROR = "parse_error"
BACKEND_ERROR = "backend_error"


@dataclass(frozen=True)
class Parsed:
    value: Any
    status: str
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status == OK


def failure(reason: str) -> Parsed:
    return Parsed(None, PARSE_ERROR, reason)


# An answer to "A or B?": the letter first, optionally after "Answer:" and wrapped in quotes,
# brackets or markdown. A bare capital "A" also starts English sentences ("A good text ..."),
# so without a prefix naming an excerpt the letter must stand alone: followed by the end, a
# line break, punctuation, or "is"/"because".
_CHOICE = re.compile(
    r"""^\s*(?:\*\*)?(?:(?:final\s+)?answer\s*[:\-]?\s*)?
        (?:(?P<named>(?:option|excerpt|text)\s+))?
        [\"'(\[*]*(?P<label>[A-Z])[\"')\].,:;*!]*
        (?:$|(?<=[\"')\].,:;*!])|(?=\n)|(?=\s+(?:is|because)\b)|(?(named)(?=\s)|(?!)))""",
    re.IGNORECASE | re.VERBOSE,
)


def parse_choice(text: str, labels: Sequence[str] = ("A", "B")) -> Parsed:
    """The label a pairwise answer starts with; anything else is a failure."""
    if not text or not text.strip():
        return failure("empty answer")
    match = _CHOICE.match(text)
    if match is None or match.group("label") not in labels:
        return failure(f"answer does not start with one of {', '.join(labels)}: "
                       f"{_clip(text)!r}")
    return Parsed(match.group("label"), OK)


def probability_from_logprobs(logprobs: Mapping[str, float], first: str = "A",
                              second: str = "B") -> Parsed:
    """P(second label) renormalised over the two labels.

    A label missing from the reported top log-probabilities had less mass than every reported
    token, so it counts as probability zero; both missing is a failure.
    """
    if first not in logprobs and second not in logprobs:
        return failure(f"neither {first!r} nor {second!r} among the top log-probabilities")
    lp_first = logprobs.get(first, -math.inf)
    lp_second = logprobs.get(second, -math.inf)
    peak = max(lp_first, lp_second)
    p_second = math.exp(lp_second - peak) / (math.exp(lp_first - peak) + math.exp(lp_second - peak))
    return Parsed(p_second, OK)


def probability_from_samples(texts: Sequence[str], first: str = "A",
                             second: str = "B") -> Parsed:
    """P(second label) as the share of sampled answers naming it, over the answers that parse."""
    choices = [parse_choice(text, (first, second)) for text in texts]
    valid = [c.value for c in choices if c.ok]
    if not valid:
        reasons = "; ".join(sorted({c.error for c in choices}))
        return failure(f"none of {len(texts)} sampled answers names {first} or {second} "
                       f"({reasons})")
    return Parsed(sum(v == second for v in valid) / len(valid), OK)


_FINAL_SCORE = re.compile(
    r"^\s*[*_#>\s]*final\s+score[*_\s]*[:=]\s*[*_\s]*(?P<value>[^\s*_]+?)(?:\s*/\s*5)?[*_.\s]*$",
    re.IGNORECASE,
)


def parse_final_score(text: str, low: int, high: int, line_label: str = "Final score") -> Parsed:
    """An integer score in [low, high] from the answer's last non-empty line `Final score: N`."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return failure("empty answer")
    match = _FINAL_SCORE.match(lines[-1])
    if match is None:
        where = ("a score line appears, but not last"
                 if any(_FINAL_SCORE.match(line) for line in lines) else "no score line")
        return failure(f"last line is not '{line_label}: <{low}-{high}>' ({where}): "
                       f"{_clip(lines[-1])!r}")
    return _integer_in_range(match.group("value"), low, high, line_label)


def _integer_in_range(raw: str, low: int, high: int, name: str) -> Parsed:
    if not re.fullmatch(r"[+-]?\d+", raw):
        return failure(f"{name}: {raw!r} is not an integer")
    value = int(raw)
    if not low <= value <= high:
        return failure(f"{name}: {value} is outside {low}-{high}")
    return Parsed(value, OK)


def parse_rating_block(text: str, marker: str, names: Mapping[str, str], low: int, high: int,
                       domain_label: str, domains: Mapping[str, str]) -> Parsed:
    """Every named rating and exactly one domain from the block after the last `marker` line.

    `names` maps the spelling in the answer ("Language Consistency") to the key returned
    ("language_consistency"); `domains` maps letters to domain names. Lines of the block that
    are not ratings are ignored (models like to close with a remark), but a rating given twice,
    a missing one, a value that is not an integer in range, a missing domain or more than one
    domain all make the answer fail, with every problem listed.
    """
    lines = (text or "").splitlines()
    if not any(line.strip() for line in lines):
        return failure("empty answer")
    marker_re = re.compile(rf"^\s*[*_#>\s]*{re.escape(marker)}[*_:\s]*$", re.IGNORECASE)
    starts = [i for i, line in enumerate(lines) if marker_re.match(line)]
    if not starts:
        return failure(f"no '{marker}' line followed by the ratings")
    block = lines[starts[-1] + 1:]
    by_name = {_squash(name): key for name, key in names.items()}
    values: dict[str, Any] = {}
    problems: list[str] = []
    domain_values: list[str] = []
    line_re = re.compile(r"^\s*[-*\[\]\d.)\s]*(?P<name>[A-Za-z][A-Za-z &-]*?)\s*\**\s*[:=]\s*"
                         r"(?P<value>.*?)\s*$")
    for line in block:
        match = line_re.match(line)
        if match is None:
            continue
        name = _squash(match.group("name"))
        raw = match.group("value").strip(" *_")
        if name == _squash(domain_label):
            domain_values.append(raw)
            continue
        key = by_name.get(name)
        if key is None:
            continue
        if key in values:
            problems.append(f"{match.group('name').strip()} given twice")
            continue
        parsed = _integer_in_range(re.sub(r"\s*/\s*\d+$", "", raw), low, high,
                                   match.group("name").strip())
        values[key] = parsed.value
        if not parsed.ok:
            problems.append(parsed.error)
    missing = [name for name, key in names.items() if key not in values]
    if missing:
        problems.append("missing: " + ", ".join(missing))
    domain = _one_domain(domain_values, domain_label, domains, problems)
    if problems:
        return failure("; ".join(problems))
    return Parsed(values | {domain_label.lower(): domain}, OK)


def _one_domain(raws: Sequence[str], label: str, domains: Mapping[str, str],
                problems: list[str]) -> str | None:
    if not raws:
        problems.append(f"no {label} line")
        return None
    if len(raws) > 1:
        problems.append(f"{len(raws)} {label} lines")
        return None
    raw = raws[0]
    named, rest = set(), raw
    for letter, name in domains.items():
        pattern = re.compile(rf"\b{re.escape(name)}\b", re.IGNORECASE)
        if pattern.search(rest):
            named.add(letter)
            # Names can hold capital letters of their own ("Retail E-commerce").
            rest = pattern.sub(" ", rest)
    letters = set(re.findall(r"(?<![A-Za-z])([A-O])(?![A-Za-z])", rest))
    chosen = letters | named
    if len(chosen) != 1:
        what = "no recognised domain" if not chosen else f"{len(chosen)} domains"
        problems.append(f"{label}: {what} in {raw!r}")
        return None
    return chosen.pop()


def _squash(name: str) -> str:
    return re.sub(r"[^a-z]", "", name.lower())


def _clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
