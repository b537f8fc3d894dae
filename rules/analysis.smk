# Analysis of the annotated corpus (selectlab.analysis): a seeded sample of documents with every
# score, then score distributions per source, correlation heatmaps and DataMan's ratings vs the
# reference LM's NLL drawn from it; DataMan's corpus tables count every document, shard by shard.
from selectlab.analysis import plan as analysis_cfg

ANALYSIS = analysis_cfg.analysis_plan(config)
ANALYSIS_FIGURE_TABLES = ANALYSIS.figure_tables()
# The analysis figures and tables, of the annotated corpus and of the judge's labels (the
# report shows them too).
ANALYSIS_TARGETS = expand(
    layout.figure(RUN), name=ANALYSIS.figures() + ANALYSIS.label_figures()
) + expand(
    layout.table(RUN),
    name=ANALYSIS.tables() + ANALYSIS.label_tables(),
    ext=["csv", "md"],
)


if ANALYSIS.families:

    # One sample per pool that some family annotates first, with every family annotating it.
    rule analysis_sample:
        # The pool's ready file and each family's throughput table stand for every shard's
        # sidecars, as for selection (rules/select.smk).
        input:
            pool=lambda w: pool_cfg.ready_file(RUN, w.pool),
            scores=lambda w: [
                layout.family_throughput(RUN, family, "csv")
                for family in ANALYSIS.samples[w.pool]
            ],
        output:
            sample=layout.analysis_sample(RUN),
            summary=layout.analysis_sample_summary(RUN),
        log:
            layout.job_log(RUN, "analysis", "sample_{pool}"),
        wildcard_constraints:
            pool=names_pattern(list(ANALYSIS.samples)),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("analysis_sample")
        resources:
            **rule_resources("analysis_sample"),
        params:
            cfg=json_param({"sample_rows": ANALYSIS.sample_rows, "seed": ANALYSIS.seed}),
            attributes_dir=lambda w, input: os.path.dirname(
                os.path.dirname(input.scores[0])
            ),
            families=lambda w: ANALYSIS.samples[w.pool],
        shell:
            "selectlab analysis sample --params {params.cfg:q}"
            " --attributes-dir {params.attributes_dir} --pool {input.pool}"
            " --families {params.families} --out {output.sample}"
            " --summary {output.summary} > {log} 2>&1"

    rule analysis_figures:
        input:
            samples=expand(layout.analysis_sample(RUN), pool=list(ANALYSIS.samples)),
        output:
            **{
                name: report(
                    layout.figure(RUN, name),
                    caption=caption(analysis_cfg.caption_stem(name)),
                    category="Analysis",
                )
                for name in ANALYSIS.figures()
            },
            **{
                f"{name}_{ext}": layout.table(RUN, name, ext)
                for name in ANALYSIS_FIGURE_TABLES
                for ext in ["csv", "md"]
            },
            matrices=expand(
                layout.analysis_matrix(RUN), name=analysis_cfg.matrices(ANALYSIS)
            ),
        log:
            layout.job_log(RUN, "analysis", "figures"),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("analysis_figures")
        resources:
            **rule_resources("analysis_figures"),
        params:
            cfg=json_param(analysis_cfg.figure_params(config, JUDGE_NOTES)),
            figures_dir=lambda w, output: os.path.dirname(output[0]),
            matrices_dir=lambda w, output: os.path.dirname(output.matrices[0]),
            tables_dir=lambda w, output: (
                f"--tables-dir {os.path.dirname(output[ANALYSIS_FIGURE_TABLES[0] + '_csv'])}"
                if ANALYSIS_FIGURE_TABLES
                else ""
            ),
        shell:
            "selectlab analysis figures --params {params.cfg:q} --samples {input.samples}"
            " --figures-dir {params.figures_dir} --matrices-dir {params.matrices_dir}"
            " {params.tables_dir} > {log} 2>&1"


if ANALYSIS.dataman:

    rule analysis_dataman_tables:
        input:
            pool=pool_cfg.ready_file(RUN, ANALYSIS.dataman_pool),
            scores=layout.family_throughput(RUN, ANALYSIS.dataman, "csv"),
        output:
            corpus_csv=report(
                layout.table(RUN, analysis_cfg.DATAMAN_CORPUS, "csv"),
                caption=caption(analysis_cfg.DATAMAN_CORPUS),
                category="Analysis",
            ),
            corpus_md=layout.table(RUN, analysis_cfg.DATAMAN_CORPUS, "md"),
            means_csv=report(
                layout.table(RUN, analysis_cfg.DATAMAN_DOMAIN_MEANS, "csv"),
                caption=caption(analysis_cfg.DATAMAN_DOMAIN_MEANS),
                category="Analysis",
            ),
            means_md=layout.table(RUN, analysis_cfg.DATAMAN_DOMAIN_MEANS, "md"),
        log:
            layout.job_log(RUN, "analysis", "dataman_tables"),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("analysis_dataman_tables")
        resources:
            **rule_resources("analysis_dataman_tables"),
        params:
            notes=json_param(JUDGE_NOTES),
            # attributes/{family}/throughput.csv -> attributes/
            attributes_dir=lambda w, input: os.path.dirname(
                os.path.dirname(input.scores)
            ),
            family=ANALYSIS.dataman,
        shell:
            "selectlab analysis dataman-tables --attributes-dir {params.attributes_dir}"
            " --pool {input.pool} --family {params.family} --notes {params.notes:q} --out-corpus-csv {output.corpus_csv}"
            " --out-corpus-md {output.corpus_md} --out-means-csv {output.means_csv}"
            " --out-means-md {output.means_md} > {log} 2>&1"


# Analyses of the judge's labels themselves (the raters' training sets): QuRating Figure 5,
# DataMan Table 6 and Figure 5 on its fine-tuning set.
if ANALYSIS.label_protocols:

    rule analysis_judge_labels:
        input:
            **{
                protocol: layout.judge_labels(RUN, protocol)
                for protocol in ANALYSIS.label_protocols
            },
        output:
            figures=expand(layout.figure(RUN), name=ANALYSIS.label_figures()),
            tables=expand(
                layout.table(RUN), name=ANALYSIS.label_tables(), ext=["csv", "md"]
            ),
            matrices=expand(layout.analysis_matrix(RUN), name=ANALYSIS.label_figures()),
        log:
            layout.job_log(RUN, "analysis", "judge_labels"),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("analysis_judge_labels")
        resources:
            **rule_resources("analysis_judge_labels"),
        params:
            labels=lambda w, input: " ".join(
                f"--{protocol} {input[protocol]}"
                for protocol in ANALYSIS.label_protocols
            ),
            notes=json_param(JUDGE_NOTES),
            figures_dir=lambda w, output: os.path.dirname(output.figures[0]),
            tables_dir=lambda w, output: (
                f"--tables-dir {os.path.dirname(output.tables[0])}"
                if output.tables
                else ""
            ),
            matrices_dir=lambda w, output: os.path.dirname(output.matrices[0]),
        shell:
            "selectlab analysis judge-labels {params.labels} --notes {params.notes:q}"
            " --figures-dir {params.figures_dir} {params.tables_dir}"
            " --matrices-dir {params.matrices_dir} > {log} 2>&1"
