"""Plan-time checks of your own families and methods.

Run by `selectlab.crossref` with the config's other checks, before any job: each plugin's
module imports, its object is decorated as the right kind, its signature takes what the config
gives it, a family's probe texts score to numeric columns of the right length without NaN, and
no name takes a built-in's. Every problem is one line naming the config key.
"""

from __future__ import annotations

from selectlab.plugins import families, methods
from selectlab.plugins.loading import PluginError, load_object
from selectlab.plugins.rows import user_families, user_methods

# Family names that are the workflow's own: sidecar directories it writes (meta, ranks),
# family kinds and raters (their sidecars and tables carry these names).
RESERVED_FAMILY_NAMES = ("meta", "ranks", "plugin", "qurater", "dataman", "prrc", "fineweb_edu",
                         "wanjuan")


def family_where(name: str) -> str:
    return f"annotate.families.{name}"


def load_family(entry: dict, name: str):
    return load_object(entry, "family", family_where(name))


def family_columns(entry: dict, name: str) -> list[str]:
    """The score columns a plugin family declares ([] when it cannot be loaded: the checks
    below report why)."""
    try:
        return list(families.spec_of(load_family(entry, name)).columns)
    except PluginError:
        return []


def family_problems(config: dict) -> list[str]:
    from selectlab.annotate.registry import FAMILIES

    problems = []
    for name, entry in user_families(config).items():
        where = family_where(name)
        if name in RESERVED_FAMILY_NAMES or name in FAMILIES:
            problems.append(f"{where}: {name!r} is the name of a built-in family; name yours "
                            "differently")
            continue
        try:
            obj = load_family(entry, name)
            families.check_signature(obj, entry.get("options", {}), where)
            if entry.get("probe", True):
                families.probe(obj, entry.get("options", {}), where, entry.get("nan", "refuse"))
        except PluginError as error:
            problems.append(str(error))
    return problems


def method_problems(config: dict) -> list[str]:
    from selectlab.selection.methods import METHODS

    problems, loaded = [], {}
    builtin = {*METHODS, "mates"}
    for name, entry in user_methods(config).items():
        where = f"selection.methods.{name}"
        if name in builtin:
            problems.append(f"{where}: {name!r} is a built-in selection method; name yours "
                            "differently")
            continue
        try:
            loaded[name] = load_object(entry, "method", where)
        except PluginError as error:
            problems.append(str(error))
    for variant, entry in config["variants"].items():
        if entry["method"] in loaded:
            try:
                methods.check_signature(loaded[entry["method"]], entry.get("params", {}),
                                        f"variants.{variant}.method")
            except PluginError as error:
                problems.append(str(error))
    return problems


def known_methods(config: dict) -> list[str]:
    from selectlab.selection.methods import METHODS

    return sorted({*METHODS, "mates", *user_methods(config)})
