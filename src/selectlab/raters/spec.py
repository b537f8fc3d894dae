"""What each rater predicts: its heads, the judge protocol it learns from, its sidecar columns.

Five raters, one per score family of docs/layout.md:

- `qurater` (QuRating): one scalar score per criterion, learned from pairwise judgments.
- `dataman` (DataMan): 14 five-way ratings (1-5) and a 15-way domain (A-O).
- `prrc` (Meta-rater): four six-way ratings (0-5): professionalism, readability, reasoning,
  cleanliness.
- `fineweb_edu` (FineWeb-Edu's educational classifier, as Meta-rater uses it): one regression
  output, the educational score 0-5.
- `wanjuan` (WanjuanCC's classifiers, as Meta-rater uses them): two binary outputs, the
  probability that a text carries advertising and that it reads fluently.

No torch here: the workflow imports this module while it builds the job graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from selectlab.judge import dataman, fineweb_edu, prrc, qurating, wanjuan

RATERS = ("qurater", "dataman", "prrc", "fineweb_edu", "wanjuan")
PROTOCOL = {"qurater": qurating.NAME, "dataman": dataman.NAME, "prrc": prrc.NAME,
            "fineweb_edu": fineweb_edu.NAME, "wanjuan": wanjuan.NAME}
# Head kinds: a Bradley-Terry score, a softmax over ordered classes, a regression value, a
# sigmoid probability.
PAIRWISE, CLASSES, REGRESSION, BINARY = "pairwise", "classes", "regression", "binary"
STATUS = "status"
MISSING_REASON = "missing_reason"
DOMAIN = "domain"
DATAMAN_RATINGS = tuple(dataman.CRITERIA)  # the 13 criteria and overall_score, paper's order
DATAMAN_SCORES = (1, 2, 3, 4, 5)
PRRC_SCORES = tuple(range(prrc.MAX_POINTS + 1))


@dataclass(frozen=True)
class Head:
    name: str
    kind: str
    classes: tuple = ()  # CLASSES heads: the label of each output, in order

    @property
    def outputs(self) -> int:
        return len(self.classes) if self.kind == CLASSES else 1


def heads(rater: str, criteria: tuple[str, ...] | None = None) -> list[Head]:
    """The heads of a rater; `criteria` narrows QuRater's and PRRC's to those judged."""
    if rater == "qurater":
        return [Head(c, PAIRWISE) for c in (criteria or qurating.CRITERIA)]
    if rater == "dataman":
        return ([Head(c, CLASSES, DATAMAN_SCORES) for c in DATAMAN_RATINGS]
                + [Head(DOMAIN, CLASSES, tuple(dataman.DOMAINS))])
    if rater == "prrc":
        return [Head(d, CLASSES, PRRC_SCORES) for d in (criteria or prrc.DIMENSIONS)]
    if rater == "fineweb_edu":
        return [Head(fineweb_edu.CRITERION, REGRESSION)]
    if rater == "wanjuan":
        return [Head(c, BINARY) for c in (criteria or wanjuan.CRITERIA)]
    raise ValueError(f"unknown rater {rater!r}; known: {list(RATERS)}")


def probability_columns(head: Head) -> list[str]:
    return [f"{head.name}_p{label}" for label in head.classes]


def sidecar_columns(rater: str, rater_heads: list[Head]) -> list[str]:
    """The score columns of the rater's sidecar family (docs/layout.md), without `id`.

    `Rater.score` returns these plus `missing_reason`.
    """
    names = [h.name for h in rater_heads]
    if rater == "dataman":
        # The generative DataMan's score-only and domain-only versions have one head each.
        quality = sorted(n for n in names if n not in ("overall_score", DOMAIN))
        return [*quality, *[n for n in ("overall_score", DOMAIN) if n in names], STATUS]
    if rater == "prrc":
        return names + [c for h in rater_heads for c in probability_columns(h)]
    return names


def check_rater(rater: str) -> str:
    if rater not in RATERS:
        raise ValueError(f"unknown rater {rater!r}; known: {list(RATERS)}")
    return rater
