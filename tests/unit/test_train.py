"""The training loop: loss falls, the schedule is right, a killed run resumes to the same model."""

from __future__ import annotations

import math
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
from safetensors.torch import load_file

from selectlab.tokens import encode_texts, load_tokenizer
from selectlab.train.loop import TrainSettings, learning_rate, pretrain
from selectlab.train.model import ModelPreset

PRESET = ModelPreset(hidden_size=32, num_layers=1, num_heads=2, tie_embeddings=True)


def settings(**overrides) -> TrainSettings:
    base = dict(seq_len=32, global_batch_sequences=8, micro_batch_sequences=4, lr=1e-2,
                checkpoint_every=5, average_last=3, dtype="fp32", seed=3)
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
    # Long enough (hundreds of steps) that the test can kill the run while it is training.
    return pack_texts(tmp_path / "long.npy", tiny_tokenizer_dir, sample_texts * 20)


def test_schedule_warms_up_then_decays_to_floor():
    s = settings(lr=1.0, warmup_fraction=0.1, min_lr_ratio=0.1)
    lrs = [learning_rate(step, 100, s) for step in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:], strict=False))
    assert lrs[-1] == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 89 / 90)))


def test_loss_falls_and_final_model_is_average_of_last_checkpoints(tmp_path, packed,
                                                                   tiny_tokenizer_dir):
    card = pretrain(packed, tiny_tokenizer_dir, PRESET, settings(), tmp_path / "final",
                    tmp_path / "ckpt", tmp_path / "log.csv")
    log = pd.read_csv(tmp_path / "log.csv")
    assert len(log) == card["steps"] == np.load(packed, mmap_mode="r").shape[0] // 8
    assert log["loss"].tail(5).mean() < log["loss"].head(3).mean() - 1.0
    assert card["averaged_checkpoint_steps"][-1] == card["steps"]
    assert len(card["averaged_checkpoint_steps"]) == 3
    assert (tmp_path / "final" / "tokenizer.json").exists()


def run_training_process(out, packed, tokenizer_dir) -> subprocess.Popen:
    code = (
        "import sys; from selectlab.train.loop import pretrain, TrainSettings;"
        "from selectlab.train.model import ModelPreset;"
        f"s = TrainSettings(seq_len=32, global_batch_sequences=8, micro_batch_sequences=4,"
        f" lr=1e-2, checkpoint_every=2, average_last=3, dtype='fp32', seed=3);"
        f"pretrain({str(packed)!r}, {str(tokenizer_dir)!r}, ModelPreset(32, 1, 2,"
        f" tie_embeddings=True), s, {str(out / 'final')!r}, {str(out / 'ckpt')!r},"
        f" {str(out / 'log.csv')!r})"
    )
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


def test_killed_run_resumes_to_the_same_weights(tmp_path, long_packed, tiny_tokenizer_dir):
    packed = long_packed
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    assert run_training_process(straight, packed, tiny_tokenizer_dir).wait() == 0

    process = run_training_process(killed, packed, tiny_tokenizer_dir)
    while not list((killed / "ckpt").glob("step_*.pt")):
        assert process.poll() is None, process.stdout.read().decode()
        time.sleep(0.01)
    process.kill()
    process.wait()
    assert not (killed / "final").exists()
    resumed = run_training_process(killed, packed, tiny_tokenizer_dir)
    output = resumed.communicate()[0].decode()
    assert resumed.returncode == 0, output
    assert "resumed from step" in output

    a = load_file(straight / "final" / "model.safetensors")
    b = load_file(killed / "final" / "model.safetensors")
    assert a.keys() == b.keys()
    for key in a:
        assert np.allclose(a[key].numpy(), b[key].numpy(), atol=1e-6), key
    log_a, log_b = pd.read_csv(straight / "log.csv"), pd.read_csv(killed / "log.csv")
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
                    tmp_path / "final", tmp_path / "ckpt", tmp_path / "log.csv")
    (snapshot,) = card["snapshots"]
    assert snapshot["fraction"] == 0.5 and snapshot["step"] == round(card["steps"] / 2)
    half = tmp_path / "final" / "snapshots" / "f0.5"
    assert (half / "tokenizer.json").exists() and not (tmp_path / "ckpt" / "snapshots" /
                                                         "f0.5").exists()
    early, final = (load_file(d / "model.safetensors") for d in (half, tmp_path / "final"))
    assert any(not np.allclose(early[k].numpy(), final[k].numpy()) for k in final)
