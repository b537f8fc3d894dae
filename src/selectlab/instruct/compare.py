"""Pairwise comparison of two models' answers to the same instruction, through the judge stage.

For every instruction of the evaluation set, a variant's answer is compared with the reference
variant's answer twice: once with the variant's answer shown first (order 0) and once with it
shown second (order 1), so a judge's preference for a position cancels out, as in AlpacaFarm's
pairwise evaluation that QuRating and DataMan follow (QuRating section 5.1, DataMan Figure 2).
The judge may call a tie. Each judgment row keeps the letter the judge gave (`parsed`), which
answer was shown first, and `value`: the variant's score for that order (1 win, 0.5 tie,
0 loss), already undone for the order it was shown in.

The questions go through the judge stage's machinery unchanged (`judge.run.ask`): any judge
backend (transformers, vLLM, OpenAI-compatible, or the offline reference-based judge), batched
queries, re-queries of unparseable answers, and the sqlite cache. A judgment is keyed by the
prompt template, the judge, the order and the two answers' ids, which hash the instruction and
the answer text, so a rerun with one more variant asks only for that variant's pairs, and a
retrained model's changed answers are asked again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from selectlab.judge.backends import Completion, CompletionRequest, JudgeBackend
from selectlab.judge.cache import JudgmentCache
from selectlab.judge.parse import OK, Parsed, parse_choice
from selectlab.judge.protocol import SYSTEM_PROMPT, Judged, Query, chat, request_meta, template_hash
from selectlab.judge.run import RunSettings, ask, judgments_table

NAME = "instruct"
CRITERION = "instruction_following"
TIE = "tie"

TEMPLATE = """\
Two AI assistants were given the same instruction. Read the instruction and their two answers, \
then decide which answer serves the person who wrote the instruction better: the one that does \
what was asked, is correct, and says it clearly and to the point.

Do not let the order of the answers, their length or their style decide for you. If the two \
are equally good or equally bad, call it a tie.

Instruction:
\"\"\"
{instruction}
\"\"\"

Answer A:
\"\"\"
{answer_a}
\"\"\"

Answer B:
\"\"\"
{answer_b}
\"\"\"

Which answer is better? Reply with A, B or tie, and nothing else."""
TEMPLATE_HASH = template_hash(SYSTEM_PROMPT, TEMPLATE)
_TIE = re.compile(r"^\W*tie\b", re.IGNORECASE)
EXTRA_COLUMNS = ["variant", "reference", "instruction_id", "shown_first"]


@dataclass(frozen=True)
class Settings:
    max_tokens: int = 16
    temperature: float = 0.0


def answer_id(instruction_id: str, answer: str) -> str:
    return hashlib.sha256(f"{instruction_id}\x1f{answer}".encode()).hexdigest()[:16]


def build_queries(evaluation: pd.DataFrame, answers: Mapping[str, pd.DataFrame],
                  variants: Sequence[str], reference: str, settings: Settings) -> list[Query]:
    """Two queries (both orders) per variant and instruction; see the module docstring."""
    texts = {name: frame.set_index("id")["answer"] for name, frame in answers.items()}
    queries = []
    for variant in variants:
        for row in evaluation.itertuples(index=False):
            mine, theirs = texts[variant][row.id], texts[reference][row.id]
            doc_a, doc_b = answer_id(row.id, mine), answer_id(row.id, theirs)
            shown = (((doc_a, mine), (doc_b, theirs)), ((doc_b, theirs), (doc_a, mine)))
            for order, ((id_a, text_a), (id_b, text_b)) in enumerate(shown):
                user = TEMPLATE.format(instruction=row.instruction, answer_a=text_a,
                                       answer_b=text_b)
                meta = request_meta(NAME, CRITERION, doc_a=doc_a, doc_b=doc_b, order=order,
                                    instruction_id=row.id, shown_a=id_a, shown_b=id_b,
                                    variant=variant, reference=reference)
                request = CompletionRequest(chat(user), max_tokens=settings.max_tokens,
                                            temperature=settings.temperature, meta=meta)
                queries.append(Query(NAME, CRITERION, TEMPLATE_HASH, request, doc_a=doc_a,
                                     doc_b=doc_b, order=order))
    return queries


def parse_verdict(text: str) -> Parsed:
    """"A", "B" or "tie" at the start of the answer; anything else is a parse failure."""
    if text and _TIE.match(text):
        return Parsed(TIE, OK)
    return parse_choice(text, ("A", "B"))


def variant_score(choice: str, order: int) -> float:
    """The variant's score for one order: its answer was A in order 0 and B in order 1."""
    if choice == TIE:
        return 0.5
    return 1.0 if choice == ("A", "B")[order] else 0.0


def interpret(query: Query, completion: Completion) -> Judged:
    parsed = parse_verdict(completion.text)
    value = variant_score(parsed.value, query.order) if parsed.ok else None
    return Judged.from_parsed(parsed, value=value)


def judge_comparison(evaluation: pd.DataFrame, answers: Mapping[str, pd.DataFrame],
                     variants: Sequence[str], reference: str, settings: Settings,
                     backend: JudgeBackend, cache_path, run: RunSettings
                     ) -> tuple[pd.DataFrame, int]:
    """The judgments table (judge columns plus `EXTRA_COLUMNS`) and how many were asked."""
    missing = [v for v in [*variants, reference] if v not in answers]
    if missing:
        raise ValueError(f"no answers for {missing}")
    for name in [*variants, reference]:
        absent = set(evaluation["id"]) - set(answers[name]["id"])
        if absent:
            raise ValueError(f"{name}: no answer to {len(absent)} evaluation instructions")
    queries = build_queries(evaluation, answers, variants, reference, settings)
    with JudgmentCache(cache_path) as cache:
        rows, from_cache = ask(queries, interpret, backend, cache, run)
    table = judgments_table(rows)
    for column in EXTRA_COLUMNS[:-1]:
        table[column] = [q.request.meta[column] for q in queries]
    table["shown_first"] = [q.request.meta["variant"] if q.order == 0
                            else q.request.meta["reference"] for q in queries]
    table["cached"] = from_cache
    return table, len(queries) - sum(from_cache)
