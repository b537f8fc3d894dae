"""Every variant a config trains, in its resolved form: what `selectlab config show --variants`
prints.

A config states its rows compactly (grids, family defaults, `rerun:` entries, replicates); what
a job sees is the variant after all of that is applied. One record per variant holds what
decides its model: its pool, its selection (method, budget in tokens, seed, params, as
`selectlab select run` gets them) and its training settings and model preset (as `selectlab
pretrain` gets them). Two configs that print the same records train the same rows, however
each is written, which is how a shorter config/paper.yaml is checked against the longer one.
"""

from __future__ import annotations

import json

from selectlab.replicates import replicate_names
from selectlab.selection.pools import variant_pool
from selectlab.selection.resolve import resolve_selection
from selectlab.train.resolve import resolve_pretrain

TABLE_COLUMNS = ("variant", "family", "method", "pool", "budget_tokens", "seeds", "params")


def variant_record(config: dict, name: str) -> dict:
    entry = config["variants"][name]
    selection = resolve_selection(config, name)
    return {
        "name": name,
        "label": entry.get("label", name),
        "family": entry.get("family"),
        "pool": variant_pool(config, name),
        "replicates": len(replicate_names(config, name)),
        "selection": {key: value for key, value in selection.items() if key != "name"},
        "pretrain": resolve_pretrain(config, name),
    }


def variant_records(config: dict) -> list[dict]:
    """One record per configured variant (replicates are counted, not listed), by name."""
    return [variant_record(config, name) for name in sorted(config["variants"])]


def records_jsonl(records: list[dict]) -> str:
    """One JSON object per line, keys sorted: the form compared byte for byte."""
    return "".join(json.dumps(record, sort_keys=True) + "\n" for record in records)


def records_table(records: list[dict]) -> str:
    """The records as an aligned text table for reading, one row per variant."""
    rows = [TABLE_COLUMNS] + [
        (r["name"], str(r["family"]), r["selection"]["method"], r["pool"],
         f"{r['selection']['budget_tokens']:,}", str(r["replicates"]),
         json.dumps(r["selection"]["params"], sort_keys=True))
        for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_COLUMNS) - 1)]
    lines = ["  ".join([cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
                       + [row[-1]]) for row in rows]
    return "\n".join(line.rstrip() for line in lines) + f"\n({len(records)} variants)\n"
