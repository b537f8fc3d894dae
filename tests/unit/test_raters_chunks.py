"""Long documents are scored per window-sized chunk and averaged by chunk length."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from selectlab.raters.backbone import BackboneSpec, RandomEncoderShape, load_backbone
from selectlab.raters.chunks import plan_chunks, split_into_chunks, weighted_mean
from selectlab.raters.heads import RaterHeads
from selectlab.raters.spec import heads


def test_split_covers_every_token_in_order():
    assert split_into_chunks(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert split_into_chunks([], 3) == []
    with pytest.raises(ValueError):
        split_into_chunks([1], 0)


def test_plan_records_owner_and_length_of_each_chunk():
    plan = plan_chunks([[1] * 5, [], [2] * 2], 2)
    assert plan.owner.tolist() == [0, 0, 0, 2]
    assert plan.weight.tolist() == [2, 2, 1, 2]
    assert plan.has_chunks.tolist() == [True, False, True]


def test_weighted_mean_weights_chunks_by_length():
    plan = plan_chunks([[1] * 5, [2] * 2], 4)  # chunks of 4 and 1 tokens, then one of 2
    values = np.array([[1.0, 10.0], [6.0, 0.0], [3.0, 3.0]])
    mean = weighted_mean(values, plan)
    assert mean[0].tolist() == pytest.approx([(4 * 1 + 1 * 6) / 5, (4 * 10) / 5])
    assert mean[1].tolist() == [3.0, 3.0]


def test_a_document_without_tokens_gets_nan_not_a_made_up_score():
    plan = plan_chunks([[], [1, 2]], 4)
    assert np.isnan(weighted_mean(np.array([5.0]), plan)[0])
    with pytest.raises(ValueError, match="rows"):
        weighted_mean(np.array([1.0, 2.0]), plan)


def test_document_scores_equal_the_length_weighted_mean_of_chunk_scores(tiny_tokenizer_dir):
    spec = BackboneSpec("random_encoder", window=5,
                        random_encoder=RandomEncoderShape(16, 1, 2, 32))
    backbone = load_backbone(spec, tokenizer_dir=tiny_tokenizer_dir)
    head_module = RaterHeads(backbone.dim, heads("fineweb_edu")).eval()
    text = "the quick brown fox jumps over a lazy dog while seven wizards quietly judge"
    plan = backbone.plan([text])
    assert len(plan.chunks) >= 3 and len(set(plan.weight.tolist())) > 1
    with torch.no_grad():
        features, has_tokens = backbone.features([text], batch_size=2)
        per_chunk = head_module(backbone.pooled(plan.chunks))["edu_score"].numpy()
        whole = head_module(features)["edu_score"].numpy()
    assert has_tokens.tolist() == [True]
    expected = np.sum(per_chunk * plan.weight) / plan.weight.sum()
    assert whole[0] == pytest.approx(expected, abs=1e-5)


def test_a_window_holds_its_full_text_and_the_special_tokens_come_on_top():
    from selectlab.raters.backbone import window_content
    from selectlab.raters.chunks import plan_chunks

    # QuRating 5.1: a 1,024-token unit is two 512-token segments for a Llama rater with <s>.
    content = window_content(512, specials=1, positions=4096)
    assert content == 512
    assert [len(c) for c in plan_chunks([list(range(1024))], content).chunks] == [512, 512]
    # A 512-position BERT has no room for [CLS] and [SEP] on top: its text gives way.
    assert window_content(512, specials=2, positions=512) == 510
    assert window_content(128, specials=2, positions=None) == 128
    with pytest.raises(ValueError, match="exceeds the model's 512 positions"):
        window_content(1024, specials=2, positions=512)
