"""Multi-node FSDP pretraining on CPU: two `torchrun` launches on 127.0.0.1 as two nodes (gloo),
sharded checkpoints, and resuming that run on one process and on four.

The two-node run is the uninterrupted reference. Its checkpoint at step 3 is copied into two
fresh checkpoint directories and training resumes from it on one process and on four
(`torchrun --standalone`): steps 4..8 must follow the reference's loss curve and end in the same
averaged model, within float tolerance (reductions over 1, 2 or 4 processes add in different
orders).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from safetensors.torch import load_file

from selectlab.tokens import encode_texts, load_tokenizer
from selectlab.train import checkpoints
from selectlab.train.loop import LaunchSettings, TrainSettings
from selectlab.train.model import ModelPreset

pytestmark = pytest.mark.slow

SEQ_LEN, STEPS, RESUME_AT = 32, 8, 3
PRESET = ModelPreset(hidden_size=32, num_layers=2, num_heads=2, tie_embeddings=True)
SETTINGS = TrainSettings(seq_len=SEQ_LEN, global_batch_sequences=8, lr=1e-2, dtype="fp32",
                         checkpoint_every=RESUME_AT, average_last=3, seed=5)
LAUNCH = LaunchSettings(micro_batch_sequences=1, fsdp=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from selectlab.tokens import train_bpe_tokenizer

    root = tmp_path_factory.mktemp("multinode")
    words = "a quick brown fox jumps over the lazy dog near seven calm blue rivers".split()
    texts = [" ".join(words[(i * 5 + j) % len(words)] for j in range(40 + i % 30))
             for i in range(200)]
    train_bpe_tokenizer(texts, 300, root / "tokenizer")
    tokenizer = load_tokenizer(root / "tokenizer")
    ids = [t for doc in encode_texts(tokenizer, texts) for t in [*doc, tokenizer.eos_token_id]]
    rows = STEPS * SETTINGS.global_batch_sequences
    assert len(ids) >= rows * SEQ_LEN
    np.save(root / "train.npy", np.asarray(ids[:rows * SEQ_LEN], np.uint16).reshape(rows, -1))
    return root


def command(root: Path, out: Path, gpus: int, nodes: int) -> list[str]:
    params = {"preset": asdict(PRESET), "settings": asdict(SETTINGS)}
    return [sys.executable, "-m", "selectlab.cli", "pretrain", "--data", str(root / "train.npy"),
            "--tokenizer", str(root / "tokenizer"), "--params", json.dumps(params),
            "--launch", json.dumps(asdict(LAUNCH)), "--gpus", str(gpus), "--nodes", str(nodes),
            "--out-dir", str(out / "final"), "--checkpoint-dir", str(out / "checkpoints"),
            "--log-csv", str(out / "train_log.csv")]


def environment(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}}
    # The venv's torchrun must be on PATH for the relaunch.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    return env | {"OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"} | extra


def check(process: subprocess.Popen) -> str:
    output = process.communicate(timeout=600)[0].decode()
    assert process.returncode == 0, output[-5000:]
    return output


@pytest.fixture(scope="module")
def two_nodes(inputs):
    """The uninterrupted reference: one launch per node, meeting at 127.0.0.1."""
    out = inputs / "two_nodes"
    env = environment(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                      SLURM_JOB_ID="two-node-test")
    launches = [subprocess.Popen(command(inputs, out, gpus=0, nodes=2), env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                for _node in range(2)]
    for launch in launches:
        check(launch)
    return out


def resume_from_step(inputs, two_nodes, name: str, gpus: int) -> Path:
    out = inputs / name
    source = checkpoints.checkpoint_path(two_nodes / "checkpoints", RESUME_AT)
    shutil.copytree(source, checkpoints.checkpoint_path(out / "checkpoints", RESUME_AT))
    output = check(subprocess.Popen(command(inputs, out, gpus=gpus, nodes=1), env=environment(),
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    assert f"resumed from step {RESUME_AT} of {STEPS}" in output
    return out


def test_the_two_node_run_saved_one_shard_per_rank(two_nodes):
    path = checkpoints.checkpoint_path(two_nodes / "checkpoints", RESUME_AT)
    meta = checkpoints.read_meta(path)
    assert meta["world_size"] == 2 and meta["step"] == RESUME_AT
    assert sorted(p.name for p in path.glob("*.distcp")) == ["__0_0.distcp", "__1_0.distcp"]
    log = pd.read_csv(two_nodes / "train_log.csv")
    assert log["step"].tolist() == list(range(1, STEPS + 1))


@pytest.mark.parametrize("name,gpus", [("one_process", 0), ("four_processes", 4)])
def test_resuming_on_another_world_size_continues_the_same_curve(inputs, two_nodes, name, gpus):
    resumed = resume_from_step(inputs, two_nodes, name, gpus)
    reference = pd.read_csv(two_nodes / "train_log.csv")
    log = pd.read_csv(resumed / "train_log.csv")
    assert log["step"].tolist() == reference["step"].tolist()
    # Steps 1..3 come from the checkpoint; 4..8 were trained again on another world size.
    assert np.allclose(log["loss"], reference["loss"], rtol=1e-4, atol=1e-5)
    assert (log["loss"].iloc[RESUME_AT:] < log["loss"].iloc[0]).all()
    ours = load_file(resumed / "final" / "model.safetensors")
    theirs = load_file(two_nodes / "final" / "model.safetensors")
    assert ours.keys() == theirs.keys()
    for key in ours:
        assert np.allclose(ours[key].numpy(), theirs[key].numpy(), rtol=1e-3, atol=1e-4), key
    card = json.loads((resumed / "final" / "training_card.json").read_text())
    # The regular checkpoints every 3 steps (selectlab.train.averaging): step 8 is not one.
    assert card["averaged_checkpoint_steps"] == [3, 6]
