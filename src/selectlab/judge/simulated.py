"""The simulated judge of the offline default: answers from the corpus's recorded damage.

Only for the embedded corpus (the schema forbids it with SlimPajama) and always labelled as such
in the report. It answers through the same protocol objects as an LLM: the same requests go
in, raw text in exactly the requested format comes out (plus label-token log-probabilities for
pairwise questions), and the real parsers read it.

The model. Each document has a latent quality per criterion, on a 0-1 scale:

    q(doc, c) = prior(family, c) - severity * damage(operator, c)
                + noise * (0.6 z(doc) + 0.8 z(doc, c))

- `family` is the document's kind, from its source and source detail (encyclopedia, scripture,
  code, docs, and web split into jokes, dictionary, changelog, man page and web article).
  Families have levels of nine traits (fluency, information, pedagogy, technicality, structure,
  creativity, reasoning, cleanliness, consistency); a criterion's prior is a weighted mean of
  the traits it reads (educational value reads pedagogy; readability reads fluency and
  cleanliness; ...). So educational value is high for docs and Wikipedia and low for web text,
  required expertise is high for code and docs, facts & trivia high for Wikipedia.
- `damage` is the corruption operator's effect per criterion: a base of 0.2 on every criterion
  (so every criterion falls with severity) plus operator-specific damage to the traits it hurts:
  OCR noise hits cleanliness and fluency, truncation hits structure, information and reasoning,
  spam hits cleanliness and structure, language mixing hits consistency, repetition hits
  originality and structure. Clean documents have severity 0.
- z are standard normal draws fixed by (seed, document[, criterion]): the shared part makes the
  criteria correlate, as LLM judgments do; both orders of a pair see the same latent values.

Answers. Pairwise: P(second shown better) = sigmoid((q_second - q_first) / T - position_bias),
reported as log-probabilities of "A" and "B" (or as n sampled letters when no log-probabilities
are asked for); the greedy text is the likelier letter. Pointwise: DataMan scores are
round(1 + 4 q) clipped to 1-5, PRRC scores round(5 q) clipped to 0-5, the DataMan domain comes
from the family (and, for encyclopedia and web articles, from topic keywords in the text).
FineWeb-Edu-style scores are round(5 q) of `edu_score` (teaching value, less for clutter);
WanjuanCC-style answers are yes/no: fluent when the `fluency` latent is at least FLUENT_FROM,
advertising when a family prior plus the damage of spam insertion (0.3 + 0.7 severity) plus
noise reaches ADVERT_FROM, so only the spam operator makes advertising likely.
A share `malformed_rate` of answers (fixed per attempt, so re-queries can succeed) is malformed
in a protocol-specific way to exercise the parsers' failure and retry paths. Token counts are
estimates (characters / 4).
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from selectlab.judge import dataman, fineweb_edu, prrc, qurating, wanjuan
from selectlab.judge.backends import Completion, CompletionRequest

TRAITS = ("fluency", "information", "pedagogy", "technicality", "structure", "creativity",
          "reasoning", "cleanliness", "consistency")


def _levels(*values: float) -> dict[str, float]:
    return dict(zip(TRAITS, values, strict=True))


#                             flu  info  ped  tech struc crea reas clean cons
FAMILY_TRAITS: dict[str, dict[str, float]] = {
    "encyclopedia": _levels(0.75, 0.90, 0.70, 0.55, 0.75, 0.40, 0.55, 0.85, 0.90),
    "scripture": _levels(0.80, 0.45, 0.35, 0.35, 0.60, 0.75, 0.40, 0.85, 0.90),
    "code": _levels(0.45, 0.55, 0.45, 0.90, 0.80, 0.35, 0.65, 0.70, 0.85),
    "docs": _levels(0.65, 0.70, 0.85, 0.80, 0.80, 0.35, 0.65, 0.75, 0.90),
    "web_article": _levels(0.65, 0.75, 0.55, 0.45, 0.60, 0.40, 0.45, 0.60, 0.85),
    "jokes": _levels(0.50, 0.20, 0.15, 0.15, 0.30, 0.70, 0.20, 0.50, 0.80),
    "dictionary": _levels(0.40, 0.60, 0.50, 0.40, 0.55, 0.20, 0.20, 0.55, 0.80),
    "changelog": _levels(0.30, 0.45, 0.20, 0.65, 0.50, 0.10, 0.25, 0.50, 0.80),
    "manpage": _levels(0.45, 0.55, 0.50, 0.70, 0.60, 0.15, 0.35, 0.55, 0.85),
    "web": _levels(0.45, 0.40, 0.30, 0.30, 0.40, 0.40, 0.30, 0.50, 0.80),
}

# criterion -> the traits it reads, with weights
CRITERION_TRAITS: dict[str, dict[str, float]] = {
    # QuRating
    "writing_style": {"fluency": 3, "creativity": 1},
    "facts_and_trivia": {"information": 1},
    "educational_value": {"pedagogy": 3, "information": 1},
    "required_expertise": {"technicality": 1},
    # DataMan
    "accuracy": {"fluency": 1, "cleanliness": 1},
    "coherence": {"fluency": 1, "structure": 1},
    "language_consistency": {"consistency": 1},
    "semantic_density": {"information": 2, "cleanliness": 1},
    "knowledge_novelty": {"information": 1, "technicality": 1},
    "topic_focus": {"structure": 1, "information": 1},
    "creativity": {"creativity": 1},
    "professionalism": {"technicality": 1},
    "style_consistency": {"fluency": 1, "structure": 1, "consistency": 1},
    "grammatical_diversity": {"fluency": 1},
    "structural_standardization": {"structure": 1},
    "originality": {"creativity": 1, "information": 1},
    "sensitivity": {"cleanliness": 1, "consistency": 1},
    "overall_score": dict.fromkeys(TRAITS, 1),
    # PRRC (professionalism shared with DataMan)
    "readability": {"fluency": 3, "cleanliness": 2},
    "reasoning": {"reasoning": 1},
    "cleanliness": {"cleanliness": 1},
    # FineWeb-Edu's rubric rewards teaching value and takes points off for clutter
    "edu_score": {"pedagogy": 3, "structure": 1, "cleanliness": 1},
    # WanjuanCC's fluency question
    "fluency": {"fluency": 2, "cleanliness": 1},
}
# WanjuanCC yes/no answers: fluent when the fluency latent reaches this level.
FLUENT_FROM = 0.45
# Advertising is not a quality that corruption lowers but content that spam insertion adds:
# a share of each family's pages carries some, and inserted spam adds 0.3 + 0.7 * severity.
ADVERT_PRIOR = {"web": 0.2, "web_article": 0.1, "jokes": 0.1}
ADVERT_DEFAULT_PRIOR = 0.05
ADVERT_FROM = 0.5
# DataMan's Overall Score is one holistic judgment, not an average of the criteria: averaging
# nine traits shrinks their spread, and LLM judges rate holistically high (DataPajama, DataMan
# Table 11: 39% of documents at 5, 45% at 4, under 1% at 1). So the Overall Score's latent is
# stretched about the middle of the scale and raised before it is quantised: the embedded
# corpus, 40% of it damaged on purpose, then has ~37% at 5 and ~2% at 1; without this almost no
# document reaches 5.
OVERALL_SPREAD = 1.5
OVERALL_LENIENCY = 0.2
# Part of the judge's fingerprint, hence of every cached answer's key: raise it whenever the
# same settings start giving different answers, so that stale cached judgments are not reused.
ANSWER_VERSION = 3

BASE_DAMAGE = 0.2
OPERATOR_DAMAGE: dict[str, dict[str, float]] = {
    "none": {},
    "ocr_noise": {"cleanliness": 0.6, "fluency": 0.5, "consistency": 0.2},
    "line_repetition": {"creativity": 0.5, "structure": 0.4, "information": 0.3,
                        "cleanliness": 0.3},
    "ngram_repetition": {"fluency": 0.5, "creativity": 0.4, "cleanliness": 0.2},
    "language_mixing": {"consistency": 0.8, "fluency": 0.3, "structure": 0.2},
    "spam_insertion": {"cleanliness": 0.6, "structure": 0.4, "information": 0.3},
    "truncation": {"structure": 0.5, "information": 0.4, "reasoning": 0.4, "pedagogy": 0.3},
}

_WEB_DETAIL_FAMILIES = {"fortune": "jokes", "gcide": "dictionary", "changelog": "changelog",
                        "man": "manpage", "wikipedia": "web_article"}
_SET_FAMILIES = {"RedPajamaWikipedia": "encyclopedia", "RedPajamaBook": "scripture",
                 "RedPajamaGithub": "code", "RedPajamaStackExchange": "docs",
                 "RedPajamaArXiv": "docs", "RedPajamaCommonCrawl": "web", "RedPajamaC4": "web"}
_FAMILY_DOMAINS = {"scripture": "J", "code": "H", "docs": "H", "jokes": "F", "dictionary": "D",
                   "changelog": "E", "manpage": "E", "web": "O"}
_TOPIC_WORDS: dict[str, tuple[str, ...]] = {
    "A": ("disease", "medical", "medicine", "patient", "health", "clinical", "symptom"),
    "B": ("bank", "finance", "financial", "market", "economy", "currency", "investment"),
    "C": ("law", "court", "legal", "statute", "judge", "rights", "treaty"),
    "D": ("school", "university", "education", "student", "teaching", "college"),
    "E": ("technology", "engineering", "computer", "software", "electronic", "machine"),
    "F": ("film", "music", "album", "game", "television", "band", "actor"),
    "G": ("mathematics", "theorem", "equation", "algebra", "geometry", "number"),
    "I": ("government", "minister", "parliament", "election", "president", "state"),
    "K": ("railway", "airport", "vehicle", "ship", "road", "transport", "aircraft"),
    "M": ("telephone", "radio", "broadcast", "network", "telecommunication", "signal"),
    "N": ("agriculture", "crop", "farm", "livestock", "harvest", "soil"),
}


@dataclass(frozen=True)
class SimulatedDocument:
    set_name: str
    source_detail: str
    operator: str
    severity: float
    text: str


@dataclass(frozen=True)
class SimulatedSettings:
    noise: float = 0.08
    pairwise_temperature: float = 0.1
    position_bias: float = 0.0
    malformed_rate: float = 0.02
    seed: int = 0


def family(set_name: str, source_detail: str) -> str:
    base = _SET_FAMILIES.get(set_name, "web")
    if base == "web":
        return _WEB_DETAIL_FAMILIES.get(source_detail.split(":", 1)[0], "web")
    return base


def prior(family_name: str, criterion: str) -> float:
    weights = CRITERION_TRAITS[criterion]
    levels = FAMILY_TRAITS[family_name]
    return sum(w * levels[t] for t, w in weights.items()) / sum(weights.values())


def damage(operator: str, criterion: str) -> float:
    if operator not in OPERATOR_DAMAGE:
        raise ValueError(f"unknown corruption operator {operator!r}")
    if operator == "none":
        return 0.0
    weights = CRITERION_TRAITS[criterion]
    hurt = OPERATOR_DAMAGE[operator]
    return BASE_DAMAGE + sum(w * hurt.get(t, 0.0) for t, w in weights.items()) / sum(
        weights.values())


def domain_letter(doc: SimulatedDocument) -> str:
    kind = family(doc.set_name, doc.source_detail)
    if kind in _FAMILY_DOMAINS:
        return _FAMILY_DOMAINS[kind]
    words = re.findall(r"[a-z]+", doc.text.lower())
    counts = {letter: sum(words.count(w) for w in vocab) for letter, vocab in _TOPIC_WORDS.items()}
    letter, hits = max(sorted(counts.items()), key=lambda item: item[1])
    return letter if hits >= 2 else "J"


def _unit(*parts: object) -> float:
    digest = hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "big") + 0.5) / 2**64


def _normal(*parts: object) -> float:
    # Box-Muller from two hashed uniforms: the draw depends on nothing but its key.
    u1, u2 = _unit(*parts, "u1"), _unit(*parts, "u2")
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


class SimulatedJudge:
    kind = "simulated"
    supports_logprobs = True

    def __init__(self, documents: Mapping[str, SimulatedDocument], settings: SimulatedSettings,
                 model_id: str = "simulated-judge"):
        self.documents = documents
        self.settings = settings
        self.model_id = model_id

    def fingerprint(self) -> dict:
        return {"kind": self.kind, "answer_version": ANSWER_VERSION} | asdict(self.settings)

    def latent(self, doc_id: str, criterion: str) -> float:
        doc = self.documents[doc_id]
        s = self.settings
        shared = _normal(s.seed, doc_id)
        own = _normal(s.seed, doc_id, criterion)
        return (prior(family(doc.set_name, doc.source_detail), criterion)
                - doc.severity * damage(doc.operator, criterion)
                + s.noise * (0.6 * shared + 0.8 * own))

    def rating_latent(self, doc_id: str, criterion: str) -> float:
        """The latent a pointwise rating of `criterion` is quantised from."""
        latent = self.latent(doc_id, criterion)
        if criterion == "overall_score":
            return 0.5 + OVERALL_SPREAD * (latent - 0.5) + OVERALL_LENIENCY
        return latent

    def complete(self, requests: Sequence[CompletionRequest]) -> list[Completion]:
        return [self._complete_one(request) for request in requests]

    def _complete_one(self, request: CompletionRequest) -> Completion:
        started = time.perf_counter()
        meta = request.meta
        try:
            completion = self._answer(request, meta)
        except KeyError as error:
            return Completion([], error=f"simulated judge: no ground truth for {error}")
        completion.prompt_tokens = sum(len(m.content) for m in request.messages) // 4
        completion.completion_tokens = max(1, sum(len(t) for t in completion.texts) // 4)
        completion.latency_s = time.perf_counter() - started
        return completion

    def _malformed(self, meta: Mapping) -> float | None:
        """A uniform draw for choosing the kind of malformation, or None for a good answer."""
        key = (self.settings.seed, "malformed", meta.get("protocol"), meta.get("criterion"),
               meta.get("doc_id"), meta.get("doc_a"), meta.get("doc_b"), meta.get("order"),
               meta.get("attempt", 1))
        if _unit(*key) >= self.settings.malformed_rate:
            return None
        return _unit(*key, "kind")

    def _answer(self, request: CompletionRequest, meta: Mapping) -> Completion:
        protocol = meta.get("protocol")
        if protocol == qurating.NAME:
            return self._pairwise(request, meta)
        if protocol == dataman.NAME:
            return self._dataman(meta)
        if protocol == prrc.NAME:
            return self._prrc(meta)
        if protocol == fineweb_edu.NAME:
            return self._fineweb_edu(meta)
        if protocol == wanjuan.NAME:
            return self._wanjuan(meta)
        raise ValueError(f"simulated judge: unknown protocol {protocol!r}")

    def _pairwise(self, request: CompletionRequest, meta: Mapping) -> Completion:
        criterion = meta["criterion"]
        first, second = ((meta["doc_a"], meta["doc_b"]) if meta["order"] == 0
                         else (meta["doc_b"], meta["doc_a"]))
        if self._malformed(meta) is not None:
            top = {"Both": -0.3, "Neither": -1.8} if request.top_logprobs else None
            return Completion(["Both excerpts are comparable."] * request.n, top)
        s = self.settings
        gap = self.latent(second, criterion) - self.latent(first, criterion)
        logit = gap / s.pairwise_temperature - s.position_bias
        p_second = 1.0 / (1.0 + math.exp(-max(min(logit, 50.0), -50.0)))
        if request.top_logprobs:
            top = {"A": math.log(max(1.0 - p_second, 1e-12)), "B": math.log(max(p_second, 1e-12))}
            return Completion([qurating.render_choice(p_second)], top)
        rng = random.Random(_unit(s.seed, "samples", *sorted(meta.items())))
        texts = ["B" if rng.random() < p_second else "A" for _ in range(request.n)]
        return Completion(texts)

    def _dataman(self, meta: Mapping) -> Completion:
        doc_id = meta["doc_id"]
        scores = {key: _quantise(self.rating_latent(doc_id, key), 1, 5)
                  for key in dataman.CRITERIA}
        letter = domain_letter(self.documents[doc_id])
        analysis = (f"Step 1: the text reads as {dataman.DOMAINS[letter]} material. "
                    f"Step 2: weighing its strengths and flaws, overall it rates "
                    f"{scores['overall_score']} of 5.")
        answer = dataman.render_answer(scores, letter, analysis)
        kind = self._malformed(meta)
        if kind is not None:
            answer = _break_dataman(answer, kind)
        return Completion([answer])

    def _prrc(self, meta: Mapping) -> Completion:
        dimension = meta["criterion"]
        points = _quantise(self.latent(meta["doc_id"], dimension), 0, prrc.MAX_POINTS)
        answer = prrc.render_answer(points, list(prrc.RUBRICS[dimension][1][:points]))
        kind = self._malformed(meta)
        if kind is not None:
            answer = _break_final_line(answer, kind)
        return Completion([answer])


    def _fineweb_edu(self, meta: Mapping) -> Completion:
        points = _quantise(self.latent(meta["doc_id"], fineweb_edu.CRITERION), 0,
                           fineweb_edu.MAX_POINTS)
        answer = fineweb_edu.render_answer(points)
        kind = self._malformed(meta)
        if kind is not None:
            answer = _break_final_line(answer, kind)
        return Completion([answer])

    def advert_level(self, doc_id: str) -> float:
        doc = self.documents[doc_id]
        s = self.settings
        prior = ADVERT_PRIOR.get(family(doc.set_name, doc.source_detail), ADVERT_DEFAULT_PRIOR)
        spam = 0.3 + 0.7 * doc.severity if doc.operator == "spam_insertion" else 0.0
        return prior + spam + s.noise * _normal(s.seed, doc_id, "advertisement")

    def _wanjuan(self, meta: Mapping) -> Completion:
        criterion, doc_id = meta["criterion"], meta["doc_id"]
        if criterion == "advertisement":
            yes = self.advert_level(doc_id) >= ADVERT_FROM
        else:
            yes = self.latent(doc_id, criterion) >= FLUENT_FROM
        answer = wanjuan.render_answer(criterion, yes)
        kind = self._malformed(meta)
        if kind is not None:
            answer = _break_yes_no(answer, kind)
        return Completion([answer])


def _quantise(latent: float, low: int, high: int) -> int:
    scaled = low + (high - low) * latent
    return int(min(max(round(scaled), low), high))


def _break_dataman(answer: str, kind: float) -> str:
    lines = answer.splitlines()
    if kind < 0.25:  # a criterion left out
        return "\n".join(line for line in lines if not line.startswith("Coherence:"))
    if kind < 0.5:  # two domains
        return "\n".join(line + ", O" if line.startswith("Domain:") else line for line in lines)
    if kind < 0.75:  # a score out of range
        return "\n".join("Accuracy: 7" if line.startswith("Accuracy:") else line
                         for line in lines)
    return ""  # nothing at all


def _break_final_line(answer: str, kind: float) -> str:
    head, _, _ = answer.rpartition("\n")
    if kind < 0.25:
        return f"{head}\n{prrc.SCORE_LINE}: 6"
    if kind < 0.5:
        return f"{answer}\nI hope this assessment helps."
    if kind < 0.75:
        return head
    return ""


def _break_yes_no(answer: str, kind: float) -> str:
    head, _, _ = answer.rpartition("\n")
    if kind < 0.25:
        return f"{head}\n{wanjuan.ANSWER_LINE}: maybe"
    if kind < 0.5:
        return f"{answer}\nLet me know if you need more detail."
    if kind < 0.75:
        return head
    return ""
