"""`selectlab instruct generate` on vLLM (CPU build, .venv-vllm) against transformers: the same
greedy answers from the same token ids, written in the same table."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, save_random_llama

from selectlab.instruct.data import instruction_id
from selectlab.instruct.generate import GenerateSettings, generate_transformers
from selectlab.instruct.template import ChatTemplate, prompt_ids
from selectlab.tokens import load_tokenizer, train_bpe_tokenizer

VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
TEMPLATE = {"prompt": "### Instruction:\n{instruction}\n\n### Response:\n"}
TEXTS = ["Return the length of a string.", "List directory contents and sort them by name.",
         "A large flat boat used on rivers.", "Compare two files line by line.",
         "The state of being lazy or idle."]


@pytest.mark.skipif(not VLLM_PYTHON.exists(),
                    reason=".venv-vllm is missing: create it with scripts/setup_vllm_env.sh")
def test_vllm_answers_match_transformers_greedy_answers(tmp_path):
    train_bpe_tokenizer(TEXTS * 20, 400, tmp_path / "model")
    model = save_random_llama(tmp_path / "model", load_tokenizer(tmp_path / "model"),
                              hidden_size=128, layers=2)
    evaluation = pd.DataFrame({"instruction": [f"Explain: {t}" for t in TEXTS],
                               "response": TEXTS})
    evaluation["id"] = [instruction_id(text) for text in evaluation["instruction"]]
    evaluation.to_parquet(tmp_path / "eval.parquet")
    settings = {"max_new_tokens": 6, "temperature": 0.0, "seed": 0, "dtype": "float32"}
    params = {"backend": "vllm", "settings": settings, "template": TEMPLATE,
              "engine": {"enforce_eager": True}}
    done = subprocess.run(
        [str(VLLM_PYTHON), "-m", "selectlab.cli", "instruct", "generate", "--model", model,
         "--eval", str(tmp_path / "eval.parquet"), "--variant", "tiny", "--params",
         json.dumps(params), "--out", str(tmp_path / "answers.parquet"),
         "--out-metrics", str(tmp_path / "answers.metrics.json")],
        capture_output=True, text=True, timeout=900, cwd=tmp_path,
        env=os.environ | {"VLLM_CPU_KVCACHE_SPACE": "2"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    answers = pd.read_parquet(tmp_path / "answers.parquet")
    assert answers["id"].tolist() == evaluation["id"].tolist()
    assert (answers["variant"] == "tiny").all() and (answers["backend"] == "vllm").all()
    tokenizer, template = load_tokenizer(model), ChatTemplate(**TEMPLATE)
    prompts = [prompt_ids(tokenizer, template, text) for text in evaluation["instruction"]]
    expected = generate_transformers(model, prompts, GenerateSettings(**settings))
    assert answers["answer_tokens"].tolist() == [a.tokens for a in expected]
    # The job's cost: one forward pass over every prompt and answer token.
    cost = json.loads((tmp_path / "answers.metrics.json").read_text())["cost"]
    assert cost["tokens"] == sum(map(len, prompts)) + answers["answer_tokens"].sum()
    assert cost["device"] == "cpu" and cost["gpu_hours"] == 0.0 and cost["flops"] > 0
    # Two engines' float32 kernels may part where a random model's top two logits nearly tie.
    same = sum(a == e.text for a, e in zip(answers["answer"], expected, strict=True))
    assert same >= len(expected) - 1, (answers["answer"].tolist(), [e.text for e in expected])
    assert not Path(tmp_path / ".answers.parquet.tmp").exists()
