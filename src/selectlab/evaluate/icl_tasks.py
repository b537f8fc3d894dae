"""Offline in-context-learning tasks built from held-out documents.

The papers evaluate with lm-evaluation-harness on downloaded benchmarks, which this machine cannot
reach. These tasks stand in for them and go through exactly the same code path (`simple_evaluate`
on YAML tasks), so swapping in the real benchmarks at full scale changes only the task list.

Two kinds, one task per kind and source (`sl_{kind}_{source}`):

* `continuation` (HellaSwag-like): `context_words` words of a document, then a choice
  between its true next `continuation_words` words and the continuations of other items of the
  same source.
* `cloze` (LAMBADA-like): a passage of at least `cloze_context_words` words ending just before a
  purely alphabetic word, which is the answer. It is scored as a multiple choice against other
  words of the same source with about the same length, drawn in proportion to how often they occur
  there. We chose multiple choice over lm-eval's `loglikelihood`/`is_greedy` form because exact
  greedy prediction of a word is near 0% for the tiny models trained here, which would leave
  nothing to compare; and because it keeps one output type and one pair of metrics (acc,
  acc_norm, both with stderr) for every task. Drawing distractors by frequency rather than from
  the list of distinct words stops a model from winning on word frequency alone.

A document gives up to `items_per_document` items of a kind, from successive windows that do not
overlap: the next continuation window starts where the last one ended, the next cloze passage
just after the last answer. More than one item per document buys items where held-out text is
scarce (the laptop's corpus): at a few points above chance, the spread of an accuracy over seeds
is mostly the binomial spread of its items, so four times the items halve it. Items of one
document are not independent, so lm-eval's per-item standard error understates the spread a
little; the claims use the spread over seeds wherever a row has replicates.

Per source and kind, eligible documents are taken in reader order (up to `max_pool_per_source`),
shuffled with a seed derived from `seed`, kind and source; for a kind run with shots, the first
`fewshot_per_source` documents each give one few-shot item (so no demonstration shares a document
with a test item); the next documents give the test split, `items_per_source` items in all.
Documents too short for a kind are skipped and counted. Data paths inside the YAMLs are
`out_dir/data/...` with `out_dir` exactly as given, so a relative `out_dir` yields YAMLs that work
from the directory they were built in (the workflow's working directory, the repository root).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import yaml

from selectlab.shards import ReadReport, atomic_path, iter_documents, write_json

KINDS = ("continuation", "cloze")
TASK_PREFIX = "sl"
DEFAULT_PARAMS: dict = {
    "kinds": list(KINDS),
    "items_per_source": 100,
    "items_per_document": 1,
    "fewshot_per_source": 8,
    "shots": 0,  # an int for every kind, or {kind: int}
    # The most demonstrations the papers' protocols ask of a task standing in for one of
    # theirs (evaluation.icl.stand_ins); every kind then gets a few-shot split.
    "protocol_shots": 0,
    "seed": 0,
    "context_words": 40,
    "continuation_words": 12,
    "cloze_context_words": 50,
    "n_choices": 4,
    "max_pool_per_source": 5000,  # bounds memory and time on a full-size held-out split
}
WORD = re.compile(r"\S+")
CLOZE_WORD = re.compile(r"[^\W\d_]{3,}")  # letters only, 3+: a word worth predicting
CLOZE_SCAN_WORDS = 50  # how far past the minimum context a cloze answer may be looked for
DRAWS_PER_DISTRACTOR = 64  # random draws before falling back to a full scan of the candidates


@dataclass(frozen=True)
class Parts:
    """One document cut into what the model reads and what it must pick."""

    doc_id: str
    context: str
    answer: str


def resolve_params(params: dict) -> dict:
    unknown = set(params) - set(DEFAULT_PARAMS)
    if unknown:
        raise ValueError(f"unknown ICL task parameters: {sorted(unknown)}")
    resolved = DEFAULT_PARAMS | params
    resolved["kinds"] = list(resolved["kinds"])
    bad_kinds = set(resolved["kinds"]) - set(KINDS)
    if bad_kinds:
        raise ValueError(f"unknown ICL task kinds {sorted(bad_kinds)}; known: {KINDS}")
    shots = resolved["shots"]
    if isinstance(shots, int):
        shots = dict.fromkeys(resolved["kinds"], shots)
    resolved["shots"] = {kind: int(shots.get(kind, 0)) for kind in resolved["kinds"]}
    most = max([*resolved["shots"].values(), int(resolved["protocol_shots"])], default=0)
    if most > resolved["fewshot_per_source"]:
        raise ValueError("shots exceed fewshot_per_source: the few-shot split would be too small")
    if resolved["n_choices"] < 2:
        raise ValueError("n_choices must be at least 2")
    for key in ("items_per_source", "items_per_document", "context_words", "continuation_words",
                "cloze_context_words", "max_pool_per_source"):
        if int(resolved[key]) < 1:
            raise ValueError(f"{key} must be a positive integer")
    return resolved


def source_slug(set_name: str) -> str:
    """`RedPajamaStackExchange` -> `stackexchange`: short, lower-case, safe in task names."""
    name = set_name.removeprefix("RedPajama") or set_name
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    if not slug:
        raise ValueError(f"cannot name a task after source {set_name!r}")
    return slug


def task_name(kind: str, set_name: str) -> str:
    return f"{TASK_PREFIX}_{kind}_{source_slug(set_name)}"


def continuation_parts(
    text: str, context_words: int, continuation_words: int, start: int = 0
) -> tuple[str, str, int]:
    """(context, continuation, where the next window starts) for the window beginning at
    character `start`, keeping the document's own whitespace inside each; ("", "", start) when
    the rest of the document is too short."""
    spans = [m.span() for m in islice(WORD.finditer(text, start),
                                      context_words + continuation_words)]
    if len(spans) < context_words + continuation_words:
        return "", "", start
    context = text[spans[0][0]:spans[context_words - 1][1]]
    continuation = text[spans[context_words][0]:spans[-1][1]]
    return context, continuation, spans[-1][1]


def cloze_parts(text: str, context_words: int, start: int = 0) -> tuple[str, str, int]:
    """(passage before the answer, answer word, where the next passage starts) for the passage
    beginning at character `start`; ("", "", start) when no alphabetic word follows at least
    `context_words` words within the scan range."""
    first_start = None
    words = islice(WORD.finditer(text, start), context_words + CLOZE_SCAN_WORDS)
    for index, match in enumerate(words):
        if first_start is None:
            first_start = match.start()
        if index >= context_words and CLOZE_WORD.fullmatch(match.group()):
            return text[first_start:match.start()].rstrip(), match.group(), match.end()
    return "", "", start


def document_parts(kind: str, doc_id: str, text: str, params: dict) -> list[Parts]:
    """Up to `items_per_document` items' parts from successive windows; the first keeps the
    document's id, later ones `{id}:{k}`."""
    found: list[Parts] = []
    start = 0
    while len(found) < params["items_per_document"]:
        if kind == "continuation":
            context, answer, start = continuation_parts(
                text, params["context_words"], params["continuation_words"], start
            )
        else:
            context, answer, start = cloze_parts(text, params["cloze_context_words"], start)
        if not answer:
            break
        found.append(Parts(f"{doc_id}:{len(found)}" if found else doc_id, context, answer))
    return found


def pick_distractors(
    answer: str, candidates: Sequence[str], n: int, rng: random.Random
) -> list[str] | None:
    """`n` distinct candidates, all different from `answer` (ignoring case), or None.

    Random draws keep the pick proportional to how often a string occurs among the candidates;
    the full scan only runs when the draws keep hitting duplicates.
    """
    banned = {answer.casefold()}
    chosen: list[str] = []
    for _ in range(DRAWS_PER_DISTRACTOR * n):
        if len(chosen) == n or not candidates:
            break
        word = candidates[rng.randrange(len(candidates))]
        if word.casefold() not in banned:
            banned.add(word.casefold())
            chosen.append(word)
    if len(chosen) < n:
        rest = sorted({c for c in candidates if c.casefold() not in banned})
        chosen += rng.sample(rest, min(n - len(chosen), len(rest)))
    return chosen if len(chosen) == n else None


def cloze_candidates_by_length(pool: Iterable[Parts]) -> dict[int, list[str]]:
    """Every alphabetic word occurrence in the pool's passages, bucketed by length."""
    buckets: dict[int, list[str]] = {}
    for parts in pool:
        for word in WORD.findall(parts.context + " " + parts.answer):
            if CLOZE_WORD.fullmatch(word):
                buckets.setdefault(len(word), []).append(word)
    return buckets


@dataclass(frozen=True)
class Candidates:
    """Where distractors come from: whole continuations, or cloze words bucketed by length."""

    continuations: Sequence[str]
    words_by_length: dict[int, list[str]]


def candidates_for(kind: str, pool: Sequence[Parts]) -> Candidates:
    if kind == "continuation":
        return Candidates([p.answer for p in pool], {})
    return Candidates([], cloze_candidates_by_length(pool))


def distractors_for(
    kind: str, answer: str, candidates: Candidates, n: int, rng: random.Random
) -> list[str] | None:
    if kind == "continuation":
        return pick_distractors(answer, candidates.continuations, n, rng)
    # Same length +-1 first; widen only when the source's vocabulary is too small.
    for tolerance in range(1, 6):
        lengths = range(len(answer) - tolerance, len(answer) + tolerance + 1)
        words = [w for length in lengths for w in candidates.words_by_length.get(length, [])]
        picked = pick_distractors(answer, words, n, rng)
        if picked is not None:
            return picked
    return None


def make_item(
    kind: str, parts: Parts, set_name: str, candidates: Candidates, n_choices: int,
    rng: random.Random,
) -> dict | None:
    distractors = distractors_for(kind, parts.answer, candidates, n_choices - 1, rng)
    if distractors is None:
        return None
    label = rng.randrange(n_choices)
    choices = distractors[:label] + [parts.answer] + distractors[label:]
    return {"id": parts.doc_id, "source": set_name, "context": parts.context,
            "choices": choices, "label": label}


def collect_pools(
    heldout_test: Path, params: dict
) -> tuple[dict[str, dict[str, list[list[Parts]]]], dict[str, dict[str, int]]]:
    """Eligible documents (each as its items' parts) per kind and source, in reader order, and
    counts of unusable ones."""
    pools: dict[str, dict[str, list[list[Parts]]]] = {kind: {} for kind in params["kinds"]}
    unusable: dict[str, dict[str, int]] = {kind: {} for kind in params["kinds"]}
    report = ReadReport(shard=str(heldout_test))
    for doc in iter_documents([heldout_test], report):
        for kind in params["kinds"]:
            pool = pools[kind].setdefault(doc.set_name, [])
            unusable[kind].setdefault(doc.set_name, 0)
            if len(pool) >= params["max_pool_per_source"]:
                continue
            parts = document_parts(kind, doc.id, doc.text, params)
            if parts:
                pool.append(parts)
            else:
                unusable[kind][doc.set_name] += 1
    return pools, unusable


def source_items(
    kind: str, set_name: str, pool: list[list[Parts]], params: dict
) -> tuple[list[dict], list[dict]]:
    """(few-shot items, test items) of one kind and source; deterministic given the params."""
    rng = random.Random(f"{params['seed']}:{kind}:{set_name}")
    documents = list(pool)
    rng.shuffle(documents)
    candidates = candidates_for(kind, [parts for doc in pool for parts in doc])
    # A kind no one evaluates with demonstrations needs no few-shot split; its documents all
    # stay available for testing.
    needs_fewshot = params["shots"][kind] > 0 or params["protocol_shots"] > 0
    n_fewshot = params["fewshot_per_source"] if needs_fewshot else 0
    n_test = params["items_per_source"]
    fewshot: list[dict] = []
    test: list[dict] = []
    for document in documents:
        if len(fewshot) < n_fewshot:
            # One demonstration per document, and none from a document that is tested on.
            item = make_item(kind, document[0], set_name, candidates, params["n_choices"], rng)
            if item is not None:
                fewshot.append(item)
            continue
        for parts in document:
            if len(test) == n_test:
                return fewshot, test
            item = make_item(kind, parts, set_name, candidates, params["n_choices"], rng)
            if item is not None:
                test.append(item)
    return fewshot, test


def task_config(name: str, test_file: str, fewshot_file: str | None) -> dict:
    data_files = {"test": test_file}
    config: dict = {"task": name, "dataset_path": "json"}
    if fewshot_file is not None:
        data_files["fewshot"] = fewshot_file
    config["dataset_kwargs"] = {"data_files": data_files}
    config["test_split"] = "test"
    if fewshot_file is not None:
        config["fewshot_split"] = "fewshot"
    config |= {
        "output_type": "multiple_choice",
        # Plain field names: lm-eval reads them from the record without template rendering.
        "doc_to_text": "context",
        "doc_to_target": "label",
        "doc_to_choice": "choices",
        # Contexts end on a word, answers start with one: lm-eval puts one space between.
        # Few-shot examples keep lm-eval's default "\n\n" separator.
        "target_delimiter": " ",
        "metric_list": [
            {"metric": "acc", "aggregation": "mean", "higher_is_better": True},
            {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True},
        ],
        "metadata": {"version": 1.0},
    }
    return config


def write_jsonl(path: Path, records: Iterable[dict]) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")


def write_task(out_dir: Path, name: str, fewshot: list[dict], test: list[dict]) -> None:
    test_file = out_dir / "data" / f"{name}.test.jsonl"
    fewshot_file = out_dir / "data" / f"{name}.fewshot.jsonl" if fewshot else None
    write_jsonl(test_file, test)
    if fewshot_file is not None:
        write_jsonl(fewshot_file, fewshot)
    config = task_config(
        name, test_file.as_posix(), fewshot_file.as_posix() if fewshot_file else None
    )
    with atomic_path(out_dir / f"{name}.yaml") as tmp:
        tmp.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=1000))


def remove_stale_tasks(out_dir: Path) -> None:
    """Tasks from an earlier build with other sources would still be indexed by lm-eval."""
    for path in [*out_dir.glob(f"{TASK_PREFIX}_*.yaml"),
                 *(out_dir / "data").glob(f"{TASK_PREFIX}_*.jsonl")]:
        path.unlink()


def build_local_tasks(heldout_test: Path, out_dir: Path, params: dict) -> list[dict]:
    """Write one lm-eval task per kind and source into `out_dir`; return the task list.

    Each entry: `name`, `group` (the kind), `shots`, `source` (set_name), `items`,
    `fewshot_items`, `skipped_documents` (documents of that source unusable for the kind: too
    few words, or for cloze no alphabetic word within the scan range). Sources
    without enough usable documents get no task; they are listed in `out_dir/tasks.json`
    together with the resolved parameters and the task list.
    """
    params = resolve_params(params)
    out_dir = Path(out_dir)
    (out_dir / "data").mkdir(parents=True, exist_ok=True)
    remove_stale_tasks(out_dir)
    pools, unusable = collect_pools(Path(heldout_test), params)
    tasks: list[dict] = []
    skipped_sources: list[dict] = []
    names: dict[str, str] = {}
    for kind in params["kinds"]:
        for set_name in sorted(pools[kind], key=source_slug):
            name = task_name(kind, set_name)
            if names.setdefault(name, set_name) != set_name:
                raise ValueError(f"sources {names[name]!r} and {set_name!r} share task {name}")
            fewshot, test = source_items(kind, set_name, pools[kind][set_name], params)
            counts = {"skipped_documents": unusable[kind][set_name]}
            if not test:
                skipped_sources.append({"kind": kind, "source": set_name, **counts,
                                        "eligible_documents": len(pools[kind][set_name])})
                continue
            write_task(out_dir, name, fewshot, test)
            tasks.append({"name": name, "group": kind, "shots": params["shots"][kind],
                          "source": set_name, "items": len(test),
                          "fewshot_items": len(fewshot), **counts})
    write_json(out_dir / "tasks.json", {"params": params, "tasks": tasks,
                                        "skipped_sources": skipped_sources})
    return tasks


def load_task_list(out_dir: Path) -> list[dict]:
    """The task list a previous `build_local_tasks` returned, read back from `tasks.json`."""
    return json.loads((Path(out_dir) / "tasks.json").read_text())["tasks"]
