"""Which analysis outputs a configuration has, and how the report names them.

Plain functions of the config without pandas: the workflow imports this module while it builds
the job graph. A *score family* is every configured annotation family except the embedding
(a vector, not a score); each gets a distribution figure. DataMan's figures and tables exist
when a family annotates with the DataMan rater; the ratings-vs-likelihood analysis also needs a
reference-LM family.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from selectlab.corpus.pool_names import FULL

SCORELESS_KINDS = ("embedding",)
RATER_KINDS = ("rater", "rater_generative")
DEFAULT_SAMPLE_ROWS = 200_000  # Meta-rater computes its correlations on 200k documents
DISTRIBUTION_PREFIX = "analysis_distribution_"
SPEARMAN = "analysis_spearman"
DATAMAN_PEARSON = "analysis_dataman_pearson"
DATAMAN_VS_NLL = "analysis_dataman_vs_nll"
DATAMAN_VS_NLL_TABLE = "analysis_dataman_vs_nll_spearman"
DATAMAN_CORPUS = "analysis_dataman_corpus"
DATAMAN_DOMAIN_MEANS = "analysis_dataman_domain_means"
QURATER_VS_NLL = "analysis_qurater_vs_nll"
# From the judge's labels (the raters' training sets), not from the annotated corpus.
QURATING_LABEL_PEARSON = "analysis_qurating_label_pearson"
DATAMAN_LABEL_PEARSON = "analysis_dataman_label_pearson"
DATAMAN_FINETUNE = "analysis_dataman_finetune"
LABEL_PROTOCOLS = ("qurating", "dataman")  # the judge protocols whose labels are analysed
HEADINGS = {
    QURATING_LABEL_PEARSON: "QuRating: Pearson correlation of the judge's four criteria",
    DATAMAN_LABEL_PEARSON: "DataMan: Pearson correlation of the 14 ratings (fine-tuning set)",
    DATAMAN_FINETUNE: "DataMan: the fine-tuning set by domain, overall score and source",
    QURATER_VS_NLL: "QuRater ratings vs reference-LM negative log-likelihood (scatter)",
    SPEARMAN: "Spearman correlation of all scores",
    DATAMAN_PEARSON: "DataMan: Pearson correlation of the 14 ratings",
    DATAMAN_VS_NLL: "DataMan: ratings vs reference-LM negative log-likelihood",
    DATAMAN_VS_NLL_TABLE: "DataMan: Spearman correlation of each rating with reference-LM NLL",
    DATAMAN_CORPUS: "DataMan: documents by domain, overall score and source",
    DATAMAN_DOMAIN_MEANS: "DataMan: mean rating per domain",
}


@dataclass(frozen=True)
class AnalysisPlan:
    families: dict[str, str]  # score family -> its kind, in config order
    dataman: str | None  # the family that annotates with the DataMan rater
    refppl: str | None  # the reference-LM family
    sample_rows: int
    seed: int
    qurater: str | None = None  # the family that annotates with the QuRater
    label_protocols: tuple[str, ...] = ()  # configured judge protocols of LABEL_PROTOCOLS
    # Pool -> the scored families annotating it, sampled together (one sample per pool that
    # is some family's first); a family's figures come from its first pool's sample.
    samples: dict[str, list[str]] = field(default_factory=dict)
    family_pools: dict[str, str] = field(default_factory=dict)

    def pool_of(self, family: str | None) -> str:
        return self.family_pools.get(family, FULL)

    @property
    def dataman_pool(self) -> str:
        """The pool DataMan's corpus tables count and its figures are drawn from."""
        return self.pool_of(self.dataman)

    def beside_refppl(self, family: str | None) -> bool:
        """The reference LM scored the sample a family's figures come from."""
        return family is not None and self.refppl is not None and \
            self.refppl in self.samples.get(self.pool_of(family), [])

    def figures(self) -> list[str]:
        names = [DISTRIBUTION_PREFIX + family for family in self.families]
        names += [SPEARMAN] if self.samples.get(FULL) else []
        names += [DATAMAN_PEARSON] if self.dataman else []
        names += [DATAMAN_VS_NLL] if self.beside_refppl(self.dataman) else []
        names += [QURATER_VS_NLL] if self.beside_refppl(self.qurater) else []
        return names

    def figure_tables(self) -> list[str]:
        """Tables written with the figures (from the sample)."""
        return [DATAMAN_VS_NLL_TABLE] if self.beside_refppl(self.dataman) else []

    def tables(self) -> list[str]:
        return ([DATAMAN_CORPUS, DATAMAN_DOMAIN_MEANS] if self.dataman else []) + (
            self.figure_tables())

    def label_figures(self) -> list[str]:
        """Figures drawn from the judge's labels themselves (the raters' training sets)."""
        return ([QURATING_LABEL_PEARSON] if "qurating" in self.label_protocols else []) + (
            [DATAMAN_LABEL_PEARSON] if "dataman" in self.label_protocols else [])

    def label_tables(self) -> list[str]:
        return [DATAMAN_FINETUNE] if "dataman" in self.label_protocols else []

    def rater_families(self) -> list[str]:
        """Families scored by raters trained on the judge's labels (they carry its notes)."""
        return [name for name, kind in self.families.items() if kind in RATER_KINDS]


def is_dataman(family: dict) -> bool:
    return family["kind"] in RATER_KINDS and family.get("rater") == "dataman"


def is_qurater(family: dict) -> bool:
    return family["kind"] in RATER_KINDS and family.get("rater") == "qurater"


def analysis_plan(config: dict) -> AnalysisPlan:
    """What the analysis draws. Each scored family's figures come from a sample of the first
    pool it annotates (annotate.families.*.pools), with every family annotating that pool;
    the Spearman heatmap of all scores from the full pool's; DataMan's corpus tables count its
    first pool."""
    families = config["annotate"]["families"]
    scored = {name: f["kind"] for name, f in families.items()
              if f["kind"] not in SCORELESS_KINDS}
    pools = {name: list(families[name].get("pools", [FULL])) for name in scored}
    first = {name: pools[name][0] for name in scored}
    samples = {pool: [name for name in scored if pool in pools[name]]
               for pool in dict.fromkeys(first.values())}
    dataman = next((name for name, f in families.items() if is_dataman(f)), None)
    refppl = next((name for name, f in families.items() if f["kind"] == "refppl"), None)
    qurater = next((name for name, f in families.items() if is_qurater(f)), None)
    section = config.get("analysis") or {}
    labels = tuple(p for p in LABEL_PROTOCOLS if p in config["judge"]["protocols"])
    return AnalysisPlan(scored, dataman, refppl,
                        int(section.get("sample_rows", DEFAULT_SAMPLE_ROWS)), int(config["seed"]),
                        qurater, labels, samples, first)


def heading(name: str) -> str:
    if name.startswith(DISTRIBUTION_PREFIX):
        return f"Score distributions per source: {name.removeprefix(DISTRIBUTION_PREFIX)}"
    return HEADINGS[name]


def caption_stem(name: str) -> str:
    """The caption file (report/<stem>.rst) of an output: one for all distribution figures."""
    return "analysis_distribution" if name.startswith(DISTRIBUTION_PREFIX) else name


def matrices(plan: AnalysisPlan) -> list[str]:
    """The correlation matrices written beside the heatmaps (analysis/<name>.csv)."""
    return [n for n in plan.figures() if n in (SPEARMAN, DATAMAN_PEARSON)]


def figure_params(config: dict, notes: list[str]) -> dict:
    """What `selectlab analysis figures` needs: the plan, the judge's notes, and what the
    reference NLL is."""
    plan = analysis_plan(config)
    refppl = config["annotate"]["families"][plan.refppl] if plan.refppl else None
    return {"families": plan.families, "rater_families": plan.rater_families(),
            "dataman": plan.dataman, "refppl": plan.refppl, "qurater": plan.qurater,
            "samples": plan.samples, "family_pools": plan.family_pools,
            "notes": list(notes),
            "refppl_settings": ({"model": refppl["model"], "max_tokens": refppl["max_tokens"]}
                                if refppl else None)}
