# `snakemake paper_figures`: every table and figure of the three papers that this configuration
# regenerates (docs/paper_figures.md maps each to the papers' numbering). The names come from
# selectlab.report.plan, which the rules that write them read too, so only outputs the config
# produces appear.


rule paper_figures:
    input:
        tables=expand(layout.table(RUN), name=REPORT.paper_tables(), ext=["csv", "md"]),
        figures=expand(layout.figure(RUN), name=REPORT.paper_figures()),
        # Meta-rater's learned weights (its Table 10; drawn in figures/metarater_weights.png).
        weights=select_cfg.metarater_fit_files(config, RUN),
    localrule: True
