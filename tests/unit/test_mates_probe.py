"""Oracle influence probes: units, reference rows, sampling without earlier stages, and the sign
of the influence of planted damage on a model that knows the reference's language."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
import torch

from selectlab.mates import probe as probing
from selectlab.mates.units import earlier_ids, id_hashes, is_excluded, unit_texts


def test_a_unit_becomes_padded_rows_and_padding_is_never_trained_on():
    ids, labels = probing.unit_rows(np.arange(10, 20), seq_len=4, pad_id=0)
    assert ids.tolist() == [[10, 11, 12, 13], [14, 15, 16, 17], [18, 19, 0, 0]]
    assert labels.tolist()[2] == [18, 19, probing.IGNORE, probing.IGNORE]
    ids, labels = probing.unit_rows(np.arange(9), seq_len=4, pad_id=0)
    assert len(ids) == 2  # the third row would hold one token: nothing to predict
    with pytest.raises(ValueError, match="two tokens"):
        probing.unit_rows(np.arange(1), seq_len=4, pad_id=0)


def test_reference_rows_mix_documents_in_a_seeded_order_up_to_the_cap(tiny_tokenizer_dir):
    from selectlab.tokens import load_tokenizer

    tokenizer = load_tokenizer(tiny_tokenizer_dir)
    texts = [f"alpha {i} " * 20 for i in range(10)] + ["omega " * 20] * 10
    first = probing.reference_windows(texts, tokenizer, 16, 64, seed=1)
    assert first.shape == (4, 16)
    assert torch.equal(first, probing.reference_windows(texts, tokenizer, 16, 64, seed=1))
    # The cap keeps the first tokens of the shuffled stream, not the first documents stored.
    streams = {tuple(probing.reference_windows(texts, tokenizer, 16, 64, seed=s)[0].tolist())
               for s in range(6)}
    assert len(streams) > 1
    assert probing.reference_windows(["a b"], tokenizer, 16, 64, seed=0).shape[0] == 1


def write_meta(path, ids, n_tokens):
    offsets = np.concatenate([[0], np.cumsum(n_tokens)[:-1]])
    pd.DataFrame({"id": ids, "set_name": "RedPajamaWikipedia", "n_tokens": n_tokens,
                  "token_offset": offsets}).to_parquet(path)


def test_probe_units_skip_earlier_stages_and_parts_cover_the_sample_once(tmp_path):
    metas = []
    for shard in range(3):
        ids = [f"s{shard}-{i}" for i in range(40)]
        metas.append(tmp_path / f"shard_{shard:05d}.parquet")
        write_meta(metas[-1], ids, np.full(40, 5))
    earlier = tmp_path / "earlier.parquet"
    trained = [f"s{shard}-{i}" for shard in range(3) for i in range(0, 40, 2)]
    pd.DataFrame({"id": trained}).to_parquet(earlier)
    excluded = earlier_ids([earlier])
    sample = probing.sample_units(metas, 30, seed=7, excluded=excluded)
    assert len(sample) == 30 and not sample["id"].isin(trained).any()
    assert sample.equals(probing.sample_units(metas, 30, seed=7, excluded=excluded))
    parts = [probing.part_of(sample, p, 4) for p in range(4)]
    assert sorted(pd.concat(parts)["id"]) == sorted(sample["id"])
    assert (sample["row"] == sample["id"].str.split("-").str[1].astype(int)).all()
    with pytest.raises(ValueError, match="left to probe"):
        probing.sample_units(metas, 61, seed=7, excluded=excluded)


def test_ids_are_excluded_by_hash_and_units_are_decoded_prefixes(tiny_tokenizer_dir):
    from selectlab.tokens import encode_texts, load_tokenizer

    excluded = np.unique(id_hashes(["a", "c"]))
    assert is_excluded(["a", "b", "c"], excluded).tolist() == [True, False, True]
    assert not is_excluded(["a"], np.zeros(0, np.uint64)).any()
    tokenizer = load_tokenizer(tiny_tokenizer_dir)
    text = "the quick brown fox jumps over a lazy dog " * 10
    (unit,) = unit_texts(tokenizer, [text], 7)
    assert encode_texts(tokenizer, [unit])[0] == encode_texts(tokenizer, [text])[0][:7]


def train_language_model(tokenizer, texts, steps=100):
    """A small Llama that has learned the fixture's language, and its optimizer (the
    pretraining recipe's AdamW groups)."""
    from transformers import LlamaForCausalLM

    from selectlab.tokens import encode_texts
    from selectlab.train.loop import TrainSettings, make_optimizer
    from selectlab.train.model import ModelPreset, llama_config

    torch.manual_seed(0)
    preset = ModelPreset(hidden_size=48, num_layers=2, num_heads=4)
    model = LlamaForCausalLM(llama_config(preset, len(tokenizer), 32, tokenizer.eos_token_id,
                                          tokenizer.pad_token_id))
    stream = np.concatenate([ids + [tokenizer.eos_token_id]
                             for ids in encode_texts(tokenizer, texts)])
    rows = torch.as_tensor(stream[:len(stream) // 32 * 32].reshape(-1, 32))
    optimizer = make_optimizer(model, TrainSettings(seq_len=32, global_batch_sequences=8,
                                                    lr=1e-2))
    generator = torch.Generator().manual_seed(0)
    for _ in range(steps):
        batch = rows[torch.randint(len(rows), (8,), generator=generator)]
        model(input_ids=batch, labels=batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return model, optimizer


def test_planted_damage_gets_lower_oracle_influence_than_the_clean_unit(tiny_tokenizer_dir,
                                                                       sample_texts):
    """On a model that has learned the reference's language (the MATES setting: probing a
    trained model), one step on a unit with planted OCR-style damage helps the clean reference
    less than one step on the same unit undamaged."""
    from selectlab.corpus.corrupt import CorruptionContext, corrupt
    from selectlab.tokens import encode_texts, load_tokenizer

    tokenizer = load_tokenizer(tiny_tokenizer_dir)
    model, optimizer = train_language_model(tokenizer, sample_texts[:80])
    reference = probing.reference_windows(sample_texts[80:100], tokenizer, 32, 512, seed=0)
    prober = probing.Prober(model, reference, probing.Step(3e-3, 0.9, 0.95, 0.1, 1.0), "fp32",
                            "cpu", optimizer_state=optimizer.state_dict())
    clean, damaged = [], []
    for number, text in enumerate(sample_texts[100:120]):
        noisy = corrupt(text, "ocr_noise", 0.8, random.Random(number), CorruptionContext())
        for unit, out in ((text, clean), (noisy, damaged)):
            ids = np.asarray(encode_texts(tokenizer, [unit])[0][:64])
            out.append(prober.influence(*probing.unit_rows(ids, 32, tokenizer.pad_token_id))[0])
    clean, damaged = np.array(clean), np.array(damaged)
    assert clean.mean() > damaged.mean()
    assert (clean > damaged).mean() >= 0.7  # 0.85 when written
    # Every probe starts from the same state: probing a unit again gives the same influence.
    ids = np.asarray(encode_texts(tokenizer, [sample_texts[100]])[0][:64])
    again = prober.influence(*probing.unit_rows(ids, 32, tokenizer.pad_token_id))[0]
    assert again == pytest.approx(clean[0], abs=1e-6)
