"""ShareGPT conversations -> first-turn instruction-response pairs (the papers' SFT data).

QuRating (section 5.1) fine-tunes on 10,000 ShareGPT instruction-response pairs and judges
answers to 1,000 held-out instructions; DataMan (Figure 2) uses the same 10K ShareGPT set. The
papers do not describe their cleaning, so it is kept to what any pair needs: the first user turn
and the assistant turn right after it, both non-empty after stripping white space, and one pair
per distinct instruction (case and white space aside). A ShareGPT dump is a JSON list (or JSON
lines) of records `{"id", "conversations": [{"from": "human", "value": ...}, {"from": "gpt",
"value": ...}, ...]}`; every record that yields no pair is counted by reason.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from selectlab.instruct.embedded import Pair
from selectlab.instruct.heldout import normalise

USER_ROLES = ("human", "user")
ASSISTANT_ROLES = ("gpt", "chatgpt", "assistant", "bard", "bing")


def read_records(path: str | Path) -> list:
    text = Path(path).read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        records = json.loads(text)
    else:
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of ShareGPT records")
    return records


def first_turn(record: object) -> tuple[str, str] | str:
    """(instruction, response) of a record, or the reason it has none."""
    if not isinstance(record, dict):
        return "not_an_object"
    turns = record.get("conversations")
    if not isinstance(turns, list) or len(turns) < 2:
        return "no_first_turn"
    user, assistant = turns[0], turns[1]
    if not (isinstance(user, dict) and isinstance(assistant, dict)):
        return "no_first_turn"
    if user.get("from") not in USER_ROLES or assistant.get("from") not in ASSISTANT_ROLES:
        return "not_user_then_assistant"
    instruction = str(user.get("value") or "").strip()
    response = str(assistant.get("value") or "").strip()
    if not instruction or not response:
        return "empty_turn"
    return instruction, response


def sharegpt_pairs(path: str | Path) -> tuple[list[Pair], dict[str, int]]:
    """The cleaned first-turn pairs in file order, and how many records each reason dropped."""
    dropped: Counter = Counter()
    seen: set[str] = set()
    pairs = []
    for number, record in enumerate(read_records(path)):
        turn = first_turn(record)
        if isinstance(turn, str):
            dropped[turn] += 1
            continue
        instruction, response = turn
        if normalise(instruction) in seen:
            dropped["duplicate_instruction"] += 1
            continue
        seen.add(normalise(instruction))
        record_id = record.get("id", number) if isinstance(record, dict) else number
        pairs.append(Pair("sharegpt", f"sharegpt:{record_id}", instruction, response))
    return pairs, dict(sorted(dropped.items()))
