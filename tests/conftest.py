"""Shared fixtures: small shard files and a tiny trained tokenizer."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import zstandard

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SOURCES = ["RedPajamaWikipedia", "RedPajamaBook", "RedPajamaGithub"]


def workflow_rule_names() -> set[str]:
    """The rules the workflow declares, with the forms of each per-shard rule (named in a loop
    over selectlab.shard_jobs.job_kinds; annotation's batch rules end in their batch size)."""
    text = "\n".join(path.read_text() for path in (REPO / "rules").glob("*.smk"))
    forms = re.findall(r'\bjob_kinds\(\s*config, \("(\w+)", "(\w+)"\)', text)
    sized = re.findall(r'family_job_kinds\(\s*config,\s*[^,]+,\s*\("(\w+)", "(\w+)"\)', text)
    return (set(re.findall(r"^\s*(?:local)?rule (\w+):", text, re.MULTILINE))
            | {name for pair in forms for name in pair}
            | {name for alone, batch in sized for name in (alone, f"{batch}10", f"{batch}100")})


def record(doc_id: str, text: str, set_name: str = "RedPajamaWikipedia") -> dict:
    return {"id": doc_id, "text": text, "meta": {"redpajama_set_name": set_name}}


def write_jsonl_zst(path: Path, lines: list[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, zstandard.ZstdCompressor().stream_writer(raw) as out:
        for line in lines:
            out.write(line + b"\n")
    return path


def encode(records: list[dict]) -> list[bytes]:
    return [json.dumps(r).encode() for r in records]


@pytest.fixture
def sample_texts() -> list[str]:
    words = ("the quick brown fox jumps over a lazy dog while seven wizards quietly "
             "judge boxing matches and vexed daft zebras hop").split()
    texts = []
    for i in range(120):
        n = 20 + (i * 7) % 60
        texts.append(" ".join(words[(i + j * 3) % len(words)] for j in range(n)) + ".")
    return texts


@pytest.fixture
def tiny_tokenizer_dir(tmp_path_factory, sample_texts) -> Path:
    from selectlab.tokens import train_bpe_tokenizer

    out = tmp_path_factory.mktemp("tokenizer")
    train_bpe_tokenizer(sample_texts, 400, out)
    return out


def save_random_llama(directory: Path, tokenizer, hidden_size: int, layers: int) -> str:
    """A randomly initialised Llama for `tokenizer`, saved with it to `directory` (no download)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden_size,
                         intermediate_size=2 * hidden_size, num_hidden_layers=layers,
                         num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=8192, eos_token_id=tokenizer.eos_token_id,
                         bos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    LlamaForCausalLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return str(directory)
