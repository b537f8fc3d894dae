"""Fine-tuning on instruction pairs: the template's masks, the batch order, resuming, and that a
fine-tuned model beats the same model without fine-tuning before the reference-based judge."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
from conftest import save_random_llama

from selectlab.flops import inference_flops, module_shape, training_flops
from selectlab.instruct import sft
from selectlab.instruct.data import instruction_id
from selectlab.instruct.generate import (
    GenerateSettings,
    answers_table,
    generate_transformers,
    generation_cost,
)
from selectlab.instruct.template import IGNORE, ChatTemplate, prompt_ids, training_example
from selectlab.tokens import load_tokenizer
from tests.instruct_judging import judge_tuned_against_untuned

TEMPLATE = ChatTemplate("### Instruction:\n{instruction}\n\n### Response:\n")
WORDS = ("quick brown fox jumps over lazy dog while seven wizards quietly judge boxing "
         "matches vexed daft zebras hop").split()


def pairs(words) -> pd.DataFrame:
    rows = [{"instruction": f"Tell me about the {w}.", "response": f"The {w} is a dog."}
            for w in words]
    frame = pd.DataFrame(rows)
    frame["id"] = [instruction_id(text) for text in frame["instruction"]]
    return frame


@pytest.fixture
def tokenizer(tiny_tokenizer_dir):
    return load_tokenizer(tiny_tokenizer_dir)


@pytest.fixture
def base_model(tmp_path, tokenizer) -> str:
    return save_random_llama(tmp_path / "base", tokenizer, hidden_size=32, layers=1)


def settings(**changes) -> sft.SFTSettings:
    values = {"epochs": 6, "batch_sequences": 8, "micro_batch_sequences": 4, "max_seq_len": 64,
              "lr": 1e-2, "warmup_fraction": 0.1, "dtype": "fp32", "checkpoint_every": 4,
              "seed": 5}
    return sft.SFTSettings(**(values | changes))


def test_only_the_response_and_its_eos_are_trained_on(tokenizer):
    prompt = prompt_ids(tokenizer, TEMPLATE, "Tell me about the fox.")
    ids, labels = training_example(tokenizer, TEMPLATE, "Tell me about the fox.",
                                   "The fox is quick.", 100)
    assert ids[:len(prompt)] == prompt and prompt[0] == tokenizer.eos_token_id  # no BOS: EOS
    assert labels[:len(prompt)] == [IGNORE] * len(prompt)
    assert labels[len(prompt):] == ids[len(prompt):] and ids[-1] == tokenizer.eos_token_id
    cut, cut_labels = training_example(tokenizer, TEMPLATE, "Tell me about the fox.",
                                       "The fox is quick.", len(prompt) + 2)
    assert cut == ids[:len(prompt) + 2] and cut_labels[-2:] == ids[len(prompt):len(prompt) + 2]
    with pytest.raises(ValueError, match="leaves no room"):
        training_example(tokenizer, TEMPLATE, "Tell me about the fox.", "x", len(prompt))
    with pytest.raises(ValueError, match="exactly once"):
        ChatTemplate("no placeholder")


def test_each_epoch_visits_every_example_once_in_its_own_order():
    s = settings(batch_sequences=4)
    epochs: dict[int, list[int]] = {}
    for step in range(3 * s.steps_per_epoch(13)):  # 13 examples: 3 batches, one left over
        epoch, indices = sft.batch_indices(step, 13, s)
        epochs.setdefault(epoch, []).extend(indices)
    assert sorted(epochs) == [0, 1, 2]
    assert all(len(set(seen)) == 12 for seen in epochs.values())
    assert epochs[0] != epochs[1]
    assert epochs[0] == [i for step in range(3) for i in sft.batch_indices(step, 13, s)[1]]


def test_a_killed_run_resumes_to_the_same_model(tmp_path, base_model, monkeypatch):
    train = tmp_path / "train.parquet"
    pairs(WORDS[:16]).to_parquet(train)
    whole = sft.finetune(base_model, train, TEMPLATE, settings(), tmp_path / "whole",
                         tmp_path / "ck_whole", tmp_path / "whole.csv")
    calls = {"n": 0}
    real_loss = sft.summed_loss

    def dies_in_step_six(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 10:  # two micro-batches per step: the 11th is step 6's first
            raise RuntimeError("killed")
        return real_loss(*args, **kwargs)

    monkeypatch.setattr(sft, "summed_loss", dies_in_step_six)
    with pytest.raises(RuntimeError, match="killed"):
        sft.finetune(base_model, train, TEMPLATE, settings(), tmp_path / "resumed",
                     tmp_path / "ck", tmp_path / "resumed.csv")
    monkeypatch.setattr(sft, "summed_loss", real_loss)
    resumed = sft.finetune(base_model, train, TEMPLATE, settings(), tmp_path / "resumed",
                           tmp_path / "ck", tmp_path / "resumed.csv")
    assert resumed["steps"] == whole["steps"] == 12
    log, reference = pd.read_csv(tmp_path / "resumed.csv"), pd.read_csv(tmp_path / "whole.csv")
    assert log["loss"].tolist() == pytest.approx(reference["loss"].tolist(), rel=1e-5)
    from safetensors.torch import load_file

    a = load_file(tmp_path / "whole" / "model.safetensors")
    b = load_file(tmp_path / "resumed" / "model.safetensors")
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    # The resumed run counts the FLOPs of all 12 steps, its first attempt's 5 included: 16
    # pairs in batches of 8 are every pair once per epoch, 6 epochs.
    tokenizer = load_tokenizer(base_model)
    per_epoch = sum(len(training_example(tokenizer, TEMPLATE, row.instruction, row.response,
                                         64)[0]) for row in pairs(WORDS[:16]).itertuples())
    assert whole["cost"]["tokens"] == resumed["cost"]["tokens"] == 6 * per_epoch
    assert resumed["cost"]["flops"] == whole["cost"]["flops"] > 0
    # Other settings: the old checkpoints are not resumed from.
    other = sft.finetune(base_model, train, TEMPLATE, settings(lr=5e-3), tmp_path / "other",
                         tmp_path / "ck", tmp_path / "other.csv")
    assert pd.read_csv(tmp_path / "other.csv")["loss"].iloc[-1] == other["final_loss"]
    assert other["final_loss"] != pytest.approx(whole["final_loss"])


def test_fine_tuned_model_beats_the_same_model_untuned(tmp_path, base_model):
    train, evaluation = pairs(WORDS[:14]), pairs(WORDS[14:])
    train.to_parquet(tmp_path / "train.parquet")
    card = sft.finetune(base_model, tmp_path / "train.parquet", TEMPLATE,
                        settings(epochs=15, checkpoint_every=100), tmp_path / "tuned",
                        tmp_path / "ck", tmp_path / "log.csv")
    log = pd.read_csv(tmp_path / "log.csv")
    assert card["final_loss"] < log["loss"].iloc[0] / 2
    tokenizer = load_tokenizer(tmp_path / "tuned")
    prompts = [prompt_ids(tokenizer, TEMPLATE, text) for text in evaluation["instruction"]]
    g = GenerateSettings(max_new_tokens=12, batch_size=2)
    answers = {name: answers_table(evaluation["id"], name, generate_transformers(model, prompts, g),
                                   "transformers")
               for name, model in (("tuned", str(tmp_path / "tuned")), ("untuned", base_model))}
    assert answers["tuned"]["finished"].all()  # it learnt to stop
    table, asked = judge_tuned_against_untuned(evaluation, answers, tmp_path / "cache.sqlite")
    assert asked == 2 * len(evaluation)
    assert table["value"].mean() > 0.9, answers["tuned"]["answer"].tolist()


def test_batched_greedy_answers_equal_one_at_a_time(tmp_path, base_model, tokenizer):
    prompts = [prompt_ids(tokenizer, TEMPLATE, f"Tell me about the {w} {w}.") for w in WORDS[:5]]
    prompts[2] = prompts[2] + prompts[2][1:]  # lengths differ, so batches are left-padded
    batched = generate_transformers(base_model, prompts, GenerateSettings(8, batch_size=5))
    single = generate_transformers(base_model, prompts, GenerateSettings(8, batch_size=1))
    assert batched == single
    with pytest.raises(ValueError, match="exceeds the model's context"):
        generate_transformers(base_model, prompts, GenerateSettings(9000))


def test_the_sft_card_records_training_flops_of_the_tokens_of_every_step(tmp_path, base_model,
                                                                         tokenizer):
    train = pairs(WORDS[:8])
    train.to_parquet(tmp_path / "train.parquet")
    card = sft.finetune(base_model, tmp_path / "train.parquet", TEMPLATE,
                        settings(epochs=2, batch_sequences=4, micro_batch_sequences=2),
                        tmp_path / "tuned", tmp_path / "ck", tmp_path / "log.csv")
    lengths = [len(training_example(tokenizer, TEMPLATE, row.instruction, row.response, 64)[0])
               for row in train.itertuples()]
    tokens = 2 * sum(lengths)  # 8 pairs, 2 batches of 4 per epoch: each pair once an epoch
    # By hand: hidden 32, one layer, MLP 64, untied vocab V: N = 4·32² + 3·32·64 + 2·32 (the
    # layer) + 32 (final norm) + 32·V (output projection; the input lookup is not a product).
    n = 4 * 32 * 32 + 3 * 32 * 64 + 2 * 32 + 32 + 32 * len(tokenizer)
    per_token = 2 * n + 2 * 1 * 64 * 32  # attention at n_ctx = max_seq_len 64
    cost = card["cost"]
    assert cost["kind"] == "train" and cost["tokens"] == tokens
    assert cost["flops"] == pytest.approx(3 * per_token * tokens)
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(tmp_path / "tuned")
    assert cost["flops"] == pytest.approx(training_flops(module_shape(model, 64), tokens))
    assert cost["device"] == "cpu" and cost["gpus"] == 0 and cost["gpu_hours"] == 0.0
    assert cost["wall_hours"] > 0
    log = pd.read_csv(tmp_path / "log.csv")
    assert cost["response_tokens"] == log["tokens"].sum() < tokens
    written = json.loads((tmp_path / "tuned" / "sft_card.json").read_text())
    assert written["cost"]["flops"] == cost["flops"]


def test_processed_tokens_leave_out_each_epoch_s_dropped_example():
    examples = [([0] * n, [IGNORE] * n) for n in range(1, 14)]  # lengths 1..13, 91 in all
    s = settings(batch_sequences=4)
    steps = 3 * s.steps_per_epoch(13)  # 3 epochs of 3 batches: one example left out each
    expected = 0
    for epoch in range(3):
        used = {i for step in range(3 * epoch, 3 * epoch + 3)
                for i in sft.batch_indices(step, 13, s)[1]}
        (dropped,) = set(range(13)) - used
        expected += 91 - (dropped + 1)
    assert sft.processed_tokens(examples, s, steps) == expected
    assert sft.processed_tokens(examples, s, 2) == sum(
        len(examples[i][0]) for step in range(2) for i in sft.batch_indices(step, 13, s)[1])


def test_generation_cost_counts_prompt_and_answer_tokens(base_model, tokenizer):
    from transformers import LlamaForCausalLM

    prompts = [prompt_ids(tokenizer, TEMPLATE, f"Tell me about the {w}.") for w in WORDS[:3]]
    g = GenerateSettings(max_new_tokens=6, batch_size=2)
    answers = generate_transformers(base_model, prompts, g)
    cost = generation_cost(base_model, prompts, answers, g, 2.0, "cpu", 0)
    tokens = sum(len(p) for p in prompts) + sum(a.tokens for a in answers)
    context = max(len(p) for p in prompts) + 6
    shape = module_shape(LlamaForCausalLM.from_pretrained(base_model), context)
    assert cost["kind"] == "inference" and cost["tokens"] == tokens
    assert cost["answer_tokens"] == sum(a.tokens for a in answers)
    assert cost["flops"] == pytest.approx(inference_flops(shape, tokens))
    assert cost["seconds"] == 2.0 and cost["gpu_hours"] == 0.0
