"""Annotation config resolution, the family registry and the throughput table."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest
from conftest import REPO

from selectlab.annotate import resolve
from selectlab.annotate.registry import FAMILIES, build_annotator
from selectlab.annotate.throughput import throughput_table, to_markdown, write_throughput
from selectlab.config import load_config

RUN = "results/x"


@pytest.fixture(params=["config/config.yaml", ".test/config.yaml"])
def config(request) -> dict:
    return load_config(REPO / request.param)


@pytest.fixture
def default_config() -> dict:
    """The embedded default: every offline family, the reference LM and the embedding too (the
    tests-only config leaves those two out: no row of it reads them)."""
    return load_config(REPO / "config/config.yaml")


def test_both_configs_annotate_with_every_offline_family(config):
    everything = ["signals", "dsir", "refppl", "embedding", "qurater", "dataman", "prrc",
                  "fineweb_edu", "wanjuan"]
    read = [name for name in everything if name not in ("refppl", "embedding")]
    assert resolve.family_names(config) == (everything if "refppl" in
                                            config["annotate"]["families"] else read)
    assert list(config["annotate"]["families"]["dsir"]["targets"]) == ["wikipedia", "book",
                                                                     "math"]
    assert resolve.needs_reference_lm(config) == ("refppl" in config["annotate"]["families"])
    for name in resolve.family_names(config):
        assert resolve.resources(config, name)["gpu"] == 0


def test_family_params_leave_out_resources_and_name_their_fitted_inputs(default_config):
    config = default_config
    refppl = resolve.resolve_family(config, "refppl")
    assert refppl["kind"] == "refppl" and "resources" not in refppl
    assert resolve.fitted_inputs(config, RUN, "dsir") == [f"{RUN}/raters/dsir/model.npz"]
    assert resolve.fitted_inputs(config, RUN, "refppl") == [f"{RUN}/raters/reference_lm"]
    assert resolve.fitted_inputs(config, RUN, "signals") == []
    assert resolve.container_key(config, "signals") == "cpu"
    assert resolve.container_key(config, "embedding") == "train"
    assert resolve.uses_model(config, "refppl") and not resolve.uses_model(config, "dsir")


def test_a_local_reference_model_needs_no_conversion_and_may_use_a_gpu(default_config):
    changed = copy.deepcopy(default_config)
    changed["annotate"]["families"]["refppl"] |= {"model": "/models/llama-2-7b",
                                                  "resources": {"gpu": 1, "mem_mb": 64000}}
    assert not resolve.needs_reference_lm(changed)
    assert resolve.fitted_inputs(changed, RUN, "refppl") == []
    assert resolve.resources(changed, "refppl") == {"gpu": 1, "cpus": 2, "mem_mb": 64000,
                                                    "runtime": 240, "nodes": 1}
    params = resolve.resolve_family(changed, "refppl") | resolve.resolve_throughput(
        changed, "refppl")  # what `selectlab annotate run` merges
    annotator = build_annotator(params, [], gpus=1)
    assert annotator.model_dir == "/models/llama-2-7b" and annotator.gpus == 1


def test_fit_dsir_settings_and_raw_shards(config):
    fit = resolve.resolve_fit_dsir(config, "dsir")
    assert fit["buckets"] == 10_000 and fit["seed"] == config["seed"]
    assert resolve.dsir_uses_pool_split(config, "dsir")
    assert resolve.dsir_target_split_inputs(config, RUN, "dsir") == [
        f"{RUN}/corpus/dsir_target.jsonl.zst"]
    assert resolve.dsir_target_files(config, "dsir") == []
    shards = [f"shard_{i:05d}" for i in range(8)]
    assert resolve.dsir_raw_shards(config, "dsir", shards) == shards
    limited = copy.deepcopy(config)
    limited["annotate"]["families"]["dsir"]["raw_sample_shards"] = 3
    chosen = resolve.dsir_raw_shards(limited, "dsir", shards)
    assert len(chosen) == 3 and chosen == sorted(chosen)


def test_unknown_families_and_kinds_are_clear_errors(config):
    with pytest.raises(ValueError, match="no annotation family 'mates'"):
        resolve.resolve_family(config, "mates")
    with pytest.raises(ValueError, match="unknown annotation family kind 'bogus'"):
        build_annotator({"kind": "bogus"}, [])
    assert set(FAMILIES) >= {"signals", "dsir", "refppl", "embedding"}


def stats_row(family: str, shard: str, documents: int, seconds: float, tokens: int,
              device_gb: float | None = None) -> dict:
    return {"family": family, "kind": family, "shard": shard, "model": "m", "device": "cpu",
            "documents": documents, "input_tokens": tokens, "token_unit": "model",
            "output_tokens": 0, "setup_seconds": 1.0, "seconds": seconds,
            "peak_rss_gb": 0.5 + documents / 1000, "peak_device_gb": device_gb,
            "read_report": {}}


def test_throughput_aggregates_shards_per_family_in_table_10_shape(tmp_path):
    rows = [stats_row("refppl", "s0", 100, 10.0, 6400), stats_row("refppl", "s1", 300, 10.0,
                                                                  19200),
            stats_row("signals", "s0", 100, 0.5, 30000)]
    table = throughput_table(pd.DataFrame(rows))
    refppl = table.set_index("family").loc["refppl"]
    assert refppl["docs_per_s"] == 20.0 and refppl["input_tokens_per_s"] == 1280.0
    assert refppl["output_tokens_per_s"] == 0.0 and refppl["shards"] == 2
    assert refppl["memory_gb"] == 0.8 and refppl["memory_kind"] == "rss"
    assert list(table["family"]) == ["refppl", "signals"]
    markdown = to_markdown(table)
    assert ("| Rater | Model | Device | Input Speed (Tok/s) | Output Speed (Tok/s) | "
            "Processing Speed (Docs/s) | Memory (G) |") in markdown
    paths = []
    for i, row in enumerate(rows):
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_text(json.dumps(row))
    written = write_throughput(paths, tmp_path / "t.csv", tmp_path / "t.md")
    assert pd.read_csv(tmp_path / "t.csv")["documents"].tolist() == written["documents"].tolist()


def test_gpu_memory_is_reported_when_a_family_used_a_gpu():
    table = throughput_table(pd.DataFrame([stats_row("embedding", "s0", 10, 1.0, 100, 3.25)]))
    assert table.loc[0, "memory_gb"] == 3.25 and table.loc[0, "memory_kind"] == "device"


def test_dsir_never_fits_on_the_evaluation_splits(config):
    """The targets read the corpus's DSIR target split (disjoint from validation and test:
    tests/unit/test_corpus_build.py), never a held-out file; the full-scale config names the
    papers' target sets and no split at all."""
    assert config["corpus"]["embedded"]["dsir_target_docs_per_source"]
    assert not any("heldout" in path
                   for path in resolve.dsir_target_split_inputs(config, RUN, "dsir"))
    paper = load_config(REPO / "config" / "paper.yaml")
    assert not resolve.dsir_uses_pool_split(paper, "dsir")
    assert resolve.dsir_target_split_inputs(paper, RUN, "dsir") == []
    assert not any(spec.startswith(("heldout:", "pool:"))
                   for spec in paper["annotate"]["families"]["dsir"]["targets"].values())
    swapped = copy.deepcopy(config)
    swapped["annotate"]["families"]["dsir"]["targets"]["wikipedia"] = "heldout:RedPajamaWikipedia"
    with pytest.raises(ValueError, match="held-out splits"):
        resolve.dsir_target_split_inputs(swapped, RUN, "dsir")
    on_slimpajama = copy.deepcopy(config)
    on_slimpajama["corpus"]["mode"] = "slimpajama"
    with pytest.raises(ValueError, match="pool: targets read the embedded corpus"):
        resolve.resolve_fit_dsir(on_slimpajama, "dsir")
