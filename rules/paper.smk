# `snakemake paper_figures`: every table and figure of the three papers that this configuration
# regenerates (docs/paper_figures.md maps each to the papers' numbering). Names come from the
# rules that write them, under the same conditions, so only outputs the config produces appear.
PAPER_TABLES = (
    TABLE_NAMES
    + RATER_TABLES
    + ["annotation_throughput"]
    + ANALYSIS.tables()
    + cost_roles.COST_TABLE_NAMES
)
PAPER_FIGURES = FIGURE_NAMES + ANALYSIS.figures()


rule paper_figures:
    input:
        tables=expand(
            f"{RUN}/tables/{{name}}.{{ext}}", name=PAPER_TABLES, ext=["csv", "md"]
        ),
        figures=expand(f"{RUN}/figures/{{name}}.png", name=PAPER_FIGURES),
        # Meta-rater's learned weights (its Table 10; drawn in figures/metarater_weights.png).
        weights=[
            cfg.metarater_weights_path(RUN, search, proxies)
            for search, proxies in cfg.metarater_fits(config)
        ],
    localrule: True
