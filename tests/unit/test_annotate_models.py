"""Model families: reference-LM perplexity and sentence embeddings, in length-sorted batches."""

from __future__ import annotations

import math

import numpy as np
import pytest

from selectlab.annotate.base import length_sorted_batches
from selectlab.annotate.embedding import EmbeddingAnnotator, minilm_path
from selectlab.annotate.refppl import ReferenceLMAnnotator
from selectlab.shards import Document

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "A short one.",
    "Data selection picks the documents a language model is pretrained on, under a budget.",
    "zebra",
    "Seven wizards quietly judge boxing matches while vexed daft zebras hop over a fox.",
]


def docs(texts: list[str]) -> list[Document]:
    return [Document(id=str(i), text=t, set_name="S") for i, t in enumerate(texts)]


def test_length_sorted_batches_cover_every_index_once_longest_first():
    batches = length_sorted_batches([3, 9, 1, 9, 5], batch_size=2)
    assert [b.tolist() for b in batches] == [[1, 3], [4, 0], [2]]


@pytest.fixture
def tiny_llama_dir(tmp_path_factory, tiny_tokenizer_dir):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from selectlab.tokens import load_tokenizer

    tokenizer = load_tokenizer(tiny_tokenizer_dir)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=128)
    out = tmp_path_factory.mktemp("tiny_llama")
    LlamaForCausalLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def reference_lm(model_dir, batch_size: int, max_tokens: int = 12) -> ReferenceLMAnnotator:
    annotator = ReferenceLMAnnotator(str(model_dir), max_tokens=max_tokens,
                                     forward_batch_size=batch_size, dtype="float32", gpus=0,
                                     model_label="tiny")
    annotator.setup()
    return annotator


def test_reference_nll_is_the_models_own_loss_on_each_document(tiny_llama_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    annotator = reference_lm(tiny_llama_dir, batch_size=3)
    columns = annotator.annotate_batch(docs(TEXTS))
    tokenizer = AutoTokenizer.from_pretrained(tiny_llama_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_llama_dir).eval()
    read = 0
    for i, text in enumerate(TEXTS):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"][:12]
        sequence = torch.tensor([[tokenizer.bos_token_id, *ids]])
        read += sequence.shape[1]
        with torch.inference_mode():
            loss = model(input_ids=sequence, labels=sequence).loss.item()
        assert columns["ref_nll"][i] == pytest.approx(loss, rel=1e-4)
        assert columns["ref_ppl"][i] == pytest.approx(math.exp(loss), rel=1e-4)
        assert columns["ref_tokens"][i] == len(ids)
    assert annotator.input_tokens == read
    assert columns["missing_reason"] == [None] * len(TEXTS)


def test_reference_scores_do_not_depend_on_batching_or_order(tiny_llama_dir):
    one_by_one = reference_lm(tiny_llama_dir, batch_size=1).annotate_batch(docs(TEXTS))
    reversed_batch = reference_lm(tiny_llama_dir, batch_size=4).annotate_batch(
        docs(TEXTS[::-1]))
    assert np.allclose(one_by_one["ref_nll"], reversed_batch["ref_nll"][::-1], rtol=1e-5)
    assert one_by_one["ref_tokens"] == reversed_batch["ref_tokens"][::-1]


@pytest.fixture(scope="module")
def minilm():
    annotator = EmbeddingAnnotator(minilm_path(), max_tokens=64, forward_batch_size=2,
                                   dtype="float32", gpus=0, model_label="minilm")
    annotator.setup()
    return annotator


def embeddings(annotator, texts) -> np.ndarray:
    column = annotator.annotate_batch(docs(texts))["embedding"]
    return np.asarray(column.to_pylist(), dtype=np.float32)


def test_embeddings_match_sentence_transformers_mean_pooling(minilm):
    from sentence_transformers import SentenceTransformer

    ours = embeddings(minilm, TEXTS)
    reference = SentenceTransformer(minilm_path(), device="cpu")
    reference.max_seq_length = 64
    theirs = reference.encode(TEXTS, normalize_embeddings=True, batch_size=len(TEXTS))
    assert ours.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert np.allclose(ours, theirs, atol=1e-5)
    assert minilm.schema.field("embedding").type.list_size == 384


def test_embeddings_keep_document_order_and_place_paraphrases_close(minilm):
    texts = ["A cat sleeps on the warm mat.", "Quarterly revenue grew by four percent.",
             "On the warm rug a cat is sleeping."]
    vectors = embeddings(minilm, texts)
    assert np.allclose(vectors[::-1], embeddings(minilm, texts[::-1]), atol=1e-5)
    assert vectors[0] @ vectors[2] > vectors[0] @ vectors[1] + 0.3


@pytest.mark.slow
def test_offline_smollm2_converts_and_prefers_english_to_word_salad(tmp_path):
    from selectlab.annotate.refppl import convert_smollm2

    info = convert_smollm2(tmp_path / "reference_lm")
    assert info["model_type"] == "llama" and info["parameters"] > 100_000_000
    assert info["bos_token"] == "<|endoftext|>"
    english = "The river flows through the valley and reaches the sea after many miles."
    salad = "miles valley the after sea reaches river many The flows and through the."
    annotator = ReferenceLMAnnotator(str(tmp_path / "reference_lm"), max_tokens=32,
                                     forward_batch_size=2, dtype="float32", gpus=0,
                                     model_label="SmolLM2")
    annotator.setup()
    scores = annotator.annotate_batch(docs([english, salad]))
    assert scores["ref_ppl"][0] < 100 < scores["ref_ppl"][1]
