"""SlimPajama held-out splits: whole documents in sorted file order up to a per-split token
budget counted with the run's tokenizer (QuRating/DataMan: 500M tokens per split)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import REPO, encode, write_jsonl_zst

from selectlab.cli import main
from selectlab.config import load_config
from selectlab.corpus.resolve import heldout_params
from selectlab.corpus.slimpajama import write_heldout
from selectlab.cost.sizes import Sizes
from selectlab.evaluate.sizing import perplexity_tokens
from selectlab.shards import read_all
from selectlab.tokens import load_tokenizer

PATTERN = "chunk*/example_*.jsonl.zst"
SOURCES = ("RedPajamaCommonCrawl", "RedPajamaGithub", "RedPajamaBook")
# Written in this order, read in sorted path order (chunk1/..._0, chunk1/..._1, chunk2/..._0).
FILES = ("chunk2/example_holdout_0.jsonl.zst", "chunk1/example_holdout_1.jsonl.zst",
         "chunk1/example_holdout_0.jsonl.zst")
SORTED = sorted(FILES)


def fake_split(directory: Path, words: list[str], order: tuple[str, ...] = FILES) -> None:
    """Three SlimPajama-style files of 12 records each, without ids (as SlimPajama ships them),
    created in `order`; CommonCrawl is most of the split, as it is of SlimPajama."""
    rng = random.Random(5)
    records = {path: [{"text": " ".join(rng.choice(words) for _ in range(rng.randint(5, 80))),
                       "meta": {"redpajama_set_name": rng.choice(SOURCES[:1] * 4 + SOURCES)}}
                      for _ in range(12)] for path in FILES}
    for path in order:
        write_jsonl_zst(directory / path, encode(records[path]))


@pytest.fixture
def split(tmp_path, sample_texts) -> Path:
    directory = tmp_path / "validation"
    fake_split(directory, " ".join(sample_texts).split())
    return directory


def params(directory: Path, budget: int) -> dict:
    return {"directory": str(directory), "pattern": PATTERN, "tokens_per_split": budget,
            "max_doc_chars": 1_000_000, "on_damaged_file": "stop"}


def split_in_file_order(directory: Path, tokenizer_dir: Path) -> tuple[list, list[int]]:
    """Every document of the split in sorted file order, with its token count, read here
    independently of the code under test."""
    docs, _ = read_all([directory / path for path in SORTED], id_root=directory)
    tokenizer = load_tokenizer(tokenizer_dir)
    counts = [len(tokenizer(doc.text, add_special_tokens=False)["input_ids"]) for doc in docs]
    return docs, counts


def test_the_budget_is_reached_within_one_document(tmp_path, split, tiny_tokenizer_dir):
    docs, counts = split_in_file_order(split, tiny_tokenizer_dir)
    budget = sum(counts) // 2
    out = tmp_path / "heldout" / "validation.jsonl.zst"
    result = write_heldout(params(split, budget), tiny_tokenizer_dir, out)
    kept, _ = read_all([out])
    kept_counts = counts[:len(kept)]
    # A prefix of the split in sorted file order, whole documents only.
    assert [d.id for d in kept] == [d.id for d in docs[:len(kept)]]
    assert kept[0].id == "chunk1/example_holdout_0.jsonl.zst:1"
    assert [d.text for d in kept] == [d.text for d in docs[:len(kept)]]
    # Reaches the budget; past it by less than the last document kept.
    assert sum(kept_counts) >= budget > sum(kept_counts[:-1])
    record = result["kept"]
    assert record["total_tokens"] == sum(kept_counts) and not record["whole_split"]
    assert record["tokens_per_split"] == budget and record["total_documents"] == len(kept)
    # The record counts per source what the file holds: no per-source quota.
    for source in SOURCES:
        mine = [n for d, n in zip(kept, kept_counts, strict=True) if d.set_name == source]
        assert record["documents"].get(source, 0) == len(mine)
        assert record["tokens"].get(source, 0) == sum(mine)


def test_a_budget_met_exactly_stops_at_that_document(tmp_path, split, tiny_tokenizer_dir):
    _, counts = split_in_file_order(split, tiny_tokenizer_dir)
    budget = sum(counts[:7])
    out = tmp_path / "validation.jsonl.zst"
    result = write_heldout(params(split, budget), tiny_tokenizer_dir, out)
    assert len(read_all([out])[0]) == 7 and result["kept"]["total_tokens"] == budget


def test_the_split_is_the_same_however_its_files_were_written(tmp_path, sample_texts,
                                                              tiny_tokenizer_dir):
    words = " ".join(sample_texts).split()
    first, second = tmp_path / "a", tmp_path / "b"
    fake_split(first, words)
    fake_split(second, words, order=tuple(reversed(FILES)))
    outs = [tmp_path / "a.jsonl.zst", tmp_path / "b.jsonl.zst"]
    for directory, out in zip((first, second), outs, strict=True):
        write_heldout(params(directory, 600), tiny_tokenizer_dir, out)
    assert outs[0].read_bytes() == outs[1].read_bytes()


def test_a_budget_larger_than_the_split_keeps_all_of_it(tmp_path, split, tiny_tokenizer_dir,
                                                        capsys):
    docs, counts = split_in_file_order(split, tiny_tokenizer_dir)
    out = tmp_path / "test.jsonl.zst"
    args = ["corpus", "heldout", "--params", json.dumps(params(split, 10 * sum(counts))),
            "--tokenizer", str(tiny_tokenizer_dir), "--out", str(out)]
    assert main(args) == 0
    record = json.loads(capsys.readouterr().out)["kept"]  # the job's log
    assert [d.id for d in read_all([out])[0]] == [d.id for d in docs]
    assert record["whole_split"] and record["total_tokens"] == sum(counts)
    assert record["total_documents"] == len(docs) == 3 * 12


def test_the_paper_config_keeps_500m_tokens_per_split():
    paper = load_config(REPO / "config" / "paper.yaml")
    for split_name in ("validation", "test"):
        assert heldout_params(paper, split_name)["tokens_per_split"] == 500_000_000
    # Evaluation sizing and the cost plan score both splits' budgets, every source together.
    assert perplexity_tokens(paper) == 2 * 500_000_000
    assert Sizes(paper).heldout_tokens() == 2 * 500_000_000
