"""Held-out metrics on hand-made cases."""

from __future__ import annotations

import numpy as np
import pytest

from selectlab.raters import metrics


def test_pairwise_accuracy_counts_agreement_with_the_judge():
    a = np.array([0.0, 1.0, 2.0, 5.0])
    b = np.array([1.0, 0.0, 3.0, 5.0])
    p = np.array([0.9, 0.8, 0.1, 0.7])  # right, wrong, wrong, tie (counts half)
    assert metrics.pairwise_accuracy(a, b, p) == pytest.approx(1.5 / 4)
    # undecided judgments are left out
    assert metrics.pairwise_accuracy(a[:2], b[:2], np.array([0.5, 0.2])) == 1.0
    assert np.isnan(metrics.pairwise_accuracy(a[:1], b[:1], np.array([0.5])))


def test_level_binary_and_per_class_accuracy():
    gold = [1, 2, 3, 4, 5, 5]
    guess = [1, 3, 3, 2, 5, 4]
    assert metrics.accuracy(gold, guess) == pytest.approx(3 / 6)
    # binary split < 3 vs >= 3: 1|1 ok, 2|3 wrong, 3|3 ok, 4|2 wrong, 5|5 ok, 5|4 ok
    assert metrics.binary_accuracy(gold, guess) == pytest.approx(4 / 6)
    assert metrics.per_class_accuracy(["A", "A", "B"], ["A", "B", "B"]) == {"A": 0.5, "B": 1.0}


def test_macro_f1_averages_classes_in_gold_or_predictions():
    gold = [0, 0, 1, 1]
    guess = [0, 1, 1, 2]
    # class 0: tp 1 fp 0 fn 1 -> 2/3; class 1: tp 1 fp 1 fn 1 -> 1/2; class 2: tp 0 -> 0
    assert metrics.macro_f1(gold, guess) == pytest.approx((2 / 3 + 1 / 2 + 0) / 3)
    assert metrics.f1_of(gold, guess, 0) == pytest.approx(2 / 3)
    assert metrics.macro_f1([3, 3], [3, 3]) == 1.0


def test_overall_score_analysis_matches_table_9_definitions():
    gold = np.array([1, 1, 2, 2, 2, 2, 3, 3, 4, 5])
    guess = np.array([1, 3, 2, 4, 3, 1, 2, 3, 2, 5])
    out = metrics.overall_score_analysis(gold, guess)
    assert out["n_low"] == 6 and out["n_high"] == 4
    assert out["acc_5level"] == pytest.approx(4 / 10)
    assert out["acc_low"] == pytest.approx(3 / 6)  # 1->1, 2->2, 2->1 stay low
    assert out["acc_high"] == pytest.approx(2 / 4)  # 3->3, 5->5 stay high
    assert out["err_lt2_as_ge3"] == pytest.approx(1 / 6)  # 1 -> 3
    assert out["err_2_as_gt3"] == pytest.approx(1 / 6)  # 2 -> 4
    assert out["err_2_as_3"] == pytest.approx(1 / 6)  # 2 -> 3
    assert out["err_ge4_as_lt3"] == pytest.approx(1 / 4)  # 4 -> 2
    assert out["err_3_as_lt3"] == pytest.approx(1 / 4)  # 3 -> 2
    low_errors = out["err_lt2_as_ge3"] + out["err_2_as_gt3"] + out["err_2_as_3"]
    assert low_errors == pytest.approx(1 - out["acc_low"])
    assert out["err_ge4_as_lt3"] + out["err_3_as_lt3"] == pytest.approx(1 - out["acc_high"])
    assert out["acc_binary"] == pytest.approx(5 / 10)


def test_spearman_uses_ranks_and_ignores_missing_values():
    assert metrics.spearman([1, 2, 3, 4], [10, 20, 30, 1000]) == pytest.approx(1.0)
    assert metrics.spearman([1, 2, 3, np.nan], [3, 2, 1, 5]) == pytest.approx(-1.0)
    assert np.isnan(metrics.spearman([1, 1, 1], [1, 2, 3]))
