"""The GPU proof script (benchmarks/gpu_proof.py) on the CPU with the tiny preset: the same code
path as on an H100 (the project's training loop, the memory estimate, the rater backbone), with
numbers that can be checked here. The GPU's own numbers are in docs/cluster.md."""

from __future__ import annotations

import importlib.util
import math

import pytest

from tests.conftest import REPO


def load_proof():
    spec = importlib.util.spec_from_file_location("gpu_proof", REPO / "benchmarks" / "gpu_proof.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_proof_trains_measures_and_annotates_with_the_tiny_preset(tmp_path):
    proof = load_proof()
    out = tmp_path / "gpu_proof.json"
    report = proof.main([
        "--config", str(REPO / "config" / "config.yaml"),
        "--throughput", str(REPO / "profiles" / "slurm" / "throughput.yaml"),
        "--train-preset", "tiny", "--memory-presets", "tiny", "--rater-preset", "tiny",
        "--vocab", "512", "--seq-len", "64", "--micro-batch", "2", "--steps", "2",
        "--warmup", "1", "--window", "64", "--doc-tokens", "100", "--rater-docs", "8",
        "--rater-batch", "4", "--out", str(out)])
    assert out.exists()
    train = report["train"]
    # A random-initialised model predicts 512 tokens about uniformly: loss near ln 512.
    assert train["loss"] == pytest.approx(math.log(512), abs=0.5)
    assert train["tokens_per_s"] > 0 and train["steps"] == 2
    assert report["card"] == "cpu" and train["mfu"] is None  # no peak FLOP/s on a CPU
    # The estimate grows by one layer's share: a decoder layer's states and saved input.
    memory = report["memory"][0]
    low, high = memory["estimated_gib_1_2_layers"]
    assert memory["estimated_gib_per_layer"] == pytest.approx(high - low) and high > low
    # 100-token documents in 64-token windows (<s> added on top): 64 + 36, two windows each.
    annotate = report["annotate"]
    assert annotate["windows"] == 2 * annotate["docs"] == 16
    assert annotate["docs_per_s"] == pytest.approx(8 / annotate["seconds"])
