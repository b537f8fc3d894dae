# The papers' own tables (selectlab.papers): each paper's numbered tables in its shape, from
# every run of their rows (replicates included); the run's numbers beside the published ones;
# the claims ledger judged on them. config/published/ and config/claims.yaml are inputs, so
# editing them reruns exactly these jobs.
PAPER_TABLES_DIR = f"{RUN}/tables"
PAPER_TABLE_NAMES = [table["name"] for table in PAPER_PLAN["tables"]]
# Shipped with the workflow, so found beside the Snakefile whatever the working directory.
PUBLISHED = sorted(glob.glob(os.path.join(workflow.basedir, "config/published/*.csv")))
CLAIMS = os.path.join(workflow.basedir, "config/claims.yaml")
CLAIMS_SCHEMA = os.path.join(workflow.basedir, "config/schema/claims.schema.yaml")
if not PUBLISHED:
    raise ValueError(f"no published tables in {workflow.basedir}/config/published/")
# What the report and paper_figures show first: the papers' tables, then how they compare.
PAPER_REPORT_TABLES = (
    PAPER_TABLE_NAMES + ["vs_published", "claims"] if PAPER_TABLE_NAMES else []
)
PAPER_FIGURE_NAMES = papers_layouts.chart_names(PAPER_PLAN)


# Training curves (Meta-rater Figure 1): the snapshots each curve row's training saved.
CURVE_EVALS = [
    f"{RUN}/eval/{run}/curve/{fraction}/icl.json"
    for run, fraction in PAPER_PLAN["curve_runs"]
]


if CURVE_EVALS:

    rule eval_curve:
        input:
            model=f"{RUN}/models/{{variant}}/final",
            tasks=[f"{RUN}/eval/tasks"] if LOCAL_ICL else [],
        output:
            f"{RUN}/eval/{{variant}}/curve/{{fraction}}/icl.json",
        log:
            f"{LOGS}/eval_curve/{{variant}}/{{fraction}}.log",
        wildcard_constraints:
            fraction="0\\.[0-9]+",
        container:
            CONTAINERS["train"]
        threads: 2
        resources:
            mem_mb=lambda w: eval_mem_mb(w.variant),
            runtime=240,
            gpu=eval_gpu(),
            gpu_model=lambda w: eval_gpu_resource(w.variant, "gpu_model"),
            cpus_per_gpu=lambda w: eval_gpu_resource(w.variant, "cpus_per_gpu"),
        params:
            snapshot=lambda w, input: os.path.join(
                input.model, "snapshots", f"f{float(w.fraction):g}"
            ),
            cfg=lambda w: json_param(
                {
                    k: ICL[k]
                    for k in ("tasks", "batch_size", "dtype", "limit")
                    if k in ICL
                }
                | {"seed": config["seed"], "settings_only": True}
                | {
                    "settings": [
                        [s.task, s.shots]
                        for s in papers_protocols.curve_settings(
                            config, base_variant(w.variant)
                        )
                    ]
                }
            ),
            tasks=lambda w, input: f"--tasks-dir {input.tasks}" if input.tasks else "",
            cache=lambda w, output: os.path.join(
                os.path.dirname(output[0]), "icl_cache"
            ),
        shell:
            "selectlab evaluate icl --model {params.snapshot} {params.tasks}"
            " --params {params.cfg:q} --cache-dir {params.cache} --out {output} > {log} 2>&1"


if PAPER_TABLE_NAMES:

    rule paper_tables:
        input:
            expand(
                f"{RUN}/eval/{{variant}}/{{kind}}.json",
                variant=PAPER_RUNS,
                kind=["perplexity", "icl"],
            ),
            CURVE_EVALS,
        output:
            cells=f"{PAPER_TABLES_DIR}/paper_cells.csv",
            tables=expand(
                f"{PAPER_TABLES_DIR}/{{name}}.{{ext}}",
                name=PAPER_TABLE_NAMES,
                ext=["csv", "md"],
            ),
        log:
            f"{LOGS}/paper_tables.log",
        container:
            CONTAINERS["cpu"]
        params:
            plan=json_param(PAPER_PLAN),
            notes=json_param(judge_notes()),
            eval_dir=f"{RUN}/eval",
            out_dir=parent_dir("cells"),
        shell:
            "selectlab papers tables --params {params.plan:q} --eval-dir {params.eval_dir}"
            " --notes {params.notes:q} --out-dir {params.out_dir} > {log} 2>&1"

    rule vs_published:
        input:
            cells=f"{PAPER_TABLES_DIR}/paper_cells.csv",
            published=PUBLISHED,
        output:
            csv=f"{PAPER_TABLES_DIR}/vs_published.csv",
            md=f"{PAPER_TABLES_DIR}/vs_published.md",
        log:
            f"{LOGS}/vs_published.log",
        container:
            CONTAINERS["cpu"]
        params:
            scale=PAPER_PLAN["scale"],
            notes=json_param(judge_notes()),
        shell:
            "selectlab papers vs-published --cells {input.cells} --published {input.published}"
            " --scale {params.scale:q} --notes {params.notes:q} --out-csv {output.csv}"
            " --out-md {output.md} > {log} 2>&1"

    rule claims:
        input:
            cells=f"{PAPER_TABLES_DIR}/paper_cells.csv",
            claims=CLAIMS,
            schema=CLAIMS_SCHEMA,
        output:
            csv=f"{PAPER_TABLES_DIR}/claims.csv",
            md=f"{PAPER_TABLES_DIR}/claims.md",
        log:
            f"{LOGS}/claims.log",
        container:
            CONTAINERS["cpu"]
        params:
            scale=PAPER_PLAN["scale"],
            notes=json_param(judge_notes()),
        shell:
            "selectlab papers claims --cells {input.cells} --claims {input.claims}"
            " --schema {input.schema} --scale {params.scale:q} --notes {params.notes:q}"
            " --out-csv {output.csv} --out-md {output.md} > {log} 2>&1"

    rule paper_charts:
        input:
            cells=f"{PAPER_TABLES_DIR}/paper_cells.csv",
        output:
            **{
                name: report(
                    f"{RUN}/figures/{name}.png",
                    caption=f"../report/{papers_layouts.report_caption(name)}.rst",
                    category="Papers",
                )
                for name in PAPER_FIGURE_NAMES
            },
        log:
            f"{LOGS}/paper_charts.log",
        container:
            CONTAINERS["cpu"]
        params:
            plan=json_param(PAPER_PLAN),
            out_dir=lambda w, output: os.path.dirname(output[0]),
        shell:
            "selectlab papers figures --params {params.plan:q} --cells {input.cells}"
            " --out-dir {params.out_dir} > {log} 2>&1"
