"""The instruction set: training pairs for supervised fine-tuning and held-out evaluation
instructions with reference answers, split once, seeded, with the split recorded.

Two kinds (`instruct.data.kind`):
  sharegpt  the papers' data: first-turn pairs of a local ShareGPT dump (`sharegpt.py`);
            QuRating section 5.1: 10,000 training pairs, 1,000 held-out instructions.
  embedded  the offline default: dictionary, Python and man page pairs (`embedded.py`) from
            text the embedded corpus does not contain (`heldout.py`), in the proportions of
            `mix`.
Either way a pair whose prompt (template filled in, start token included) is longer than
`max_prompt_tokens` is dropped and counted, so every evaluation prompt leaves room for the
configured answer length within the model's context. The pairs are shuffled with the seed and
the first `eval_instructions` become the evaluation set, the next `train_pairs` the training set.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Mapping

import pandas as pd

from selectlab.corpus.passages import mix_quotas
from selectlab.instruct.embedded import PAIR_SOURCES, Pair
from selectlab.instruct.heldout import CorpusText, normalise
from selectlab.instruct.sharegpt import sharegpt_pairs
from selectlab.instruct.template import ChatTemplate, encode, prompt_ids

COLUMNS = ["id", "source", "key", "instruction", "response", "prompt_tokens",
           "response_tokens"]


def instruction_id(instruction: str) -> str:
    """Content-derived, so an id means the same instruction in every run and cache."""
    return hashlib.sha256(normalise(instruction).encode("utf-8")).hexdigest()[:16]


class PromptLength:
    """Token counts of a pair's prompt and response under the run's tokenizer and template."""

    def __init__(self, tokenizer, template: ChatTemplate, max_prompt_tokens: int):
        self.tokenizer, self.template, self.limit = tokenizer, template, max_prompt_tokens

    def prompt(self, pair: Pair) -> int:
        return len(prompt_ids(self.tokenizer, self.template, pair.instruction))

    def response(self, pair: Pair) -> int:
        return len(encode(self.tokenizer, pair.response)) + 1  # and EOS

    def fits(self, pair: Pair) -> bool:
        return self.prompt(pair) <= self.limit


def draw_embedded(params: Mapping, corpus: CorpusText, lengths: PromptLength,
                  total: int) -> tuple[list[Pair], dict]:
    """`total` pairs split between the sources by `mix`; per source what each check removed."""
    unknown = sorted(set(params["mix"]) - set(PAIR_SOURCES))
    if unknown:
        raise ValueError(f"unknown instruction sources {unknown}; known: {sorted(PAIR_SOURCES)}")
    # A source with no share is never opened, so its resource need not be installed.
    quotas = {name: n for name, n in mix_quotas(params["mix"], total).items() if n > 0}
    pairs: list[Pair] = []
    record: dict[str, dict] = {}
    seen: set[str] = set()
    for source in sorted(quotas):
        counts: Counter = Counter()
        rng = random.Random(f"{params['seed']}:instruct:{source}")
        stream = PAIR_SOURCES[source](params.get("resources", {}) | params.get("limits", {}), rng)
        kept = 0
        for pair in stream:
            if kept == quotas[source]:
                break
            counts["read"] += 1
            reason = exclusion(pair, corpus, lengths, seen)
            if reason:
                counts[reason] += 1
                continue
            seen.add(normalise(pair.instruction))
            pairs.append(pair)
            kept += 1
        if kept < quotas[source]:
            raise ValueError(f"instruction source {source!r} gave {kept} usable pairs, the mix "
                             f"asks for {quotas[source]} ({dict(counts)}); lower its share in "
                             "instruct.data.mix or install more of its resource")
        record[source] = dict(sorted({**counts, "kept": kept}.items()))
    return pairs, record


def exclusion(pair: Pair, corpus: CorpusText, lengths: PromptLength, seen: set[str]) -> str:
    """Why a pair is left out ("" when it is kept); the corpus checks come first."""
    if corpus.drew(pair.key):
        return "drawn_by_corpus"
    if corpus.contains(pair.response):
        return "text_in_corpus"
    if normalise(pair.instruction) in seen:
        return "duplicate_instruction"
    if not lengths.fits(pair):
        return "prompt_too_long"
    return ""


def draw_sharegpt(params: Mapping, lengths: PromptLength) -> tuple[list[Pair], dict]:
    pairs, dropped = sharegpt_pairs(params["path"])
    kept = [pair for pair in pairs if lengths.fits(pair)]
    record = {"sharegpt": dropped | {"prompt_too_long": len(pairs) - len(kept),
                                     "kept": len(kept)}}
    return kept, record


def split_pairs(pairs: list[Pair], seed: int, train: int, evaluation: int
                ) -> tuple[list[Pair], list[Pair]]:
    if len(pairs) < train + evaluation:
        raise ValueError(f"{len(pairs)} usable instruction pairs, but {train} training pairs "
                         f"and {evaluation} evaluation instructions are asked for")
    order = list(range(len(pairs)))
    random.Random(f"{seed}:instruct:split").shuffle(order)
    chosen = [pairs[i] for i in order[:train + evaluation]]
    return chosen[evaluation:], chosen[:evaluation]


def pairs_table(pairs: list[Pair], lengths: PromptLength) -> pd.DataFrame:
    rows = [{"id": instruction_id(p.instruction), "source": p.source, "key": p.key,
             "instruction": p.instruction, "response": p.response,
             "prompt_tokens": lengths.prompt(p), "response_tokens": lengths.response(p)}
            for p in pairs]
    return pd.DataFrame(rows, columns=COLUMNS)


def build_instruction_set(params: Mapping, tokenizer, corpus: CorpusText | None
                          ) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(train table, eval table, record of the split); see the module docstring."""
    lengths = PromptLength(tokenizer, ChatTemplate(**params["chat_template"]),
                           int(params["max_prompt_tokens"]))
    train_n, eval_n = int(params["train_pairs"]), int(params["eval_instructions"])
    if params["kind"] == "embedded":
        if corpus is None:
            raise ValueError("the embedded instruction set needs the corpus it must stay off")
        pairs, sources = draw_embedded(params, corpus, lengths, train_n + eval_n)
    elif params["kind"] == "sharegpt":
        pairs, sources = draw_sharegpt(params, lengths)
    else:
        raise ValueError(f"unknown instruction data kind {params['kind']!r}")
    train, evaluation = split_pairs(pairs, int(params["seed"]), train_n, eval_n)
    train_table, eval_table = pairs_table(train, lengths), pairs_table(evaluation, lengths)
    record = {
        "kind": params["kind"], "seed": int(params["seed"]), "sources": sources,
        "train_pairs": len(train_table), "eval_instructions": len(eval_table),
        "max_prompt_tokens": lengths.limit,
        "corpus_documents": corpus.documents if corpus is not None else None,
        "train_ids": train_table["id"].tolist(), "eval_ids": eval_table["id"].tolist(),
    }
    return train_table, eval_table, record
