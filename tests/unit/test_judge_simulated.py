"""The simulated judge: answers in the protocols' formats, scores that fall with corruption."""

from __future__ import annotations

import random

import pandas as pd
import pytest
from scipy.stats import spearmanr

from selectlab.judge import dataman, prrc, qurating
from selectlab.judge.parse import BACKEND_ERROR, OK, PARSE_ERROR
from selectlab.judge.run import RunSettings, run_protocol
from selectlab.judge.simulated import (
    CRITERION_TRAITS,
    OPERATOR_DAMAGE,
    SimulatedDocument,
    SimulatedJudge,
    SimulatedSettings,
    domain_letter,
)

SOURCES = [("RedPajamaWikipedia", "wikipedia:en:Owl"), ("RedPajamaBook", "kjv:Job 1:1-5"),
           ("RedPajamaGithub", "stdlib:os.py"), ("RedPajamaStackExchange", "pydocs-rst:x.rst"),
           ("RedPajamaCommonCrawl", "fortune:cookie#3"), ("RedPajamaCommonCrawl", "man:ls.1"),
           ("RedPajamaCommonCrawl", "gcide:Owl"), ("RedPajamaCommonCrawl", "changelog:x.gz")]
OPERATORS = [op for op in OPERATOR_DAMAGE if op != "none"]


def population(n: int = 600, seed: int = 0) -> dict[str, SimulatedDocument]:
    rng = random.Random(seed)
    docs = {}
    for i in range(n):
        set_name, detail = SOURCES[i % len(SOURCES)]
        corrupted = rng.random() < 0.5
        docs[f"d{i:04d}"] = SimulatedDocument(
            set_name, detail, rng.choice(OPERATORS) if corrupted else "none",
            rng.uniform(0.2, 1.0) if corrupted else 0.0, "some text")
    return docs


def judge(docs, **overrides) -> SimulatedJudge:
    settings = dict(noise=0.08, pairwise_temperature=0.1, position_bias=0.3,
                    malformed_rate=0.0, seed=11) | overrides
    return SimulatedJudge(docs, SimulatedSettings(**settings))


def pointwise_sample(docs) -> pd.DataFrame:
    return pd.DataFrame({"doc_id": list(docs), "text": [d.text for d in docs.values()],
                         "set_name": [d.set_name for d in docs.values()]})


@pytest.mark.parametrize("operator", OPERATORS)
def test_every_criterion_falls_with_severity_for_every_operator(operator):
    for criterion in CRITERION_TRAITS:
        latents = []
        for severity in (0.0, 0.2, 0.5, 1.0):
            doc = SimulatedDocument("RedPajamaWikipedia", "wikipedia:en:Owl",
                                    operator if severity else "none", severity, "t")
            latents.append(judge({"d": doc}).latent("d", criterion))
        assert latents == sorted(latents, reverse=True), (operator, criterion)
        assert latents[0] - latents[-1] >= 0.2 - 1e-9  # at least the base damage


def test_operators_hurt_the_criteria_they_should_most(tmp_path):
    def drop(operator, criterion):
        clean = SimulatedDocument("RedPajamaWikipedia", "wikipedia:en:Owl", "none", 0.0, "t")
        bad = SimulatedDocument("RedPajamaWikipedia", "wikipedia:en:Owl", operator, 1.0, "t")
        j = judge({"clean": clean, "bad": bad}, noise=0.0)
        return j.latent("clean", criterion) - j.latent("bad", criterion)

    assert drop("ocr_noise", "cleanliness") > drop("truncation", "cleanliness")
    assert drop("truncation", "topic_focus") > drop("ocr_noise", "topic_focus")
    assert drop("language_mixing", "language_consistency") > drop("spam_insertion",
                                                                  "language_consistency")
    assert drop("spam_insertion", "cleanliness") > drop("truncation", "cleanliness")


def test_source_priors_follow_the_papers_intuitions():
    docs = {f"{s}|{d}": SimulatedDocument(s, d, "none", 0.0, "t") for s, d in SOURCES}
    j = judge(docs, noise=0.0)

    def score(criterion, set_name, detail):
        return j.latent(f"{set_name}|{detail}", criterion)

    wiki, book, code, docs_, joke = SOURCES[0], SOURCES[1], SOURCES[2], SOURCES[3], SOURCES[4]
    assert score("educational_value", *docs_) > score("educational_value", *joke)
    assert score("educational_value", *wiki) > score("educational_value", *joke)
    assert score("required_expertise", *code) > score("required_expertise", *book)
    assert score("facts_and_trivia", *wiki) > score("facts_and_trivia", *code)


def test_pointwise_scores_have_negative_spearman_with_severity(tmp_path):
    docs = population()
    severity = pd.Series({i: d.severity for i, d in docs.items()})
    sample = pointwise_sample(docs)
    for name, settings in (("dataman", dataman.Settings()), ("prrc", prrc.Settings())):
        result = run_protocol(name, sample, settings, judge(docs), tmp_path / f"{name}.sqlite",
                              RunSettings(batch_size=128))
        assert (result.judgments["status"] == OK).all()
        labels = result.labels.set_index("doc_id")
        columns = ([*dataman.QUALITY_COLUMNS, "overall_score"] if name == "dataman"
                   else list(prrc.DIMENSIONS))
        for column in columns:
            rho = spearmanr(severity[labels.index], labels[column].astype(float))[0]
            assert rho < -0.2, (column, rho)


def test_overall_score_uses_every_level_and_gives_clean_text_high_marks(tmp_path):
    # Holistic and lenient as in DataMan's corpus (84% at 4 or 5): clean documents mostly score
    # 4 or 5, a good share 5; damaged ones reach down to 1.
    docs = population(1200)
    result = run_protocol("dataman", pointwise_sample(docs), dataman.Settings(), judge(docs),
                          tmp_path / "dataman.sqlite", RunSettings(batch_size=256))
    overall = result.labels.set_index("doc_id")["overall_score"].astype(int)
    clean = overall[[doc_id for doc_id in overall.index if docs[doc_id].operator == "none"]]
    damaged = overall.drop(clean.index)
    assert set(overall) == {1, 2, 3, 4, 5}
    # Observed: clean 4 or 5 73% (5: 37%) in this mix, where five of eight sources are
    # low-prior web pages; damaged documents average 1.2 levels lower.
    assert (clean >= 4).mean() > 0.65 and (clean == 5).mean() > 0.3
    assert damaged.mean() < clean.mean() - 0.8


def test_pairwise_judgments_prefer_the_less_damaged_document(tmp_path):
    docs = population(200)
    ids = list(docs)
    rng = random.Random(5)
    chosen = [tuple(rng.sample(ids, 2)) for _ in range(300)]
    sample = pd.DataFrame({"doc_a": [a for a, _ in chosen], "doc_b": [b for _, b in chosen],
                           "text_a": "t", "text_b": "t"}).drop_duplicates(["doc_a", "doc_b"])
    settings = qurating.Settings(criteria=tuple(qurating.CRITERIA), use_logprobs=True)
    labels = run_protocol("qurating", sample, settings, judge(docs), tmp_path / "q.sqlite",
                          RunSettings(batch_size=256)).labels
    gap = [docs[b].severity - docs[a].severity for a, b in zip(labels.doc_a, labels.doc_b,
                                                                strict=True)]
    assert spearmanr(gap, labels["p_b_better"])[0] < -0.2


def test_answers_parse_with_the_real_parsers_and_malformed_ones_are_retried(tmp_path):
    docs = population(200)
    sample = pointwise_sample(docs)
    result = run_protocol("dataman", sample, dataman.Settings(), judge(docs, malformed_rate=0.3),
                          tmp_path / "c.sqlite", RunSettings(max_attempts=3))
    judgments = result.judgments
    assert (judgments["attempts"] > 1).mean() == pytest.approx(0.3, abs=0.1)
    # Three attempts at 30% each: ~2.7% still fail, recorded and not in the labels.
    failed = judgments[judgments["status"] == PARSE_ERROR]
    assert 0 < len(failed) < 20 and (failed["attempts"] == 3).all()
    assert failed["error"].str.len().gt(0).all() and failed["raw_response"].notna().all()
    assert set(result.labels["doc_id"]) == set(judgments.loc[judgments.status == OK, "doc_id"])
    summary = result.summary.set_index("criterion").loc["all"]
    assert summary["parse_error"] == len(failed) and summary["queries"] == len(docs)


def test_every_answer_malformed_means_every_query_fails_cleanly(tmp_path):
    docs = population(20)
    result = run_protocol("prrc", pointwise_sample(docs), prrc.Settings(),
                          judge(docs, malformed_rate=1.0), tmp_path / "c.sqlite",
                          RunSettings(max_attempts=2, max_failure_rate=1.0))
    assert len(result.judgments) == 4 * len(docs)
    assert (result.judgments["status"] == PARSE_ERROR).all()
    assert result.labels.empty and result.labels.columns.tolist() == prrc.LABEL_COLUMNS
    assert result.summary.set_index("criterion").loc["all", "failure_rate"] == 1.0


def test_unknown_documents_are_backend_errors(tmp_path):
    docs = population(5)
    sample = pointwise_sample(docs)
    sample.loc[0, "doc_id"] = "not-in-ground-truth"
    result = run_protocol("dataman", sample, dataman.Settings(), judge(population(5)),
                          tmp_path / "c.sqlite", RunSettings(max_failure_rate=1.0))
    row = result.judgments.iloc[0]
    assert row["status"] == BACKEND_ERROR and "no ground truth" in row["error"]


def test_answers_are_deterministic(tmp_path):
    docs = population(30)
    sample = pointwise_sample(docs)
    runs = [run_protocol("prrc", sample, prrc.Settings(), judge(docs, malformed_rate=0.2),
                         tmp_path / f"{i}.sqlite", RunSettings()).judgments for i in range(2)]
    assert runs[0]["raw_response"].tolist() == runs[1]["raw_response"].tolist()


@pytest.mark.parametrize("set_name, detail, text, letter", [
    ("RedPajamaGithub", "stdlib:os.py", "", "H"),
    ("RedPajamaBook", "kjv:Job", "", "J"),
    ("RedPajamaCommonCrawl", "fortune:x", "", "F"),
    ("RedPajamaWikipedia", "wikipedia:en:Flu", "The disease spreads; patients need medical care.",
     "A"),
    ("RedPajamaWikipedia", "wikipedia:en:Someone", "She was born in a village.", "J"),
])
def test_domains(set_name, detail, text, letter):
    assert domain_letter(SimulatedDocument(set_name, detail, "none", 0.0, text)) == letter
