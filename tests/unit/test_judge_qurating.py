"""QuRating's pairwise protocol: both orders, order-averaged labels, symmetry under swapping."""

from __future__ import annotations

import pandas as pd
import pytest

from selectlab.judge import qurating
from selectlab.judge.backends import Completion
from selectlab.judge.run import RunSettings, run_protocol
from selectlab.judge.simulated import SimulatedDocument, SimulatedJudge, SimulatedSettings

DOCS = {
    "clean-wiki": SimulatedDocument("RedPajamaWikipedia", "wikipedia:en:Owl", "none", 0.0,
                                    "Owls are birds of prey."),
    "noisy-web": SimulatedDocument("RedPajamaCommonCrawl", "fortune:cookie#1", "ocr_noise",
                                   0.9, "0wls ar3 b1rds."),
    "code": SimulatedDocument("RedPajamaGithub", "stdlib:os.py", "truncation", 0.4,
                              "def walk(top):"),
}


def pairs(*ids: tuple[str, str]) -> pd.DataFrame:
    return pd.DataFrame([{"doc_a": a, "doc_b": b, "text_a": DOCS[a].text, "text_b": DOCS[b].text}
                         for a, b in ids])


def judge(position_bias: float = 0.8) -> SimulatedJudge:
    settings = SimulatedSettings(noise=0.05, pairwise_temperature=0.2,
                                 position_bias=position_bias, malformed_rate=0.0, seed=3)
    return SimulatedJudge(DOCS, settings)


def settings(use_logprobs: bool = True) -> qurating.Settings:
    return qurating.Settings(criteria=tuple(qurating.CRITERIA), use_logprobs=use_logprobs)


def labels_for(sample: pd.DataFrame, tmp_path, backend=None, use_logprobs=True) -> pd.DataFrame:
    result = run_protocol("qurating", sample, settings(use_logprobs), backend or judge(),
                          tmp_path / "cache.sqlite", RunSettings())
    return result.labels


def test_each_pair_is_asked_per_criterion_in_both_orders():
    queries = qurating.build_queries(pairs(("clean-wiki", "noisy-web")), settings())
    assert len(queries) == 2 * len(qurating.CRITERIA)
    first, second = queries[0], queries[1]
    assert (first.order, second.order) == (0, 1)
    text = first.request.messages[-1].content
    assert text.index("Owls are birds") < text.index("0wls ar3")
    text = second.request.messages[-1].content
    assert text.index("0wls ar3") < text.index("Owls are birds")
    assert first.request.max_tokens == 1 and first.request.top_logprobs == 20
    assert len({q.template_hash for q in queries}) == len(qurating.CRITERIA)


def test_swapping_a_and_b_gives_one_minus_p(tmp_path):
    forward = labels_for(pairs(("clean-wiki", "noisy-web"), ("code", "clean-wiki")),
                         tmp_path / "f")
    backward = labels_for(pairs(("noisy-web", "clean-wiki"), ("clean-wiki", "code")),
                          tmp_path / "b")
    merged = forward.merge(backward, left_on=["criterion", "doc_a", "doc_b"],
                           right_on=["criterion", "doc_b", "doc_a"], suffixes=("", "_swapped"))
    assert len(merged) == 2 * len(qurating.CRITERIA)
    assert (merged["p_b_better"] + merged["p_b_better_swapped"]).tolist() == pytest.approx(
        [1.0] * len(merged))
    assert set(merged["n_orders"]) == {2}


def test_order_averaging_cancels_position_bias(tmp_path):
    """With a strong bias to the first excerpt, each order alone is skewed; the mean is not."""
    sample = pairs(("clean-wiki", "noisy-web"))
    biased = run_protocol("qurating", sample, settings(), judge(position_bias=3.0),
                          tmp_path / "biased.sqlite", RunSettings())
    unbiased = labels_for(sample, tmp_path, judge(position_bias=0.0))
    rows = biased.judgments.set_index(["criterion", "order"])["value"]
    labels = biased.labels.set_index("criterion")["p_b_better"]
    for criterion in qurating.CRITERIA:
        assert rows[(criterion, 0)] != pytest.approx(rows[(criterion, 1)], abs=0.05)
        assert labels[criterion] == pytest.approx(
            (rows[(criterion, 0)] + rows[(criterion, 1)]) / 2)
    # The clean encyclopedia text beats the OCR-damaged joke on every criterion either way.
    assert (labels < 0.5).all()
    assert (unbiased["p_b_better"] < 0.5).all()


def test_sampled_answers_when_the_backend_gives_no_logprobs(tmp_path):
    sample = pairs(("clean-wiki", "noisy-web"))
    queries = qurating.build_queries(sample, settings(use_logprobs=False))
    assert queries[0].request.n == 5 and queries[0].request.top_logprobs == 0
    labels = labels_for(sample, tmp_path, use_logprobs=False)
    # Five samples per order: the label is a multiple of 1/10.
    assert all(round(p * 10, 9).is_integer() for p in labels["p_b_better"])


def test_interpret_undoes_the_order():
    sample = pairs(("clean-wiki", "noisy-web"))
    first, second = qurating.build_queries(sample, settings())[:2]
    answer = Completion(["B"], {"A": -1.6094379124341003, "B": -0.2231435513142097})  # 0.2/0.8
    assert qurating.interpret(first, answer).value == pytest.approx(0.8)
    judged = qurating.interpret(second, answer)
    assert judged.value == pytest.approx(0.2)
    assert judged.confidence == pytest.approx(0.6)


def test_labels_keep_pairs_with_one_good_order_and_drop_none_silently():
    judgments = pd.DataFrame([
        {"criterion": "writing_style", "doc_a": "x", "doc_b": "y", "order": 0, "value": 0.9,
         "status": "ok"},
        {"criterion": "writing_style", "doc_a": "x", "doc_b": "y", "order": 1, "value": None,
         "status": "parse_error"},
        {"criterion": "writing_style", "doc_a": "u", "doc_b": "v", "order": 0, "value": None,
         "status": "backend_error"},
    ])
    sample = pd.DataFrame({"doc_a": ["x", "u"], "doc_b": ["y", "v"], "text_a": ["tx", "tu"],
                           "text_b": ["ty", "tv"]})
    labels = qurating.labels(judgments, sample)
    assert labels.columns.tolist() == qurating.LABEL_COLUMNS
    assert labels.to_dict("records") == [{"criterion": "writing_style", "doc_a": "x",
                                          "doc_b": "y", "text_a": "tx", "text_b": "ty",
                                          "p_b_better": 0.9, "n_orders": 1}]


def test_unknown_criterion_is_rejected():
    with pytest.raises(ValueError, match="unknown QuRating criteria"):
        qurating.Settings(criteria=("beauty",), use_logprobs=True)
