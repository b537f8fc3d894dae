# Analysis of the annotated corpus (selectlab.analysis): a seeded sample of documents with every
# score, then score distributions per source, correlation heatmaps and DataMan's ratings vs the
# reference LM's NLL drawn from it; DataMan's corpus tables count every document, shard by shard.


if ANALYSIS.families:

    rule analysis_sample:
        input:
            meta=expand(f"{RUN}/attributes/meta/{{shard}}.parquet", shard=SHARDS),
            sidecars=expand(
                f"{RUN}/attributes/{{family}}/{{shard}}.parquet",
                family=list(ANALYSIS.families),
                shard=SHARDS,
            ),
        output:
            sample=f"{RUN}/analysis/sample.parquet",
            summary=f"{RUN}/analysis/sample.json",
        log:
            f"{LOGS}/analysis/sample.log",
        container:
            CONTAINERS["cpu"]
        resources:
            mem_mb=8000,
            runtime=60,
        params:
            cfg=json_param({"sample_rows": ANALYSIS.sample_rows, "seed": ANALYSIS.seed}),
        shell:
            "selectlab analysis sample --params {params.cfg:q} --meta {input.meta}"
            " --sidecars {input.sidecars} --out {output.sample}"
            " --summary {output.summary} > {log} 2>&1"

    rule analysis_figures:
        input:
            sample=f"{RUN}/analysis/sample.parquet",
        output:
            **{
                name: report(
                    f"{RUN}/figures/{name}.png",
                    caption=f"../report/{analysis_cfg.caption_stem(name)}.rst",
                    category="Analysis",
                )
                for name in ANALYSIS.figures()
            },
            **{
                f"{name}_{ext}": f"{RUN}/tables/{name}.{ext}"
                for name in ANALYSIS_FIGURE_TABLES
                for ext in ["csv", "md"]
            },
            matrices=expand(
                f"{RUN}/analysis/{{name}}.csv", name=analysis_cfg.matrices(ANALYSIS)
            ),
        log:
            f"{LOGS}/analysis/figures.log",
        container:
            CONTAINERS["cpu"]
        resources:
            mem_mb=4000,
            runtime=30,
        params:
            cfg=json_param(analysis_cfg.figure_params(config, judge_notes())),
            figures_dir=lambda w, output: os.path.dirname(output[0]),
            matrices_dir=lambda w, output: os.path.dirname(output.matrices[0]),
            tables_dir=lambda w, output: (
                f"--tables-dir {os.path.dirname(output[ANALYSIS_FIGURE_TABLES[0] + '_csv'])}"
                if ANALYSIS_FIGURE_TABLES
                else ""
            ),
        shell:
            "selectlab analysis figures --params {params.cfg:q} --sample {input.sample}"
            " --figures-dir {params.figures_dir} --matrices-dir {params.matrices_dir}"
            " {params.tables_dir} > {log} 2>&1"


if ANALYSIS.dataman:

    rule analysis_dataman_tables:
        input:
            meta=expand(f"{RUN}/attributes/meta/{{shard}}.parquet", shard=SHARDS),
            sidecars=expand(
                f"{RUN}/attributes/{ANALYSIS.dataman}/{{shard}}.parquet", shard=SHARDS
            ),
        output:
            corpus_csv=report(
                f"{RUN}/tables/{analysis_cfg.DATAMAN_CORPUS}.csv",
                caption=f"../report/{analysis_cfg.DATAMAN_CORPUS}.rst",
                category="Analysis",
            ),
            corpus_md=f"{RUN}/tables/{analysis_cfg.DATAMAN_CORPUS}.md",
            means_csv=report(
                f"{RUN}/tables/{analysis_cfg.DATAMAN_DOMAIN_MEANS}.csv",
                caption=f"../report/{analysis_cfg.DATAMAN_DOMAIN_MEANS}.rst",
                category="Analysis",
            ),
            means_md=f"{RUN}/tables/{analysis_cfg.DATAMAN_DOMAIN_MEANS}.md",
        log:
            f"{LOGS}/analysis/dataman_tables.log",
        container:
            CONTAINERS["cpu"]
        resources:
            mem_mb=4000,
            runtime=60,
        params:
            notes=json_param(judge_notes()),
        shell:
            "selectlab analysis dataman-tables --meta {input.meta} --sidecars {input.sidecars}"
            " --notes {params.notes:q} --out-corpus-csv {output.corpus_csv}"
            " --out-corpus-md {output.corpus_md} --out-means-csv {output.means_csv}"
            " --out-means-md {output.means_md} > {log} 2>&1"


# Analyses of the judge's labels themselves (the raters' training sets): QuRating Figure 5,
# DataMan Table 6 and Figure 5 on its fine-tuning set.
LABEL_FIGURES = analysis_cfg.label_figures(config)
LABEL_TABLES = analysis_cfg.label_tables(config)
LABEL_PROTOCOLS = [
    p for p in ("qurating", "dataman") if p in config["judge"]["protocols"]
]


if LABEL_FIGURES:

    rule analysis_judge_labels:
        input:
            **{
                protocol: f"{RUN}/judgments/{protocol}/labels.parquet"
                for protocol in LABEL_PROTOCOLS
            },
        output:
            figures=expand(f"{RUN}/figures/{{name}}.png", name=LABEL_FIGURES),
            tables=expand(
                f"{RUN}/tables/{{name}}.{{ext}}", name=LABEL_TABLES, ext=["csv", "md"]
            ),
            matrices=expand(f"{RUN}/analysis/{{name}}.csv", name=LABEL_FIGURES),
        log:
            f"{LOGS}/analysis/judge_labels.log",
        container:
            CONTAINERS["cpu"]
        params:
            labels=lambda w, input: " ".join(
                f"--{protocol} {input[protocol]}" for protocol in LABEL_PROTOCOLS
            ),
            notes=json_param(judge_notes()),
            figures_dir=lambda w, output: os.path.dirname(output.figures[0]),
            tables_dir=f"{RUN}/tables",
            matrices_dir=lambda w, output: os.path.dirname(output.matrices[0]),
        shell:
            "selectlab analysis judge-labels {params.labels} --notes {params.notes:q}"
            " --figures-dir {params.figures_dir} --tables-dir {params.tables_dir}"
            " --matrices-dir {params.matrices_dir} > {log} 2>&1"
