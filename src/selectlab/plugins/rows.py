"""Which rows are yours: the variants that select with your method or read your family's
scores, labelled as yours in every table and the report."""

from __future__ import annotations

YOURS = "yours"


def user_families(config: dict) -> dict[str, dict]:
    """Your score families (kind plugin), by name."""
    return {name: entry for name, entry in config["annotate"]["families"].items()
            if entry.get("kind") == "plugin"}


def user_methods(config: dict) -> dict[str, dict]:
    return (config.get("selection") or {}).get("methods") or {}


def is_users_variant(config: dict, name: str) -> bool:
    """A row is yours when it selects with your method or reads your family's scores."""
    from selectlab.selection.methods import required_raters

    entry = config["variants"][name]
    return (entry["method"] in user_methods(config)
            or bool(set(required_raters(entry.get("params", {}))) & set(user_families(config))))


def variant_label(config: dict, name: str) -> str:
    """A row's label in every table and the report; yours are marked."""
    label = str(config["variants"][name].get("label", name))
    return f"{label} ({YOURS})" if is_users_variant(config, name) else label


def users_variants(config: dict) -> list[str]:
    return [name for name in config["variants"] if is_users_variant(config, name)]
