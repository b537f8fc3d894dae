"""`selectlab config show --variants`: every variant a config trains, resolved, and the recorded
resolution of config/paper.yaml and config/config.yaml that a rewrite of either must keep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selectlab.cli import main
from selectlab.config import load_workflow_config
from selectlab.variant_table import records_jsonl, records_table, variant_records
from tests.conftest import REPO

DATA = Path(__file__).parent / "data"
SCHEMA_DIR = REPO / "config" / "schema"


@pytest.mark.parametrize("name", ["paper", "config"])
def test_the_configs_resolve_to_the_recorded_variants_byte_for_byte(name):
    # Recorded from the configs as they stood before they were shortened (paper.yaml at 751
    # lines: 99 variants); a rewrite that changes any row's pool, selection or training shows
    # here as the one line that differs.
    config = load_workflow_config([REPO / "config" / f"{name}.yaml"], SCHEMA_DIR)
    recorded = (DATA / f"variants_resolved_{name}.jsonl").read_text().splitlines()
    shown = records_jsonl(variant_records(config)).splitlines()
    assert [json.loads(line)["name"] for line in shown] == [
        json.loads(line)["name"] for line in recorded]
    for now, then in zip(shown, recorded, strict=True):
        assert now == then
    if name == "paper":
        assert len(shown) == 99


def test_a_record_holds_pool_selection_training_and_seed_count():
    config = load_workflow_config([REPO / "config" / "config.yaml"], SCHEMA_DIR)
    records = {r["name"]: r for r in variant_records(config)}
    l5 = records["overall_l5"]
    assert l5["pool"] == "full" and l5["replicates"] == 3
    assert l5["selection"]["method"] == "score_level"
    assert l5["selection"]["params"]["level"] == 5
    assert l5["selection"]["budget_tokens"] == config["selection"]["budget_tokens"]
    assert l5["pretrain"]["preset_name"] == config["pretrain"]["preset"]
    plus50 = records["uniform_plus50"]["selection"]["budget_tokens"]
    assert plus50 == round(1.5 * config["selection"]["budget_tokens"])
    # Each variant selects with its own seed, and every variant's model starts from the same one.
    assert len({r["selection"]["seed"] for r in records.values()}) == len(records)
    assert len({r["pretrain"]["settings"]["seed"] for r in records.values()}) == 1


def test_the_command_prints_the_table_or_the_records(capsys):
    argv = ["config", "show", "--variants", "--configfile", str(REPO / "config" / "config.yaml")]
    assert main(argv) == 0
    table = capsys.readouterr().out
    lines = table.splitlines()
    assert lines[0].split()[:4] == ["variant", "family", "method", "pool"]
    assert lines[-1] == "(20 variants)"
    assert any(line.startswith("overall_l5 ") and " score_level " in line for line in lines)
    assert main(argv + ["--format", "jsonl"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["name"] for r in records] == sorted(r["name"] for r in records)
    assert records_table(records) == table
