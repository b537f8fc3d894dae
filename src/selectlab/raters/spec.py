"""What each rater predicts: its heads, the judge protocol it learns from, its sidecar columns.

Five raters, one per score family of docs/layout.md:

- `qurater` (QuRating): one scalar score per criterion, learned from pairwise judgments.
- `dataman` (DataMan): 14 five-way ratings (1-5) and a 15-way domain (A-O). DataMan appendix
  B.2 trains three versions: all-rating (every head), score-only (the Overall Score) and
  domain-only (the domain); a run may train several, the extra ones as `dataman_score`,
  `dataman_domain` or `dataman_all` beside the `dataman` that annotates.
  QuRating Table 6 (appendix B.2) compares the multi-task QuRater with separate models per
  criterion, each from a pre-trained model or from scratch; a run may train the setups the
  annotating `qurater` is not, as `qurater_<setup>` (never annotating).
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
DATAMAN_VERSIONS = ("all", "score", "domain")
RANDOM_ENCODER = "random_encoder"  # a backbone: a small BERT initialised from a seed
# QuRating Table 6's rows (appendix B.2): multi-task or separate models, from a pre-trained
# model or from scratch, in the paper's order.
QURATER_SETUPS = ("multitask_pretrained", "separate_pretrained", "multitask_scratch",
                  "separate_scratch")
OVERALL = "overall_score"
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


def dataman_version_heads(version: str) -> list[Head]:
    """The heads of one DataMan version (DataMan appendix B.2)."""
    if version not in DATAMAN_VERSIONS:
        raise ValueError(f"DataMan version must be one of {DATAMAN_VERSIONS}, got {version!r}")
    every = heads("dataman")
    keep = {"all": None, "score": {OVERALL}, "domain": {DOMAIN}}[version]
    return every if keep is None else [h for h in every if h.name in keep]


def dataman_instance(version: str, annotating: str) -> str:
    """The rater name a DataMan version trains under: `dataman` for the one that annotates."""
    return "dataman" if version == annotating else f"dataman_{version}"


def qurater_instance(setup: str) -> str:
    """The rater name a QuRating Table 6 setup trains under when it does not annotate."""
    return f"qurater_{setup}"


def qurater_setup_of(name: str) -> str | None:
    """The Table 6 setup of a `qurater_<setup>` instance (None for any other name)."""
    setup = name.removeprefix("qurater_")
    return setup if name.startswith("qurater_") and setup in QURATER_SETUPS else None


def base_rater(name: str) -> str:
    """The rater a trained instance is: `dataman_score` -> `dataman`, `qurater_separate_scratch`
    -> `qurater`."""
    if name in RATERS:
        return name
    if name.startswith("dataman_") and name.removeprefix("dataman_") in DATAMAN_VERSIONS:
        return "dataman"
    if qurater_setup_of(name):
        return "qurater"
    raise ValueError(f"unknown rater {name!r}; known: {list(RATERS)}, dataman_<version> for "
                     f"the versions {list(DATAMAN_VERSIONS)} and qurater_<setup> for the "
                     f"setups {list(QURATER_SETUPS)}")


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

