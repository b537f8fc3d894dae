"""Judging answers pairwise: the reference-based judge, both orders, the cache, win rates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from selectlab.instruct import compare, winrate
from selectlab.instruct.data import instruction_id
from selectlab.instruct.figures import plot_winrate
from selectlab.instruct.reference_judge import ReferenceOverlapJudge, overlap_f1
from selectlab.judge.backends import Completion
from selectlab.judge.parse import OK, PARSE_ERROR
from selectlab.judge.run import RunSettings

REFERENCES = ["The cat sat on the mat.", "Return the length of a string.",
              "List directory contents.", "A large flat boat.", "Compare two files."]


def evaluation() -> pd.DataFrame:
    frame = pd.DataFrame({"instruction": [f"Question {i}?" for i in range(5)],
                          "response": REFERENCES})
    frame["id"] = [instruction_id(text) for text in frame["instruction"]]
    return frame


def answers(frame: pd.DataFrame, texts: list[str], variant: str) -> pd.DataFrame:
    return pd.DataFrame({"id": frame["id"], "variant": variant, "answer": texts})


def reference_judge(frame: pd.DataFrame, table: dict[str, pd.DataFrame],
                    tie_margin: float = 0.0) -> ReferenceOverlapJudge:
    texts = {compare.answer_id(row.id, row.answer): row.answer
             for answers_of in table.values() for row in answers_of.itertuples()}
    return ReferenceOverlapJudge(texts, dict(zip(frame["id"], frame["response"], strict=True)),
                                 tie_margin=tie_margin)


def judge(frame, table, variants, reference, backend, cache):
    return compare.judge_comparison(frame, table, variants, reference, compare.Settings(),
                                    backend, cache, RunSettings(batch_size=3))


@pytest.fixture
def table() -> dict[str, pd.DataFrame]:
    frame = evaluation()
    return {
        # good: wins 3 (close to the reference), ties 1 (same answer), loses 1
        "good": answers(frame, ["The cat sat on the mat.", "Return the length of a string.",
                                "List the contents.", "same answer", "nothing"], "good"),
        "base": answers(frame, ["dog", "length", "List directory contents.", "same answer",
                                "Compare two files."], "base"),
        "other": answers(frame, ["The cat.", "x", "y", "z", "Compare two files."], "other"),
    }


def test_word_overlap_with_the_reference():
    assert overlap_f1("the cat", "The cat sat") == pytest.approx(2 * 1 * (2 / 3) / (1 + 2 / 3))
    assert overlap_f1("", "anything") == overlap_f1("dog", "cat") == 0.0
    assert overlap_f1("Cat, the!", "the cat") == 1.0


def test_verdicts_parse_and_undo_the_order():
    assert compare.parse_verdict("A").value == "A"
    assert compare.parse_verdict("**B**. Because ...").value == "B"
    assert compare.parse_verdict("Tie.").value == compare.parse_verdict("tie").value == "tie"
    assert compare.parse_verdict("Both answers are fine.").status == PARSE_ERROR
    assert compare.parse_verdict("").status == PARSE_ERROR
    assert [compare.variant_score(c, 0) for c in ("A", "B", "tie")] == [1.0, 0.0, 0.5]
    assert [compare.variant_score(c, 1) for c in ("A", "B", "tie")] == [0.0, 1.0, 0.5]


def test_both_orders_are_asked_and_recorded(tmp_path, table):
    frame = evaluation()
    result, asked = judge(frame, table, ["good"], "base", reference_judge(frame, table),
                          tmp_path / "cache.sqlite")
    assert asked == len(result) == 2 * len(frame)
    assert (result["status"] == OK).all() and (result["backend"] == "reference").all()
    for _, rows in result.groupby("instruction_id"):
        first, second = rows.sort_values("order").itertuples()
        assert (first.shown_first, second.shown_first) == ("good", "base")
        assert (first.doc_a, first.doc_b) == (second.doc_a, second.doc_b)
        # The judge saw the answers swapped, so its letter flips and the score does not.
        swap = {'"A"': '"B"', '"B"': '"A"', '"tie"': '"tie"'}
        assert swap[first.parsed] == second.parsed and first.value == second.value
    scores = winrate.instruction_scores(result).set_index("instruction_id")["score"]
    assert scores.loc[frame["id"]].tolist() == [1.0, 1.0, 0.0, 0.5, 0.0]


class FirstShownJudge:
    """A judge with pure position bias: it always prefers whatever it is shown first."""

    kind, model_id, supports_logprobs = "transformers", "position-bias", False

    def fingerprint(self) -> dict:
        return {"kind": self.kind}

    def complete(self, requests):
        return [Completion(["A"]) for _ in requests]


def test_swapping_the_order_cancels_a_judge_that_only_sees_position(tmp_path, table):
    frame = evaluation()
    result, _ = judge(frame, table, ["good", "other"], "base", FirstShownJudge(),
                      tmp_path / "cache.sqlite")
    assert set(result.groupby(["variant", "order"])["value"].mean()) == {0.0, 1.0}
    rows = winrate.comparison_rows(result, "Fig", ["good", "other"], "base", {}, 200, 0)
    assert [row["win_rate"] for row in rows] == [50.0, 50.0]
    assert [row["ties"] for row in rows] == [5, 5]


def test_a_rerun_with_one_more_variant_asks_only_its_pairs(tmp_path, table):
    frame, cache = evaluation(), tmp_path / "cache.sqlite"
    backend = reference_judge(frame, table)
    first, asked_first = judge(frame, table, ["good"], "base", backend, cache)
    second, asked_second = judge(frame, table, ["good", "other"], "base", backend, cache)
    assert asked_first == asked_second == 2 * len(frame)
    assert second.loc[second["variant"] == "good", "cached"].all()
    assert not second.loc[second["variant"] == "other", "cached"].any()
    columns = ["doc_a", "doc_b", "order", "parsed", "value"]
    assert second[second["variant"] == "good"][columns].reset_index(drop=True).equals(
        first[columns])
    # A retrained model's changed answer is asked again; its unchanged answers are not.
    changed = dict(table)
    changed["other"] = table["other"].assign(answer=["The cat.", "x", "y", "z", "new"])
    _, asked_third = judge(frame, changed, ["good", "other"], "base",
                           reference_judge(frame, changed), cache)
    assert asked_third == 2


def test_unanswered_judgments_are_failures_not_losses(tmp_path, table):
    frame = evaluation()

    class Mumbles(FirstShownJudge):
        def complete(self, requests):
            return [Completion(["A" if r.meta["instruction_id"] != frame["id"][0] else "hmm"])
                    for r in requests]

    result, _ = judge(frame, table, ["good"], "base", Mumbles(), tmp_path / "cache.sqlite")
    failed = result[result["instruction_id"] == frame["id"][0]]
    assert (failed["status"] == PARSE_ERROR).all() and (failed["attempts"] == 3).all()
    row = winrate.comparison_rows(result, "Fig", ["good"], "base", {}, 200, 0)[0]
    assert (row["instructions"], row["failed"], row["win_rate"]) == (4, 1, 50.0)


def test_bootstrap_interval_brackets_the_win_rate():
    scores = np.array([1.0] * 30 + [0.0] * 10 + [0.5] * 10)
    low, high = winrate.bootstrap_interval(scores, 2000, seed=3)
    assert low < scores.mean() < high and 0.55 < low and high < 0.85
    assert (low, high) == winrate.bootstrap_interval(scores, 2000, seed=3)
    narrow = winrate.bootstrap_interval(np.tile(scores, 16), 2000, seed=3)
    assert narrow[1] - narrow[0] < (high - low) / 3
    assert np.isnan(winrate.bootstrap_interval(np.array([]), 10, 0)[0])


def test_winrate_table_and_figure(tmp_path, table):
    frame = evaluation()
    backend = reference_judge(frame, table)
    qurating, _ = judge(frame, table, ["good", "other"], "base", backend, tmp_path / "q.sqlite")
    dataman, _ = judge(frame, table, ["other"], "good", backend, tmp_path / "d.sqlite")
    comparisons = {"qurating": {"figure": "QuRating Fig. 3", "reference": "base",
                                "variants": ["good", "other"]},
                   "dataman": {"figure": "DataMan Fig. 2", "reference": "good",
                               "variants": ["other"]}}
    result = winrate.winrate_table(comparisons, {"qurating": qurating, "dataman": dataman},
                                   {"good": "Good", "base": "Base"}, 500, 1)
    assert result[["figure", "variant", "label", "reference"]].values.tolist() == [
        ["QuRating Fig. 3", "good", "Good", "Base"], ["QuRating Fig. 3", "other", "other", "Base"],
        ["DataMan Fig. 2", "other", "other", "Good"]]
    good = result.iloc[0]
    assert (good["wins"], good["ties"], good["losses"]) == (2, 1, 2)
    assert good["win_rate"] == pytest.approx(50.0)
    assert good["ci_low"] <= good["win_rate"] <= good["ci_high"]
    assert good["judge"] == "reference:reference-overlap-f1"
    path = plot_winrate(result, tmp_path / "winrate.png", ["a note"])
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
