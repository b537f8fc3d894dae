"""docs/layout.md against src/selectlab/layout/: the doc lists every path the layout defines,
names no path it does not, and names only rules that exist; the layout's functions give the
paths the rules declare."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import workflow_rule_names

from selectlab import layout

REPO = Path(__file__).resolve().parents[2]
CODE = re.compile(r"`([^`]+)`")


def doc_rows() -> list[list[str]]:
    """The cells of the first table of docs/layout.md (path, layout function, writers, ...)."""
    lines = (REPO / "docs" / "layout.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| path |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def pattern_regex(pattern: str) -> re.Pattern:
    """A layout pattern as a regex: each {wildcard} stands for any text within one name."""
    parts = re.split(r"(\{[^}]+\})", pattern)
    return re.compile("".join("[^/]+" if part.startswith("{") else re.escape(part)
                              for part in parts))


def test_every_layout_path_is_documented_with_its_function():
    documented = {}
    for row in doc_rows():
        for path in CODE.findall(row[0]):
            documented.setdefault(path.rstrip("/"), set()).update(CODE.findall(row[1]))
    for name, pattern in layout.patterns().items():
        assert pattern in documented, f"docs/layout.md lacks a row for {pattern} ({name})"
        assert name in documented[pattern], f"docs/layout.md: {pattern} is not layout.{name}"


def test_every_documented_path_is_a_layout_path():
    regexes = [pattern_regex(pattern) for pattern in layout.patterns().values()]
    functions = set(layout.patterns())
    for row in doc_rows():
        for path in CODE.findall(row[0]):
            assert any(regex.fullmatch(path.rstrip("/")) for regex in regexes), path
        assert set(CODE.findall(row[1])) <= functions, row[1]


def test_documented_writers_are_rules():
    rules = workflow_rule_names()
    writers = {name for row in doc_rows() for name in CODE.findall(row[2])}
    assert writers and writers <= rules, sorted(writers - rules)


def test_paths_take_the_run_directory_and_keep_unnamed_wildcards():
    root = layout.run_dir("default")
    assert root == "results/default"
    assert layout.selection(root) == "results/default/selections/{variant}/selection.parquet"
    assert layout.selection(root, "uniform") == (
        "results/default/selections/uniform/selection.parquet")
    assert layout.sidecar(root, "dsir") == "results/default/attributes/dsir/{shard}.parquet"
    assert layout.metarater_weights(root, "all25", 32) == (
        "results/default/metarater/all25/n32/weights.json")
    assert layout.archive(root) == "results/default/archive/selectlab-default.tar.gz"
    assert layout.log(root, "tables") == "results/default/logs/tables.log"
    assert layout.job_log(root, "annotate", "dsir/shard_00000") == (
        "results/default/logs/annotate/dsir/shard_00000.log")
    assert layout.benchmark(root, "pretrain", "uniform") == (
        "results/default/logs/pretrain/uniform.benchmark.tsv")


def test_rules_spell_no_run_path_themselves():
    # Only selectlab.layout writes paths under results/: rule files call it.
    for path in (REPO / "rules").glob("*.smk"):
        assert "results/" not in path.read_text(), path.name


def test_each_stage_modules_paths_are_the_layouts():
    """The paths live in one module per stage; `layout.X` is each of them, and every stage's
    paths keep their place under the run directory."""
    import inspect

    from selectlab.layout import _corpus, _instruct, _labels, _mates, _outputs, _training

    for module in (_corpus, _labels, _training, _instruct, _mates, _outputs):
        functions = [f for _, f in inspect.getmembers(module, inspect.isfunction)
                     if f.__module__ == module.__name__]
        assert functions, module.__name__
        for function in functions:
            assert getattr(layout, function.__name__) is function
    root = layout.run_dir("r")
    assert layout.tokens(root) == "results/r/corpus/tokens/{shard}.npy"
    assert layout.judge_labels(root, "qurating") == "results/r/judgments/qurating/labels.parquet"
    assert layout.rater_metrics(root, "qurater") == "results/r/raters/qurater/metrics.json"
    assert layout.snapshot(root, "uniform", "0.5") == (
        "results/r/models/uniform/final/snapshots/f0.5")
    assert layout.answers(root, "uniform") == "results/r/instruct/answers/uniform.parquet"
    assert layout.answers_metrics(root, "uniform") == (
        "results/r/instruct/answers/uniform.metrics.json")
    assert layout.mates_probes(root, "mates", 1, 0) == (
        "results/r/mates/mates/stage1/probes/part0.parquet")
    assert layout.paper_cells(root) == "results/r/tables/paper_cells.csv"
    assert layout.caption("paper_table") == "report/paper_table.rst"
    assert len(layout.patterns()) == 80
