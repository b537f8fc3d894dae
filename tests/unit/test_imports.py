"""Imports within selectlab: no module imports, directly or through others, one that imports it
(function-level imports included), and what the workflow imports while it plans loads neither
torch nor matplotlib."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
# Imported by the Snakefile and rules while the job graph is built.
PLANNING_MODULES = ["selectlab.layout", "selectlab.resources", "selectlab.schema",
                    "selectlab.config", "selectlab.corpus.resolve", "selectlab.judge.resolve",
                    "selectlab.raters.resolve", "selectlab.annotate.resolve",
                    "selectlab.analysis.plan", "selectlab.selection.resolve",
                    "selectlab.selection.grids", "selectlab.selection.sizing",
                    "selectlab.train.resolve", "selectlab.train.memory",
                    "selectlab.train.partitions", "selectlab.train.launch",
                    "selectlab.evaluate.resolve", "selectlab.evaluate.sizing",
                    "selectlab.instruct.resolve", "selectlab.report.plan",
                    "selectlab.mates.schedule", "selectlab.mates.plan", "selectlab.cost.roles",
                    "selectlab.config_errors", "selectlab.crossref", "selectlab.lifecycle"]


def modules() -> dict[str, Path]:
    found = {}
    for path in (SRC / "selectlab").rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the selectlab modules it imports anywhere in its body."""
    known = modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                graph[name] |= {alias.name for alias in node.names if alias.name in known}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    if target in known:
                        graph[name].add(target)
                    elif base in known:
                        graph[name].add(base)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_import_circle():
    assert cycles(import_graph()) == []


def test_the_walk_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_planning_imports_neither_torch_nor_matplotlib():
    code = ("import sys\n" + "".join(f"import {name}\n" for name in PLANNING_MODULES)
            + "print(sorted({'torch', 'matplotlib'} & set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={"PYTHONPATH": str(SRC)}, check=True)
    assert result.stdout.strip() == "[]"
