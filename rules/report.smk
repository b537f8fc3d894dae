# Report: tables, figures, an HTML page, provenance and one archive of everything a reader needs.
# Which tables and figures exist, and their captions, come from selectlab.report.plan, which
# `selectlab report` reads too. The report leads with the papers' own tables, the comparison
# with their numbers and the claims (rules/papers.smk).
from selectlab.report import plan as report_cfg

REPORT = report_cfg.report_plan(config)
REPORT_PARAMS = json_param(report_cfg.report_params(config))
# Every image a job of this configuration runs in; each one's package list is archived.
ENVIRONMENTS = report_cfg.environments(config)
# The judge summaries and the annotation throughput table, archived beside the tables.
JOB_SUMMARIES = report_cfg.job_summaries(config, RUN)


rule tables:
    input:
        EVAL_RESULTS,
        selections=expand(layout.selection(RUN), variant=VARIANTS),
        manifests=expand(layout.selection_manifest(RUN), variant=VARIANTS),
        train_logs=expand(layout.train_log(RUN), variant=VARIANTS),
    output:
        **{
            f"{name}_csv": report(
                layout.table(RUN, name, "csv"),
                caption=caption(report_cfg.table_caption(name)),
                category="Tables",
            )
            for name in report_cfg.TABLES
        },
        **{f"{name}_md": layout.table(RUN, name, "md") for name in report_cfg.TABLES},
    log:
        layout.log(RUN, "tables"),
    container:
        CONTAINERS["cpu"]
    threads: rule_threads("tables")
    resources:
        **rule_resources("tables"),
    params:
        cfg=REPORT_PARAMS,
        eval_dir=lambda w, input: os.path.dirname(os.path.dirname(input[0])),
        out_dir=parent_dir("main_csv"),
    shell:
        "selectlab report tables --params {params.cfg:q} --eval-dir {params.eval_dir}"
        " --selections {input.selections} --manifests {input.manifests}"
        " --train-logs {input.train_logs} --out-dir {params.out_dir} > {log} 2>&1"


rule figures:
    input:
        main=layout.table(RUN, "main", "csv"),
        train_logs=expand(layout.train_log(RUN), variant=VARIANTS),
        overlap=layout.table(RUN, "selection_overlap", "csv"),
        fits=[
            layout.metarater_weights(RUN, s, n)
            for s, n in REPORT.metarater_figure_fits
        ],
    output:
        **{
            name: report(
                layout.figure(RUN, name),
                caption=caption(report_cfg.figure_caption(name)),
                category="Figures",
            )
            for name in REPORT.figures()
        },
    log:
        layout.log(RUN, "figures"),
    container:
        CONTAINERS["cpu"]
    threads: rule_threads("figures")
    resources:
        **rule_resources("figures"),
    params:
        cfg=REPORT_PARAMS,
        out_dir=parent_dir("ppl_vs_icl"),
        metarater=json_param(report_cfg.metarater_report(config)),
        fits=optional_flag("--fits", "fits"),
    shell:
        "selectlab report figures --params {params.cfg:q} --main-table {input.main}"
        " --train-logs {input.train_logs} --overlap {input.overlap} {params.fits}"
        " --metarater {params.metarater:q} --out-dir {params.out_dir} > {log} 2>&1"


rule html_report:
    input:
        tables=expand(layout.table(RUN), name=REPORT.report_tables(), ext=["csv", "md"]),
        figures=expand(layout.figure(RUN), name=REPORT.report_figures()),
        captions=[layout.caption(stem) for stem in REPORT.caption_stems()],
    output:
        layout.html_report(RUN),
    log:
        layout.log(RUN, "html_report"),
    container:
        CONTAINERS["cpu"]
    threads: rule_threads("html_report")
    resources:
        **rule_resources("html_report"),
    params:
        title=f"selectlab results: {config['run']}",
        tables=REPORT.report_tables(),
        figures=REPORT.report_figures(),
        tables_dir=lambda w, input: os.path.dirname(input.tables[0]),
        figures_dir=lambda w, input: os.path.dirname(input.figures[0]),
        captions_dir=lambda w, input: os.path.dirname(input.captions[0]),
    shell:
        "selectlab report html --tables-dir {params.tables_dir} --figures-dir {params.figures_dir}"
        " --captions-dir {params.captions_dir} --title {params.title:q}"
        " --tables {params.tables} --figures {params.figures} --out {output} > {log} 2>&1"


rule environment:
    output:
        layout.environment(RUN),
    log:
        layout.job_log(RUN, "environment", "{env}"),
    container:
        lambda w: CONTAINERS[w.env]
    threads: rule_threads("environment")
    resources:
        **rule_resources("environment"),
    shell:
        "selectlab report environment --out {output} > {log} 2>&1"


rule provenance:
    input:
        # The tokenisation jobs' read reports (their meta sidecars stand for them).
        corpus=META_STANDING_FOR(SHARDS),
        # The embedded corpus's inputs: packages, versions, checksums.
        build=corpus_cfg.build_stats_inputs(config, RUN),
        # Your own families' and methods' files, copied into the record (selectlab.plugins).
        plugins=cfg.plugin_files(config),
    output:
        layout.provenance(RUN),
    log:
        layout.log(RUN, "provenance"),
    container:
        CONTAINERS["cpu"]
    threads: rule_threads("provenance")
    resources:
        **rule_resources("provenance"),
    params:
        # A function, so braces in config values (the chat template) are not read as wildcards.
        cfg=lambda w: json_param(config),
        build=optional_flag("--corpus-build", "build"),
        reports=expand(layout.shard_read_report(RUN), shard=SHARDS),
    shell:
        "selectlab report provenance --params {params.cfg:q} --reports {params.reports}"
        " {params.build} --out {output} > {log} 2>&1"


rule archive:
    input:
        rules.tables.output,
        rules.figures.output,
        rules.html_report.output,
        rules.provenance.output,
        layout.read_report(RUN),
        rules.judge_failures.output,
        expand(layout.environment(RUN), env=ENVIRONMENTS),
        expand(layout.selection_manifest(RUN), variant=VARIANTS),
        EVAL_RESULTS,
        expand(layout.train_log(RUN), variant=VARIANTS),
        select_cfg.metarater_fit_files(config, RUN),
        ANALYSIS_TARGETS,
        expand(layout.table(RUN), name=REPORT.rater_tables, ext=["csv", "md"]),
        expand(layout.table(RUN), name=REPORT.lead_tables(), ext=["csv", "md"]),
        [layout.paper_cells(RUN)] if REPORT.numbered_tables else [],
        expand(layout.figure(RUN), name=REPORT.paper_charts),
        expand(layout.table(RUN), name=REPORT.winrate_tables(), ext=["csv", "md"]),
        expand(layout.figure(RUN), name=REPORT.winrate_figures()),
        INSTRUCT_ARCHIVE,
        expand(layout.table(RUN), name=report_cfg.COST_TABLES, ext=["csv", "md"]),
        JOB_SUMMARIES,
    output:
        layout.archive(RUN),
    log:
        layout.log(RUN, "archive"),
    container:
        CONTAINERS["cpu"]
    threads: rule_threads("archive")
    resources:
        **rule_resources("archive"),
    params:
        run_dir=lambda w, output: os.path.dirname(os.path.dirname(output[0])),
    shell:
        "selectlab report archive --run-dir {params.run_dir} --files {input}"
        " --out {output} > {log} 2>&1"
