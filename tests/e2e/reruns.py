"""Reruns of the tests-only run: the archive rebuilt to the same bytes, one change rerunning
only what depends on it, and last a second run from scratch that must select the same
documents and rebuild the same archive members.

Collected through tests/e2e/test_workflow.py, after every other check (they move and replace
the run's files).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pandas as pd
import yaml

from selectlab import layout
from selectlab.annotate import resolve as annotate_cfg
from selectlab.mates import plan as mates_plan
from selectlab.report import plan as report_cfg
from selectlab.report.archive import without_measurements
from tests.e2e.workflow_run import (
    CONFIG,
    manifest_checksums,
    manifest_lines,
    planned_jobs,
    read_archive,
    snakemake,
)

ZSTD_SKIPPABLE_FRAME = (0x184D2A50).to_bytes(4, "little") + (4).to_bytes(4, "little") + b"edit"

def test_archive_manifest_matches_its_files(run_dir, config):
    members = read_archive(run_dir / f"archive/selectlab-{config['run']}.tar.gz")
    manifest = dict(reversed(line.split("  ", 1)) for line in
                    members.pop("MANIFEST.sha256").decode().splitlines())
    assert set(manifest) == set(members)
    for name, data in members.items():
        assert hashlib.sha256(data).hexdigest() == manifest[name], name
    assert "tables/main.csv" in members and "report/report.html" in members
    provenance = json.loads(members["provenance/provenance.json"])
    assert provenance["config"]["run"] == config["run"]
    assert all(len(digest) == 64 for digest in provenance["inputs"].values())


def test_rebuilding_the_report_and_archive_reproduces_the_checksums(run_dir, config):
    archive = run_dir / f"archive/selectlab-{config['run']}.tar.gz"
    before = manifest_lines(archive)
    result = snakemake("--forcerun", "tables", "figures", "html_report", "provenance", "archive")
    assert result.returncode == 0, result.stderr[-3000:]
    after = manifest_lines(archive)
    assert sorted(before ^ after) == []  # names the members whose checksums moved


def test_changing_one_variant_reruns_only_what_depends_on_it(run_dir, config, tmp_path):
    assert planned_jobs(CONFIG) == {}
    changed = json.loads(json.dumps(config))
    name = "metarater_model_free"
    changed["variants"][name]["seed"] = 99
    path = tmp_path / "changed.yaml"
    path.write_text(yaml.safe_dump(changed, sort_keys=False))
    planned = planned_jobs(path)
    # The variant is a row of Meta-rater Figure 1, so its half-way snapshot is evaluated too.
    per_variant = {"select", "pack", "pretrain", "eval_perplexity", "eval_icl", "eval_curve"}
    # cost_table sums every training job's FLOPs and hours, so it follows any pretrain rerun.
    downstream = {"tables", "cost_table", "figures", "html_report", "provenance", "archive", "all",
                  "paper_tables", "vs_published", "claims", "paper_charts"}
    assert set(planned) == per_variant | downstream
    assert all(planned[rule] == 1 for rule in per_variant)


def test_a_changed_raw_shard_reruns_its_tokenisation_and_every_family_of_its_annotation(
        run_dir, config):
    # Annotation does not list the raw files as inputs (rules/annotate.smk); the shard's meta
    # sidecar stands for them, so a changed raw file must still reach every family's job.
    # Snakemake ignores a newer file whose checksum it recorded unchanged, so the change is real:
    # a zstd skippable frame appended (the file still decodes to the same documents).
    raw = sorted((run_dir / "corpus" / "raw").glob("*.jsonl.zst"))[0]
    original, stat = raw.read_bytes(), raw.stat()
    raw.write_bytes(original + ZSTD_SKIPPABLE_FRAME)
    try:
        planned = planned_jobs(CONFIG)
    finally:
        raw.write_bytes(original)
        os.utime(raw, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    # The embedded corpus trains its tokenizer on every raw shard, so both shards are
    # re-tokenised, and each re-tokenised shard is re-annotated by every family that rates its
    # documents; its pool shards are cut again and re-annotated by the families rating them.
    assert planned["tokenize_shard"] == config["corpus"]["num_shards"]
    families = annotate_cfg.family_names(config)
    full = [f for f in families if "full" in annotate_cfg.family_pools(config, f)]
    pooled = [(f, p) for f in families for p in annotate_cfg.family_pools(config, f)
              if p != "full"]
    assert planned["annotate"] == planned["tokenize_shard"] * (
        len(full) + len(mates_plan.family_names(config)))
    assert planned["cut_pool"] == planned["tokenize_shard"] * len(config["corpus"]["pools"])
    assert planned["annotate_pool"] == planned["tokenize_shard"] * len(pooled) > 0
    assert planned_jobs(CONFIG) == {}


def test_a_second_run_from_scratch_selects_the_same_documents_and_archives_the_same_bytes(
        run_dir, config):
    # Same seed, same inputs, same selections. The first run moves aside, so the second one
    # runs in the same place (paths, git state) with nothing to reuse. It stops at the
    # selections of the rows that need no trained model: uniform sampling, the QuRating row
    # (corpus, judge, rater, the pool's cut and annotation, selection) and the user's tau=2 row
    # (docs/your_method.md: its own family's annotation), plus the provenance
    # records; Meta-rater's proxies and MATES's staged models are left out to keep CI inside its
    # time. Every archive member the second run rebuilds must carry the first archive's
    # checksum, as the archive stores it (timings stripped).
    first = run_dir.parent / f".{config['run']}-first"
    shutil.rmtree(first, ignore_errors=True)
    run_dir.rename(first)
    try:
        root = layout.run_dir(config["run"])
        variants = [v for v in config["variants"] if config["variants"][v]["method"] in
                    ("uniform", "rating_sample")]
        assert {"educational_value_t2", "lexical_t2"} <= set(variants) and len(variants) == 4
        records = [layout.provenance(root), layout.read_report(root)]
        records += [layout.environment(root, env) for env in report_cfg.environments(config)]
        result = snakemake(*[layout.selection(root, variant) for variant in variants], *records)
        assert result.returncode == 0, result.stderr[-5000:]
        for variant in variants:
            ids = [pd.read_parquet(d / f"selections/{variant}/selection.parquet")["id"].tolist()
                   for d in (first, run_dir)]
            assert ids[0] == ids[1], f"the two runs selected different documents for {variant}"
        archived = manifest_checksums(first / f"archive/selectlab-{config['run']}.tar.gz")
        rebuilt = {name: hashlib.sha256(without_measurements(run_dir / name)).hexdigest()
                   for name in archived if (run_dir / name).is_file()}
        assert {f"selections/{v}/manifest.json" for v in variants} | {
            "judgments/qurating/summary.csv", "provenance/provenance.json",
            "tables/read_report.csv"} <= set(rebuilt)
        assert {n: d for n, d in rebuilt.items() if d != archived[n]} == {}
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
        first.rename(run_dir)
