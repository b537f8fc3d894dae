"""The training loop: loss falls, the schedule is right, a killed or pre-empted run resumes to
the same model, activation checkpointing changes nothing learned, and an orphaned run stops
writing once a rerun claims the variant."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest
from safetensors.torch import load_file

from selectlab.tokens import encode_texts, load_tokenizer
from selectlab.train import checkpoints
from selectlab.train.loop import LaunchSettings, TrainSettings, learning_rate, pretrain
from selectlab.train.model import ModelPreset
from selectlab.train.preemption import PREEMPTED_EXIT_CODE, PREEMPTION_SIGNAL

PRESET = ModelPreset(hidden_size=32, num_layers=1, num_heads=2, tie_embeddings=True)
LAUNCH = LaunchSettings(micro_batch_sequences=4)


def settings(**overrides) -> TrainSettings:
    base = dict(seq_len=32, global_batch_sequences=8, lr=1e-2, checkpoint_every=5,
                average_last=3, dtype="fp32", seed=3)
    return TrainSettings(**base | overrides)


def pack_texts(path, tokenizer_dir, texts):
    tokenizer = load_tokenizer(tokenizer_dir)
    ids = [t for doc in encode_texts(tokenizer, texts) for t in [*doc, tokenizer.eos_token_id]]
    rows = len(ids) // 32
    np.save(path, np.asarray(ids[: rows * 32], dtype=np.uint16).reshape(rows, 32))
    return path


@pytest.fixture
def packed(tmp_path, tiny_tokenizer_dir, sample_texts):
    return pack_texts(tmp_path / "train.npy", tiny_tokenizer_dir, sample_texts * 3)


@pytest.fixture
def long_packed(tmp_path, tiny_tokenizer_dir, sample_texts):
    # Long enough (hundreds of steps) that the test can stop the run while it is training.
    return pack_texts(tmp_path / "long.npy", tiny_tokenizer_dir, sample_texts * 8)


def test_schedule_warms_up_then_decays_to_floor():
    s = settings(lr=1.0, warmup_fraction=0.1, min_lr_ratio=0.1)
    lrs = [learning_rate(step, 100, s) for step in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:], strict=False))
    assert lrs[-1] == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 89 / 90)))


def test_loss_falls_and_final_model_is_average_of_last_checkpoints(tmp_path, packed,
                                                                   tiny_tokenizer_dir):
    card = pretrain(packed, tiny_tokenizer_dir, PRESET, settings(), LAUNCH, tmp_path / "final",
                    tmp_path / "ckpt", tmp_path / "log.csv")
    log = pd.read_csv(tmp_path / "log.csv")
    # No wall-clock column: the log is archived and must not change between identical runs.
    assert list(log.columns) == ["step", "tokens", "loss", "lr"]
    assert len(log) == card["steps"] == np.load(packed, mmap_mode="r").shape[0] // 8
    assert log["loss"].tail(5).mean() < log["loss"].head(3).mean() - 1.0
    # The last three regular checkpoints (every 5 steps), the steps after the last multiple of
    # 5 left out (DataMan's merge, selectlab.train.averaging).
    last_regular = card["steps"] - card["steps"] % 5
    assert card["averaged_checkpoint_steps"] == [last_regular - 10, last_regular - 5,
                                                 last_regular]
    assert (tmp_path / "final" / "tokenizer.json").exists()
    # Sharded checkpoints with their settings in a small JSON file beside the shards.
    newest = checkpoints.checkpoint_path(tmp_path / "ckpt", card["steps"])
    meta = json.loads((newest / "run.json").read_text())
    assert meta["kind"] == "regular" and meta["step"] == card["steps"]
    assert len(meta["log"]) == card["steps"] and (newest / ".metadata").is_file()


def test_activation_checkpointing_learns_the_same(tmp_path, packed, tiny_tokenizer_dir):
    plain = pretrain(packed, tiny_tokenizer_dir, PRESET, settings(), LAUNCH, tmp_path / "a",
                     tmp_path / "ca", tmp_path / "a.csv")
    recomputed = pretrain(packed, tiny_tokenizer_dir, PRESET, settings(),
                          LaunchSettings(micro_batch_sequences=2, activation_checkpointing=True),
                          tmp_path / "b", tmp_path / "cb", tmp_path / "b.csv")
    a, b = pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")
    assert np.allclose(a["loss"], b["loss"], rtol=1e-5, atol=1e-6)
    assert plain["final_loss"] == pytest.approx(recomputed["final_loss"], rel=1e-5)


def cli_command(out, packed, tokenizer_dir, checkpoint_every=2) -> list[str]:
    params = {"preset": asdict(PRESET),
              "settings": asdict(settings(checkpoint_every=checkpoint_every))}
    return [sys.executable, "-m", "selectlab.cli", "pretrain", "--data", str(packed),
            "--tokenizer", str(tokenizer_dir), "--params", json.dumps(params),
            "--launch", json.dumps(asdict(LAUNCH)), "--out-dir", str(out / "final"),
            "--checkpoint-dir", str(out / "ckpt"), "--log-csv", str(out / "log.csv")]


def start(out, packed, tokenizer_dir, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(cli_command(out, packed, tokenizer_dir, **kwargs),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def wait_for_checkpoint(process, directory) -> None:
    while not checkpoints.list_checkpoints(directory):
        assert process.poll() is None, process.stdout.read().decode()
        time.sleep(0.01)


def finish(process) -> str:
    output = process.communicate(timeout=600)[0].decode()
    assert process.returncode == 0, output
    return output


def assert_same_model(a_dir, b_dir) -> None:
    a = load_file(a_dir / "final" / "model.safetensors")
    b = load_file(b_dir / "final" / "model.safetensors")
    assert a.keys() == b.keys()
    for key in a:
        assert np.allclose(a[key].numpy(), b[key].numpy(), atol=1e-6), key
    log_a, log_b = pd.read_csv(a_dir / "log.csv"), pd.read_csv(b_dir / "log.csv")
    assert log_a["step"].tolist() == log_b["step"].tolist()
    assert np.allclose(log_a["loss"], log_b["loss"], atol=1e-5)


def test_snapshots_part_way_through_land_in_the_final_model(tmp_path, packed,
                                                            tiny_tokenizer_dir):
    from selectlab.train.snapshots import snapshot_steps

    assert snapshot_steps([0.25, 0.5], 10) == {2: 0.25, 5: 0.5}
    assert snapshot_steps([0.01], 10) == {1: 0.01}
    with pytest.raises(ValueError):
        snapshot_steps([1.0], 10)
    card = pretrain(packed, tiny_tokenizer_dir, PRESET, settings(snapshot_fractions=(0.5,)),
                    LAUNCH, tmp_path / "final", tmp_path / "ckpt", tmp_path / "log.csv")
    (snapshot,) = card["snapshots"]
    assert snapshot["fraction"] == 0.5 and snapshot["step"] == round(card["steps"] / 2)
    half = tmp_path / "final" / "snapshots" / "f0.5"
    assert (half / "tokenizer.json").exists() and not (tmp_path / "ckpt" / "snapshots" /
                                                         "f0.5").exists()
    early, final = (load_file(d / "model.safetensors") for d in (half, tmp_path / "final"))
    assert any(not np.allclose(early[k].numpy(), final[k].numpy()) for k in final)


@pytest.fixture
def straight(tmp_path, long_packed, tiny_tokenizer_dir):
    """An uninterrupted run of the long training."""
    out = tmp_path / "straight"
    finish(start(out, long_packed, tiny_tokenizer_dir))
    return out


def test_killed_run_resumes_to_the_same_weights(tmp_path, straight, long_packed,
                                                tiny_tokenizer_dir):
    killed = tmp_path / "killed"
    process = start(killed, long_packed, tiny_tokenizer_dir)
    wait_for_checkpoint(process, killed / "ckpt")
    process.kill()
    process.wait()
    assert not (killed / "final").exists()
    assert "resumed from step" in finish(start(killed, long_packed, tiny_tokenizer_dir))
    assert_same_model(straight, killed)


def test_preemption_signal_checkpoints_exits_and_the_rerun_finishes_the_same(
        tmp_path, long_packed, tiny_tokenizer_dir):
    out = tmp_path / "preempted"
    # checkpoint_every 1000: the only checkpoint before the end is the pre-emption one.
    process = start(out, long_packed, tiny_tokenizer_dir, checkpoint_every=1000)
    line = b""
    while b"step 11/" not in line:
        line = process.stdout.readline()
        assert line or process.poll() is None, "training ended before the signal was sent"
    process.send_signal(PREEMPTION_SIGNAL)
    output = process.communicate(timeout=120)[0].decode()
    assert process.returncode == PREEMPTED_EXIT_CODE, output
    assert "pre-empted at step" in output and not (out / "final").exists()
    [(step, path)] = checkpoints.list_checkpoints(out / "ckpt")
    # The signal lands after step 11 is printed: the loop stops at the next step boundary.
    assert checkpoints.read_meta(path)["kind"] == "preemption" and step >= 11

    resumed = finish(start(out, long_packed, tiny_tokenizer_dir, checkpoint_every=1000))
    assert f"resumed from step {step} of" in resumed
    reference = tmp_path / "reference"
    finish(start(reference, long_packed, tiny_tokenizer_dir, checkpoint_every=1000))
    assert_same_model(reference, out)
    # The pre-emption checkpoint is resumed from but not averaged into the final model.
    card = json.loads((out / "final" / "training_card.json").read_text())
    assert step not in card["averaged_checkpoint_steps"]


def test_an_orphaned_run_stops_writing_once_a_rerun_claims_the_variant(
        tmp_path, long_packed, tiny_tokenizer_dir):
    out = tmp_path / "orphan"
    process = start(out, long_packed, tiny_tokenizer_dir)
    wait_for_checkpoint(process, out / "ckpt")
    checkpoints.claim_directory(out / "ckpt")  # what a rerun of the variant does first
    claimed = {step for step, _ in checkpoints.list_checkpoints(out / "ckpt")}
    output = process.communicate(timeout=120)[0].decode()
    assert process.returncode != 0
    assert "another run of this variant started writing" in output
    # At most the save in flight when the claim landed; nothing after, and no final model.
    later = {step for step, _ in checkpoints.list_checkpoints(out / "ckpt")} - claimed
    assert len(later) <= 1 and not (out / "final").exists()


def test_final_model_leaves_another_process_temporary_alone(tmp_path, packed,
                                                            tiny_tokenizer_dir):
    other = tmp_path / ".final.tmp-otherhost-1"
    other.mkdir()
    (other / "partial").write_text("another job's half-written model")
    pretrain(packed, tiny_tokenizer_dir, PRESET, settings(), LAUNCH, tmp_path / "final",
             tmp_path / "ckpt", tmp_path / "log.csv")
    assert (other / "partial").is_file() and (tmp_path / "final" / "config.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".final.tmp-")
                and p != other]
    assert os.listdir(tmp_path / "ckpt")  # checkpoints stay for a later resume
