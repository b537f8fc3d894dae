"""Rater backbones pool the right token whatever the padding side."""

from __future__ import annotations

import pytest
import torch

from selectlab.raters.backbone import (
    Backbone,
    BackboneSpec,
    RandomEncoderShape,
    is_causal,
    last_token_index,
    load_backbone,
    pad_batch,
    pool,
    position_ids,
    special_tokens,
)
from selectlab.raters.heads import RaterHeads
from selectlab.raters.spec import heads

SEQUENCES = [[5, 6, 7, 8, 9, 10], [11, 12, 13], [14]]


def tiny_bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16)
    return BertModel(config).eval()


def tiny_llama():
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=2, intermediate_size=32, max_position_embeddings=16)
    return LlamaModel(config).eval()


def pooled(model, sequences, side: str, causal: bool) -> torch.Tensor:
    ids, mask = pad_batch(sequences, pad_id=0, side=side)
    with torch.no_grad():
        hidden = model(input_ids=ids, attention_mask=mask,
                       position_ids=position_ids(mask)).last_hidden_state
    return pool(hidden, mask, causal)


def test_pad_batch_puts_tokens_on_the_requested_side():
    ids, mask = pad_batch([[1, 2, 3], [4]], pad_id=9, side="left")
    assert ids.tolist() == [[1, 2, 3], [9, 9, 4]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    ids, mask = pad_batch([[1, 2, 3], [4]], pad_id=9, side="right")
    assert ids.tolist() == [[1, 2, 3], [4, 9, 9]]
    with pytest.raises(ValueError, match="padding side"):
        pad_batch([[1]], 0, side="middle")


def test_positions_count_real_tokens_and_last_token_is_found_on_both_sides():
    mask = torch.tensor([[0, 0, 1, 1], [1, 1, 0, 0], [1, 1, 1, 1]])
    assert position_ids(mask).tolist() == [[0, 0, 0, 1], [0, 1, 1, 1], [0, 1, 2, 3]]
    assert last_token_index(mask).tolist() == [3, 1, 3]


def test_mean_pooling_ignores_padding():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    mask = torch.tensor([[1, 1, 0]])
    assert pool(hidden, mask, causal=False).tolist() == [[2.0, 3.0]]
    assert pool(hidden, mask, causal=True).tolist() == [[3.0, 4.0]]


@pytest.mark.parametrize("make, causal", [(tiny_bert, False), (tiny_llama, True)])
def test_left_and_right_padding_give_the_same_vectors_as_unpadded(make, causal):
    model = make()
    left = pooled(model, SEQUENCES, "left", causal)
    right = pooled(model, SEQUENCES, "right", causal)
    alone = torch.cat([pooled(model, [s], "right", causal) for s in SEQUENCES])
    assert torch.allclose(left, right, atol=1e-5)
    assert torch.allclose(right, alone, atol=1e-5)


def test_decoder_pooling_reads_the_last_real_token_not_the_last_position():
    model = tiny_llama()
    ids, mask = pad_batch(SEQUENCES, pad_id=0, side="right")
    with torch.no_grad():
        hidden = model(input_ids=ids, attention_mask=mask,
                       position_ids=position_ids(mask)).last_hidden_state
    # Row 1 has three tokens: its vector is the state at position 2, not at the padded end.
    assert torch.equal(pool(hidden, mask, causal=True)[1], hidden[1, 2])
    assert not torch.allclose(hidden[1, 2], hidden[1, -1])


def test_backbone_scores_do_not_depend_on_padding_side(tiny_tokenizer_dir):
    spec = BackboneSpec("random_encoder", window=16,
                        random_encoder=RandomEncoderShape(16, 1, 2, 32))
    backbone = load_backbone(spec, tokenizer_dir=tiny_tokenizer_dir)
    head_module = RaterHeads(backbone.dim, heads("qurater")).eval()
    chunks = [[5, 6, 7, 8], [9, 10], [11, 12, 13]]
    with torch.no_grad():
        left = head_module(backbone.pooled(chunks, side="left"))
        right = head_module(backbone.pooled(chunks, side="right"))
    for name in left:
        assert torch.allclose(left[name], right[name], atol=1e-5)


def test_decoder_backbone_is_recognised_and_pools_the_last_token(tmp_path, tiny_tokenizer_dir):
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=400, hidden_size=16, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, intermediate_size=32,
                         max_position_embeddings=64)
    LlamaForCausalLM(config).save_pretrained(tmp_path / "lm")
    AutoTokenizer.from_pretrained(tiny_tokenizer_dir).save_pretrained(tmp_path / "lm")
    backbone = load_backbone(BackboneSpec(str(tmp_path / "lm"), window=32))
    assert backbone.causal and is_causal(config)
    chunks = [[5, 6, 7, 8, 9], [10, 11]]
    with torch.no_grad():
        assert torch.allclose(backbone.pooled(chunks, "left"), backbone.pooled(chunks, "right"),
                              atol=1e-5)


def test_special_tokens_are_found_around_the_text(tiny_tokenizer_dir):
    from transformers import AutoTokenizer

    from selectlab.raters.backbone import minilm_path

    assert special_tokens(AutoTokenizer.from_pretrained(tiny_tokenizer_dir)) == ([], [])
    bert = AutoTokenizer.from_pretrained(minilm_path())
    assert special_tokens(bert) == ([bert.cls_token_id], [bert.sep_token_id])


def test_window_must_fit_the_model_and_leave_room_for_text(tiny_tokenizer_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_dir)
    with pytest.raises(ValueError, match="positions"):
        Backbone(tiny_bert(), tokenizer, causal=False, window=64, pool_layers=(-1,), label="t")


def test_layers_past_the_pooled_one_are_dropped_without_changing_it(tiny_tokenizer_dir):
    shape = RandomEncoderShape(16, 3, 2, 32)
    full = load_backbone(BackboneSpec("random_encoder", window=16, random_encoder=shape,
                                      pool_layers=(-1,)), tokenizer_dir=tiny_tokenizer_dir)
    cut = load_backbone(BackboneSpec("random_encoder", window=16, random_encoder=shape,
                                     pool_layers=(2,)), tokenizer_dir=tiny_tokenizer_dir)
    assert len(cut.model.encoder.layer) == 2 and len(full.model.encoder.layer) == 3
    ids, mask = pad_batch([[5, 6, 7], [8, 9]], full.pad_id)
    with torch.no_grad():
        states = full.model(input_ids=ids, attention_mask=mask, position_ids=position_ids(mask),
                            output_hidden_states=True).hidden_states
        assert torch.allclose(cut.pooled([[5, 6, 7], [8, 9]]), pool(states[2], mask, False),
                              atol=1e-5)
