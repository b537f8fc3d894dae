# Report: tables, figures, an HTML page, provenance and one archive of everything a reader needs.
TABLE_NAMES = ["main", "perplexity_by_source", "icl_by_task", "selection_overlap"]
# Meta-rater's figures show each search fitted on the most proxies any variant uses.
METARATER_FITS = cfg.metarater_figure_fits(config)
METARATER_FIGURES = [
    "metarater_fit",
    "metarater_weights",
    "metarater_proxies",
    "metarater_pca",
]
FIGURE_NAMES = ["ppl_vs_icl", "loss_curves", "selection_overlap"] + (
    METARATER_FIGURES if METARATER_FITS else []
)
CAPTION = {"main": "main_table", "selection_overlap": "selection_overlap_table"}
ENVIRONMENTS = ["cpu", "train"]


rule tables:
    input:
        expand(
            f"{RUN}/eval/{{variant}}/{{kind}}.json",
            variant=VARIANTS,
            kind=["perplexity", "icl"],
        ),
        selections=expand(
            f"{RUN}/selections/{{variant}}/selection.parquet", variant=VARIANTS
        ),
    output:
        **{
            f"{name}_csv": report(
                f"{RUN}/tables/{name}.csv",
                caption=f"../report/{CAPTION.get(name, name)}.rst",
                category="Tables",
            )
            for name in TABLE_NAMES
        },
        **{f"{name}_md": f"{RUN}/tables/{name}.md" for name in TABLE_NAMES},
    log:
        f"{LOGS}/tables.log",
    container:
        CONTAINERS["cpu"]
    params:
        cfg=json_param(report_params()),
        eval_dir=lambda w, input: os.path.dirname(os.path.dirname(input[0])),
        out_dir=parent_dir("main_csv"),
    shell:
        "selectlab report tables --params {params.cfg:q} --eval-dir {params.eval_dir}"
        " --selections {input.selections} --out-dir {params.out_dir} > {log} 2>&1"


rule figures:
    input:
        main=f"{RUN}/tables/main.csv",
        train_logs=expand(f"{RUN}/models/{{variant}}/train_log.csv", variant=VARIANTS),
        overlap=f"{RUN}/tables/selection_overlap.csv",
        fits=[cfg.metarater_weights_path(RUN, s, n) for s, n in METARATER_FITS],
    output:
        **{
            name: report(
                f"{RUN}/figures/{name}.png",
                caption=f"../report/{name}.rst",
                category="Figures",
            )
            for name in FIGURE_NAMES
        },
    log:
        f"{LOGS}/figures.log",
    container:
        CONTAINERS["cpu"]
    params:
        cfg=json_param(report_params()),
        out_dir=parent_dir("ppl_vs_icl"),
        metarater=json_param(cfg.metarater_report(config)),
        fits=lambda w, input: f"--fits {input.fits}" if input.fits else "",
    shell:
        "selectlab report figures --params {params.cfg:q} --main-table {input.main}"
        " --train-logs {input.train_logs} --overlap {input.overlap} {params.fits}"
        " --metarater {params.metarater:q} --out-dir {params.out_dir} > {log} 2>&1"


# The analysis outputs (rules/analysis.smk) follow the results in the report, then the
# failure counts of the judge (rules/judge.smk).
REPORT_TABLES = TABLE_NAMES + ANALYSIS.tables() + ["judge_failures"]
REPORT_FIGURES = FIGURE_NAMES + ANALYSIS.figures()


rule html_report:
    input:
        tables=expand(
            f"{RUN}/tables/{{name}}.{{ext}}", name=REPORT_TABLES, ext=["csv", "md"]
        ),
        figures=expand(f"{RUN}/figures/{{name}}.png", name=REPORT_FIGURES),
        captions=expand(
            "report/{name}.rst",
            name=[CAPTION.get(n, analysis_cfg.caption_stem(n)) for n in REPORT_TABLES]
            + sorted({analysis_cfg.caption_stem(n) for n in REPORT_FIGURES}),
        ),
    output:
        f"{RUN}/report/report.html",
    log:
        f"{LOGS}/html_report.log",
    container:
        CONTAINERS["cpu"]
    params:
        title=f"selectlab results: {config['run']}",
        tables=REPORT_TABLES,
        figures=REPORT_FIGURES,
        tables_dir=lambda w, input: os.path.dirname(input.tables[0]),
        figures_dir=lambda w, input: os.path.dirname(input.figures[0]),
        captions_dir=lambda w, input: os.path.dirname(input.captions[0]),
    shell:
        "selectlab report html --tables-dir {params.tables_dir} --figures-dir {params.figures_dir}"
        " --captions-dir {params.captions_dir} --title {params.title:q}"
        " --tables {params.tables} --figures {params.figures} --out {output} > {log} 2>&1"


rule environment:
    output:
        f"{RUN}/provenance/environment-{{env}}.txt",
    log:
        f"{LOGS}/environment/{{env}}.log",
    container:
        lambda w: CONTAINERS[w.env]
    shell:
        "selectlab report environment --out {output} > {log} 2>&1"


rule provenance:
    input:
        reports=expand(f"{RUN}/corpus/reports/{{shard}}.json", shard=SHARDS),
        # The embedded corpus's inputs: packages, versions, checksums.
        build=(
            [f"{RUN}/corpus/build_stats.json"]
            if config["corpus"]["mode"] == "embedded"
            else []
        ),
    output:
        f"{RUN}/provenance/provenance.json",
    log:
        f"{LOGS}/provenance.log",
    container:
        CONTAINERS["cpu"]
    params:
        cfg=json_param(config),
        build=lambda w, input: f"--corpus-build {input.build}" if input.build else "",
    shell:
        "selectlab report provenance --params {params.cfg:q} --reports {input.reports}"
        " {params.build} --out {output} > {log} 2>&1"


rule archive:
    input:
        rules.tables.output,
        rules.figures.output,
        rules.html_report.output,
        rules.provenance.output,
        f"{RUN}/tables/read_report.csv",
        rules.judge_failures.output,
        expand(f"{RUN}/provenance/environment-{{env}}.txt", env=ENVIRONMENTS),
        expand(f"{RUN}/selections/{{variant}}/manifest.json", variant=VARIANTS),
        expand(
            f"{RUN}/eval/{{variant}}/{{kind}}.json",
            variant=VARIANTS,
            kind=["perplexity", "icl"],
        ),
        expand(f"{RUN}/models/{{variant}}/train_log.csv", variant=VARIANTS),
        [cfg.metarater_weights_path(RUN, s, n) for s, n in cfg.metarater_fits(config)],
        analysis_targets(),
    output:
        f"{RUN}/archive/selectlab-{config['run']}.tar.gz",
    log:
        f"{LOGS}/archive.log",
    container:
        CONTAINERS["cpu"]
    params:
        run_dir=lambda w, output: os.path.dirname(os.path.dirname(output[0])),
    shell:
        "selectlab report archive --run-dir {params.run_dir} --files {input} --out {output} > {log} 2>&1"
