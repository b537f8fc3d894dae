"""The report's plan: which tables and figures a configuration produces, their headings and
caption files, and what the table and figure commands are told about the variants.

Read by both the workflow (rules/report.smk, rules/paper.smk declare exactly these outputs) and
`selectlab report` (which writes and titles them), so a name is listed once. Plain functions of
the config; no pandas or matplotlib.

The report leads with the papers' own numbered tables (selectlab.papers), the comparison with
their published numbers and the claims, and their charts; then the results of every variant,
the instruction-following win rates, then the analyses of the annotated corpus and of the
judge's labels.
"""

from __future__ import annotations

from dataclasses import dataclass

from selectlab import layout
from selectlab.analysis.plan import AnalysisPlan, analysis_plan
from selectlab.analysis.plan import caption_stem as analysis_caption_stem
from selectlab.analysis.plan import heading as analysis_heading
from selectlab.annotate.resolve import container_key, family_names
from selectlab.instruct.resolve import configured as instruct_configured
from selectlab.instruct.resolve import container_key as instruct_container_key
from selectlab.judge.resolve import configured_protocols
from selectlab.judge.resolve import notes as judge_notes
from selectlab.papers.layouts import LAYOUTS as PAPER_LAYOUTS
from selectlab.papers.layouts import PPL_VS_TASKS, SPREAD, chart_names
from selectlab.papers.plan import paper_plan
from selectlab.plugins.rows import variant_label
from selectlab.selection.resolve import metarater_fits, selection_params

TABLES = ("main", "perplexity_by_source", "icl_by_task", "selection_overlap")
FIGURES = ("ppl_vs_icl", "loss_curves", "selection_overlap")
METARATER_FIGURES = ("metarater_fit", "metarater_weights", "metarater_proxies", "metarater_pca")
ANNOTATION_THROUGHPUT = "annotation_throughput"  # written by rules/annotate.smk
# Written by rules/papers.smk beside the papers' numbered tables.
VS_PUBLISHED, CLAIMS = "vs_published", "claims"
JUDGE_FAILURES = "judge_failures"  # written by rules/judge.smk
# Written by rules/cost.smk (selectlab.cost.tables): per stage, per variant, Meta-rater Table 2.
COST_TABLES = ("cost", "cost_variants", "cost_metarater_table2")
# The win-rate table and figure (rules/instruct.smk), where the config has comparisons.
WINRATE_TABLES = ("winrate",)
WINRATE_FIGURES = ("winrate",)
# Where a table's caption file is not named after it (report/{stem}.rst).
TABLE_CAPTIONS = {"main": "main_table", "selection_overlap": "selection_overlap_table",
                  "winrate": "winrate_table"}
HEADINGS = {
    "main": "Main results",
    "perplexity_by_source": "Perplexity by source",
    "icl_by_task": "In-context learning by task",
    "ppl_vs_icl": "Perplexity vs in-context learning",
    "loss_curves": "Training loss",
    "selection_overlap": "Selection overlap",
    "metarater_fit": "Meta-rater: predicted vs actual proxy loss",
    "metarater_weights": "Meta-rater: learned weights",
    "metarater_proxies": "Meta-rater: downstream score vs number of proxies",
    "metarater_pca": "Meta-rater: proxy weights and loss landscape",
    VS_PUBLISHED: "The run beside the papers' published numbers",
    CLAIMS: "The papers' claims, judged on this run",
    SPREAD: "Each paper's Table 1 average: spread over replicates",
    PPL_VS_TASKS: "DataMan Figure 6: perplexity against ICL, per task",
    "winrate": "Instruction following: win rates after fine-tuning",
    JUDGE_FAILURES: "Judge: failed judgments per protocol",
}
# The software environments every run uses (`environments` adds the others a run may use).
ENVIRONMENTS = ("cpu", "train")


@dataclass(frozen=True)
class ReportPlan:
    metarater_figure_fits: list[tuple[str, int]]  # (search, proxies) the figures show
    rater_tables: list[str]
    analysis: AnalysisPlan
    numbered_tables: list[str]  # the papers' numbered tables the config regenerates
    paper_charts: list[str]  # the papers' charts drawn from them (rule paper_charts)
    instruct: bool  # instruction-following comparisons configured (the win rates)

    def figures(self) -> list[str]:
        """Figures of the results (rule `figures`)."""
        return list(FIGURES) + (list(METARATER_FIGURES) if self.metarater_figure_fits else [])

    def lead_tables(self) -> list[str]:
        """The papers' numbered tables, then the comparison with the published numbers and the
        claims judged on them (rules/papers.smk); none when no paper table has rows."""
        return [*self.numbered_tables, VS_PUBLISHED, CLAIMS] if self.numbered_tables else []

    def winrate_tables(self) -> list[str]:
        """The win-rate table (rule `winrate`), when there are comparisons."""
        return list(WINRATE_TABLES) if self.instruct else []

    def winrate_figures(self) -> list[str]:
        return list(WINRATE_FIGURES) if self.instruct else []

    def analysis_tables(self) -> list[str]:
        """Tables of the analyses: of the annotated corpus, then of the judge's labels."""
        return self.analysis.tables() + self.analysis.label_tables()

    def analysis_figures(self) -> list[str]:
        return self.analysis.figures() + self.analysis.label_figures()

    def report_tables(self) -> list[str]:
        """Tables of the HTML report, in its order: the papers' tables, the results, the win
        rates, the analyses, then the judge's failure counts."""
        return (self.lead_tables() + list(TABLES) + self.winrate_tables() + self.analysis_tables()
                + [JUDGE_FAILURES])

    def report_figures(self) -> list[str]:
        return (self.paper_charts + self.figures() + self.winrate_figures()
                + self.analysis_figures())

    def caption_stems(self) -> list[str]:
        """The caption files (report/{stem}.rst) the HTML report reads, each once."""
        return list(dict.fromkeys([table_caption(name) for name in self.report_tables()]
                                  + [figure_caption(name) for name in self.report_figures()]))

    def paper_tables(self) -> list[str]:
        """Every table of the three papers this configuration regenerates."""
        return (self.lead_tables() + list(TABLES) + self.winrate_tables() + self.rater_tables
                + [ANNOTATION_THROUGHPUT] + self.analysis_tables() + list(COST_TABLES))

    def paper_figures(self) -> list[str]:
        return self.report_figures()


def report_plan(config: dict) -> ReportPlan:
    # Imported here: `selectlab report` reads the names above and needs none of the raters.
    from selectlab.raters.resolve import table_names as rater_table_names

    papers = paper_plan(config)
    return ReportPlan(metarater_figure_fits(config), rater_table_names(config),
                      analysis_plan(config),
                      [t["name"] for t in papers["tables"] + papers["rater_tables"]],
                      chart_names(papers), instruct_configured(config))


def paper_caption(name: str) -> str | None:
    """The caption of a paper's numbered table or chart: one for all tables, one for all
    charts (the heading names the table)."""
    return f"paper_{PAPER_LAYOUTS[name].item}" if name in PAPER_LAYOUTS else None


def environments(config: dict) -> list[str]:
    """Every image a job of this configuration runs in, each one's package list archived: the
    cpu and train images, the annotation families' images, vllm's for a vLLM judge, and the
    images of instruction following's answer generation and judging."""
    families = {container_key(config, family) for family in family_names(config)}
    judge = {"vllm"} if config["judge"]["backend"]["kind"] == "vllm" else set()
    instruct = ({instruct_container_key(config, stage) for stage in ("generate", "judge")}
                if instruct_configured(config) else set())
    return sorted(set(ENVIRONMENTS) | families | judge | instruct)


def job_summaries(config: dict, root: str) -> list[str]:
    """The annotation throughput table and the judge summaries, archived beside the tables
    (stripped of their timings like every member, selectlab.report.archive)."""
    return [layout.table(root, ANNOTATION_THROUGHPUT, "csv")] + [
        layout.judge_summary(root, protocol) for protocol in configured_protocols(config)]


def table_caption(name: str) -> str:
    """The caption file stem of a table."""
    return TABLE_CAPTIONS.get(name) or paper_caption(name) or analysis_caption_stem(name)


def figure_caption(name: str) -> str:
    return paper_caption(name) or analysis_caption_stem(name)


def heading(name: str) -> str:
    """A table's or figure's heading in the report: listed here, a paper table's own caption,
    or the analysis output's."""
    if name in HEADINGS:
        return HEADINGS[name]
    return PAPER_LAYOUTS[name].caption if name in PAPER_LAYOUTS else analysis_heading(name)


def icl_group_order(config: dict) -> list[str]:
    """ICL table groups in display order: local task kinds, or the configured tasks' groups."""
    icl = config["evaluation"]["icl"]
    if icl["tasks"] == "local":
        return list(icl.get("local_tasks", {}).get("kinds", ["continuation", "cloze"]))
    return list(dict.fromkeys(task["group"] for task in icl["tasks"]))


def report_descriptions(config: dict) -> dict:
    """What the tables and figures show about each variant; `order` keeps the config's order
    through the sorted-key JSON the workflow passes (see `config_order`)."""
    return {
        name: {"family": v["family"], "method": v["method"], "label": variant_label(config, name),
               "params": v.get("params", {}), "order": index}
        for index, (name, v) in enumerate(config["variants"].items())
    }


def config_order(descriptions: dict) -> dict:
    """`report_descriptions` back in config order (JSON params arrive with sorted keys)."""
    return dict(sorted(descriptions.items(), key=lambda item: item[1].get("order", 0)))


def report_params(config: dict) -> dict:
    """What `selectlab report tables` and `figures` need about the variants."""
    return {
        "descriptions": report_descriptions(config),
        "baseline": config["evaluation"]["baseline"],
        "group_order": icl_group_order(config),
        "notes": judge_notes(config),
    }


def metarater_figure_fits(config: dict) -> list[tuple[str, int]]:
    """Per search, the fit on the most proxies any variant uses (what the figures show)."""
    largest: dict[str, int] = {}
    for search, proxies in metarater_fits(config):
        largest[search] = max(proxies, largest.get(search, 0))
    return list(largest.items())


def metarater_report(config: dict) -> dict:
    """What the Meta-rater figures need besides the fits: (search, N, table label) per variant."""
    variants = []
    for name, variant in config["variants"].items():
        if variant["method"] == "metarater":
            params = selection_params(config, name)
            variants.append([params["search"], int(params["proxies"]), variant.get("label", name)])
    return {"variants": variants}
