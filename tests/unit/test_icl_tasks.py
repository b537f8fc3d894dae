"""Offline lm-eval task building from held-out documents."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml
from conftest_eval import CODE, SHORT_DOCS_PER_SOURCE, WIKI, eval_world

from selectlab.evaluate.icl_tasks import (
    build_local_tasks,
    cloze_parts,
    continuation_parts,
    document_parts,
    load_task_list,
    pick_distractors,
    resolve_params,
    source_slug,
)
from selectlab.shards import read_all

PARAMS = {"items_per_source": 20, "fewshot_per_source": 3, "shots": {"cloze": 2},
          "seed": 7, "context_words": 15, "continuation_words": 5, "cloze_context_words": 15}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return eval_world(tmp_path_factory)


@pytest.fixture()
def built(world, tmp_path, monkeypatch):
    """Tasks built the way the workflow does it: relative out_dir from the working directory."""
    monkeypatch.chdir(tmp_path)
    tasks = build_local_tasks(world.heldout["test"], Path("eval/tasks"), PARAMS)
    return tasks, tmp_path / "eval" / "tasks"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_one_task_per_kind_and_source(built):
    tasks, out_dir = built
    names = [t["name"] for t in tasks]
    assert names == ["sl_continuation_github", "sl_continuation_wikipedia",
                     "sl_cloze_github", "sl_cloze_wikipedia"]
    for task in tasks:
        assert task["group"] in ("continuation", "cloze")
        assert task["shots"] == (2 if task["group"] == "cloze" else 0)
        assert task["items"] == PARAMS["items_per_source"]
        assert task["fewshot_items"] == (PARAMS["fewshot_per_source"] if task["shots"] else 0)
        assert task["skipped_documents"] == SHORT_DOCS_PER_SOURCE
    assert load_task_list(out_dir) == tasks


def test_yaml_is_valid_and_points_at_relative_data(built):
    tasks, out_dir = built
    for task in tasks:
        config = yaml.safe_load((out_dir / f"{task['name']}.yaml").read_text())
        assert config["task"] == task["name"]
        assert config["output_type"] == "multiple_choice"
        files = config["dataset_kwargs"]["data_files"]
        if task["shots"]:
            assert set(files) == {"test", "fewshot"} and config["fewshot_split"] == "fewshot"
        else:  # zero-shot: no few-shot split to feed
            assert set(files) == {"test"} and "fewshot_split" not in config
        for path in files.values():
            assert not Path(path).is_absolute() and path.startswith("eval/tasks/data/")
            assert Path(path).is_file()  # relative to the working directory


def words_of(text: str) -> list[str]:
    return text.split()


def closest_lengths(answer: str, words: set[str]) -> int:
    """The smallest length difference that still offers three other cloze-worthy words."""
    others = {w.casefold() for w in words if w.isalpha() and len(w) >= 3} - {answer.casefold()}
    return next(t for t in range(1, 6)
                if sum(abs(len(w) - len(answer)) <= t for w in others) >= 3)


def test_items_have_the_true_answer_at_label_and_same_source_distractors(world, built):
    tasks, out_dir = built
    documents, _ = read_all([world.heldout["test"]])
    by_id = {d.id: d for d in documents}
    for task in tasks:
        same_source = [d for d in documents if d.set_name == task["source"]]
        cw = PARAMS["context_words"]
        positions = {" ".join(words_of(d.text)[cw:cw + PARAMS["continuation_words"]])
                     for d in same_source}
        source_words = {w for d in same_source for w in words_of(d.text)}
        items = read_jsonl(out_dir / "data" / f"{task['name']}.test.jsonl")
        assert len({item["id"] for item in items}) == len(items)
        for item in items:
            doc = by_id[item["id"]]
            assert doc.set_name == task["source"] == item["source"]
            choices, answer = item["choices"], item["choices"][item["label"]]
            assert len(choices) == 4 and len({c.casefold() for c in choices}) == 4
            assert doc.text.startswith(item["context"])
            if task["group"] == "continuation":
                assert answer == " ".join(words_of(doc.text)[cw:cw + PARAMS["continuation_words"]])
                assert all(c in positions for c in choices)  # same position, same source
            else:
                rest = words_of(doc.text[len(item["context"]):])
                assert answer == rest[0] and answer.isalpha()
                assert all(c in source_words for c in choices)
                assert all(abs(len(c) - len(answer)) <= closest_lengths(answer, source_words)
                           for c in choices)


def test_fewshot_documents_are_not_test_documents(built):
    tasks, out_dir = built
    for task in [t for t in tasks if t["shots"]]:
        test = {i["id"] for i in read_jsonl(out_dir / "data" / f"{task['name']}.test.jsonl")}
        fewshot = read_jsonl(out_dir / "data" / f"{task['name']}.fewshot.jsonl")
        assert fewshot and not test & {i["id"] for i in fewshot}


def test_labels_are_spread_over_positions(built):
    tasks, out_dir = built
    labels = [i["label"] for t in tasks
              for i in read_jsonl(out_dir / "data" / f"{t['name']}.test.jsonl")]
    assert set(labels) == {0, 1, 2, 3}


def test_output_is_deterministic_byte_for_byte(world, tmp_path, monkeypatch):
    outputs = []
    for attempt in ("a", "b"):
        (tmp_path / attempt).mkdir()
        monkeypatch.chdir(tmp_path / attempt)
        build_local_tasks(world.heldout["test"], Path("tasks"), PARAMS)
        outputs.append({p.relative_to(tmp_path / attempt).as_posix(): p.read_bytes()
                        for p in sorted((tmp_path / attempt / "tasks").rglob("*"))
                        if p.is_file()})
    assert outputs[0] == outputs[1]
    # yaml + test per task, few-shot data for the two cloze tasks, and tasks.json
    assert len(outputs[0]) == 4 * 2 + 2 + 1
    build_local_tasks(world.heldout["test"], Path("tasks"), PARAMS | {"seed": 8})
    reseeded = (tmp_path / "b" / "tasks" / "data" / "sl_cloze_wikipedia.test.jsonl").read_bytes()
    assert reseeded != outputs[0]["tasks/data/sl_cloze_wikipedia.test.jsonl"]


def test_rebuild_with_fewer_kinds_removes_stale_tasks(world, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    build_local_tasks(world.heldout["test"], Path("tasks"), PARAMS)
    tasks = build_local_tasks(world.heldout["test"], Path("tasks"),
                              PARAMS | {"kinds": ["cloze"]})
    assert sorted(p.stem for p in Path("tasks").glob("*.yaml")) == [t["name"] for t in tasks]


def test_source_without_enough_documents_is_skipped_and_reported(world, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tasks = build_local_tasks(world.heldout["test"], Path("tasks"),
                              PARAMS | {"kinds": ["continuation"], "context_words": 130,
                                        "continuation_words": 15})
    manifest = json.loads(Path("tasks/tasks.json").read_text())
    assert tasks == [] and {s["source"] for s in manifest["skipped_sources"]} == {WIKI, CODE}


def test_continuation_parts_keep_inner_whitespace_and_skip_short_text():
    text = "a b\nc d e\tf g"
    assert continuation_parts(text, 2, 3) == ("a b", "c d e", 9)
    assert continuation_parts(text, 2, 3, start=9) == ("", "", 9)  # "f g": too short
    assert continuation_parts("a b c", 2, 3) == ("", "", 0)


def test_cloze_answer_is_the_first_alphabetic_word_after_the_context():
    text = "one two three 42 x-y Word more"
    assert cloze_parts(text, 3) == ("one two three 42 x-y", "Word", 25)
    assert cloze_parts("one two three 42", 3) == ("", "", 0)


def test_a_document_gives_successive_windows_up_to_items_per_document():
    text = " ".join(f"w{i}" for i in range(23))  # room for four windows of 2 + 3 words
    params = resolve_params({"context_words": 2, "continuation_words": 3,
                             "items_per_document": 3})
    parts = document_parts("continuation", "doc", text, params)
    assert [(p.doc_id, p.context, p.answer) for p in parts] == [
        ("doc", "w0 w1", "w2 w3 w4"), ("doc:1", "w5 w6", "w7 w8 w9"),
        ("doc:2", "w10 w11", "w12 w13 w14")]
    cloze = document_parts("cloze", "doc", "a b Cat c d Dog e f", params | {
        "cloze_context_words": 2})
    assert [(p.context, p.answer) for p in cloze] == [("a b", "Cat"), ("c d", "Dog")]


def test_more_items_per_document_keep_demonstrations_off_tested_documents(world, tmp_path):
    one = build_local_tasks(world.heldout["test"], tmp_path / "one", PARAMS)
    params = PARAMS | {"items_per_document": 3, "items_per_source": 45}
    many = build_local_tasks(world.heldout["test"], tmp_path / "many", params)
    assert [t["items"] for t in many] == [45] * len(one)
    for task in many:
        data = tmp_path / "many" / "data"
        test = read_jsonl(data / f"{task['name']}.test.jsonl")
        tested = {item["id"].split(":")[0] for item in test}
        assert len(tested) < len(test)  # several items share a document
        if task["fewshot_items"]:
            shots = read_jsonl(data / f"{task['name']}.fewshot.jsonl")
            assert not tested & {item["id"] for item in shots}


def test_distractors_differ_from_answer_and_each_other():
    rng = random.Random(0)
    candidates = ["River", "river", "stone", "stone", "field", "bridge", "Stone"]
    for _ in range(50):
        picked = pick_distractors("river", candidates, 3, rng)
        assert len({p.casefold() for p in picked}) == 3 and "river" not in picked
    assert pick_distractors("river", ["river", "River", "stone"], 3, rng) is None


def test_params_are_checked():
    with pytest.raises(ValueError, match="unknown"):
        resolve_params({"item_per_source": 3})
    with pytest.raises(ValueError, match="positive"):
        resolve_params({"continuation_words": 0})
    with pytest.raises(ValueError, match="shots"):
        resolve_params({"shots": 9, "fewshot_per_source": 2})
    assert resolve_params({"shots": 1})["shots"] == {"continuation": 1, "cloze": 1}
    with pytest.raises(ValueError, match="shots"):
        resolve_params({"protocol_shots": 3, "fewshot_per_source": 2})


def test_stand_in_shots_give_every_kind_a_fewshot_split(world, tmp_path):
    """A paper protocol asking a stand-in for demonstrations needs a few-shot split even for
    a kind the overview table runs zero-shot."""
    params = PARAMS | {"shots": 0, "protocol_shots": 2}
    tasks = build_local_tasks(world.heldout["test"], tmp_path / "tasks", params)
    assert all(t["shots"] == 0 for t in tasks)
    assert all(t["fewshot_items"] == PARAMS["fewshot_per_source"] for t in tasks)


def test_source_slugs():
    assert source_slug("RedPajamaStackExchange") == "stackexchange"
    assert source_slug("Dictionary (GCIDE)") == "dictionary_gcide"
