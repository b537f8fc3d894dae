"""Finding a plugin's object from its config entry: a .py file, a dotted import path or a
Python entry point, and the object in it.

A file is imported under a name of its own (`selectlab_plugin_<stem>_<hash of its path>`), so
two users' `my_scores.py` never shadow each other or an installed module. Every failure is a
`PluginError` naming the config key, the module and what to do.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from importlib import metadata
from pathlib import Path

# Where a plugin's object is marked by its decorator (`score_family`, `selection_method`).
MARK = "__selectlab_plugin__"
ENTRY_POINT_GROUPS = {"family": "selectlab.score_families", "method": "selectlab.selection_methods"}
KIND_WORDS = {"family": "score family (@score_family)",
              "method": "selection method (@selection_method)"}


class PluginError(ValueError):
    """A plugin cannot run: what is wrong, where it is configured, and what to do."""


def marker(spec):
    """The decorator that marks an object with its plugin spec (what `load_object` finds)."""

    def mark(obj):
        setattr(obj, MARK, spec)
        return obj

    return mark


def is_file_module(module: str) -> bool:
    return module.endswith(".py") or "/" in module


def module_files(entry: dict) -> list[str]:
    """The plugin's own .py file, as a job input ([] for an import path or entry point)."""
    module = entry.get("module", "")
    return [module] if is_file_module(module) else []


def anchored(module: str, base_dir: Path) -> str:
    """A .py path relative to the config file that names it, made absolute (dotted import
    paths unchanged)."""
    if not is_file_module(module) or Path(module).is_absolute():
        return module
    return str((base_dir / module).resolve())


def import_module(module: str, where: str):
    if is_file_module(module):
        path = Path(module)
        if not path.is_file():
            raise PluginError(f"{where}.module: no file {module!r} (a .py path is relative to "
                              "the config file that names it)")
        digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
        name = f"selectlab_plugin_{path.stem}_{digest}"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        try:
            spec.loader.exec_module(loaded)
        except Exception as error:
            del sys.modules[name]
            raise PluginError(f"{where}.module: importing {module} failed: "
                              f"{type(error).__name__}: {error}") from error
        return loaded
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise PluginError(f"{where}.module: cannot import {module!r} ({error}); give a .py "
                          "file or a module on the Python path") from error


def entry_point_object(name: str, kind: str, where: str):
    group = ENTRY_POINT_GROUPS[kind]
    found = [ep for ep in metadata.entry_points(group=group) if ep.name == name]
    if not found:
        raise PluginError(f"{where}.entry_point: no entry point {name!r} in group {group!r}; "
                          "install the package that declares it")
    return found[0].load()


def marked_objects(module, kind: str) -> list[tuple[str, object]]:
    """The module's public objects decorated as `kind` (a family or a method)."""
    return [(name, value) for name, value in vars(module).items()
            if getattr(getattr(value, MARK, None), "kind", None) == kind
            and not name.startswith("_")]


def load_object(entry: dict, kind: str, where: str):
    """The decorated object an entry names (`module` [+ `function`], or `entry_point`)."""
    if "entry_point" in entry:
        found = entry_point_object(entry["entry_point"], kind, where)
    else:
        module = import_module(entry["module"], where)
        if "function" in entry:
            if not hasattr(module, entry["function"]):
                names = ", ".join(name for name, _ in marked_objects(module, kind)) or "none"
                raise PluginError(f"{where}.function: {entry['module']} has no "
                                  f"{entry['function']!r}; its decorated objects: {names}")
            found = getattr(module, entry["function"])
        else:
            marked = marked_objects(module, kind)
            if len(marked) != 1:
                names = ", ".join(name for name, _ in marked) or "none"
                raise PluginError(f"{where}: {entry['module']} has {len(marked)} objects "
                                  f"decorated as a {KIND_WORDS[kind]} ({names}); name one "
                                  "with `function:`")
            found = marked[0][1]
    spec = getattr(found, MARK, None)
    if spec is None or spec.kind != kind:
        decorator = "score_family" if kind == "family" else "selection_method"
        raise PluginError(f"{where}: {found!r} is not a {KIND_WORDS[kind]}; decorate it with "
                          f"selectlab.plugins.{decorator}")
    return found
