"""The schema's lists of names equal what the code registers, so a new selection method, family
kind or rater cannot be configured before it exists, nor exist without being configurable."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from selectlab.annotate.registry import FAMILIES
from selectlab.mates.plan import FAMILY_KIND as MATES_FAMILY_KIND
from selectlab.raters.spec import RATERS
from selectlab.selection.mates_stages import MATES_METHOD
from selectlab.selection.methods import METHODS

SCHEMA = Path(__file__).resolve().parents[2] / "config" / "schema"


def schema(name: str) -> dict:
    return yaml.safe_load((SCHEMA / name).read_text())


def test_selection_method_enum_is_the_registered_methods():
    # MATES is selected stage by stage (its stages use registered methods), so it is a method
    # of the configuration without being one of a single selection job.
    # Any other name is yours (selection.methods), checked by name in selectlab.crossref.
    conditions = schema("variants.schema.yaml")["allOf"]
    (enum,) = [c["if"]["properties"]["method"]["not"]["enum"] for c in conditions
               if "not" in c["if"]["properties"]["method"]]
    assert MATES_METHOD not in METHODS
    assert sorted(enum) == sorted([*METHODS, MATES_METHOD])
    assert sorted(enum) == sorted(re.findall(r"\b[a-z_]+\b", schema("variants.schema.yaml")[
        "properties"]["method"]["description"].split("(")[1].split(")")[0]))


def test_annotation_family_kinds_are_the_registered_kinds():
    annotate = schema("annotate.schema.yaml")
    choices = annotate["properties"]["families"]["additionalProperties"]["oneOf"]
    kinds = []
    for choice in choices:
        definition = annotate["$defs"][choice["$ref"].removeprefix("#/$defs/")]
        # your own family (kind plugin) is its source's keys and its settings' together
        properties = definition.get("properties") or definition["allOf"][-1]["properties"]
        kinds.append(properties["kind"]["const"])
    # MATES influence families are generated from the `mates` section, never configured.
    assert MATES_FAMILY_KIND not in kinds
    assert sorted([*kinds, MATES_FAMILY_KIND]) == sorted(FAMILIES)


def test_rater_names_are_the_raters_that_exist():
    annotate_raters = schema("annotate.schema.yaml")["$defs"]["rater"]["properties"]["rater"]
    assert sorted(annotate_raters["enum"]) == sorted(RATERS)
    rater_entries = set(schema("raters.schema.yaml")["properties"]) - {"defaults"}
    assert rater_entries == set(RATERS)
