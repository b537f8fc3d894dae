"""The stage variants of a MATES variant: their names, the `mates` settings a variant runs
with, and how its token budget splits over the stages.

A MATES variant V (method `mates`) pre-trains in stages, each a generated variant `V__stage{k}`;
stage k > 1 selects by the influence family `V__influence{k}`. Config variant names may not end
in `__stage{k}` (the schema says so). Each stage's variant entry is built by
selectlab.selection.resolve (stage_entry), its probe, fit and annotation jobs by
selectlab.mates.plan. Plain dict functions: the workflow imports this module while it builds the
job graph.
"""

from __future__ import annotations

import re

from selectlab.corpus.resolve import reference_split_configured

MATES_METHOD = "mates"
STAGE_MARK = "__stage"
INFLUENCE_MARK = "__influence"
INFLUENCE_COLUMN = "influence"
HELDOUT_REFERENCE = "heldout:reference"
# A MATES variant's params may override these keys of the `mates` section.
MATES_OVERRIDES = ("stages", "probes", "probe_jobs", "temperature")


# Meta-rater's MATES baseline (Section 4.1) keeps the top-k by the influence a ModernBERT model
# predicts; MATES itself re-selects every 10k steps, the first stage on a uniform selection.
def mates_variants(config: dict) -> list[str]:
    return [name for name, v in config["variants"].items() if v["method"] == MATES_METHOD]


def mates_settings(config: dict, variant: str) -> dict:
    """The `mates` section with the variant's own overrides (stages, probes, ...); the
    influence model's settings and the job sizes are left out (selectlab.mates.plan)."""
    section = config.get("mates")
    if not section:
        raise ValueError(f"variant {variant!r} uses method mates but the config has no "
                         "`mates` section")
    entry = config["variants"][variant]
    overrides = {k: v for k, v in (entry.get("params") or {}).items() if k in MATES_OVERRIDES}
    merged = {k: v for k, v in section.items() if k not in ("influence_model", "resources")}
    merged |= overrides
    if merged["stages"] < 2:
        raise ValueError(f"variant {variant!r}: MATES needs at least 2 stages")
    if merged["reference"].startswith("heldout:") and merged["reference"] != HELDOUT_REFERENCE:
        raise ValueError(f"mates.reference {merged['reference']!r}: the only held-out split it "
                         f"may name is {HELDOUT_REFERENCE!r} (validation and test are reported)")
    if merged["reference"] == HELDOUT_REFERENCE and not reference_split_configured(config):
        raise ValueError("mates.reference is heldout:reference, but the corpus writes no "
                         "reference split: set corpus.embedded.heldout_docs_per_source.reference"
                         " (embedded corpus) or give a JSONL file")
    return merged


def mates_stage_name(variant: str, stage: int) -> str:
    return f"{variant}{STAGE_MARK}{stage}"


def influence_family(variant: str, stage: int) -> str:
    """The sidecar family holding the influence predicted for `stage` (>= 2)."""
    return f"{variant}{INFLUENCE_MARK}{stage}"


def parse_stage_name(config: dict, name: str) -> tuple[str, int] | None:
    """(variant, stage) of a generated stage variant's name, or None."""
    variant, mark, stage = name.rpartition(STAGE_MARK)
    if not mark or not stage.isdigit() or variant not in mates_variants(config):
        return None
    stage = int(stage)
    return (variant, stage) if 1 <= stage <= mates_settings(config, variant)["stages"] else None


def mates_stage_names(config: dict, variant: str) -> list[str]:
    stages = mates_settings(config, variant)["stages"]
    return [mates_stage_name(variant, k) for k in range(1, stages + 1)]


def stage_name_patterns(config: dict) -> list[str]:
    """Regular expressions of every stage variant name (wildcard constraints)."""
    return [re.escape(variant) + STAGE_MARK + "[0-9]+" for variant in mates_variants(config)]


def influence_stages(config: dict, variant: str) -> list[int]:
    """The stages chosen by predicted influence (every stage after the uniform first)."""
    return list(range(2, mates_settings(config, variant)["stages"] + 1))


def stage_budgets(total: int, stages: int) -> list[int]:
    """Equal shares of the token budget (MATES: equal 10k-step stages); the last takes the
    rounding remainder."""
    share = total // stages
    return [share] * (stages - 1) + [total - share * (stages - 1)]
