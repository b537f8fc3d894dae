# The papers' own tables (selectlab.papers): each paper's numbered tables in its shape, from
# every run of their rows (replicates included); the run's numbers beside the published ones;
# the claims ledger judged on them; the training snapshots a curve figure shows. The table and
# chart names come from selectlab.report.plan (REPORT, rules/report.smk), which the report and
# `paper_figures` read too. config/published/ and config/claims.yaml are inputs, so editing
# them reruns exactly these jobs.
import glob

from selectlab.papers import plan as papers_plan

PAPER_PLAN = papers_plan.paper_plan(config)
PAPER_PLAN_PARAM = json_param(PAPER_PLAN)
# What the per-paper tables read: every run's results and every curve snapshot's ICL results.
PAPER_RESULTS = papers_plan.result_inputs(PAPER_PLAN, RUN)
PAPER_ROWS = papers_plan.table_rows(PAPER_PLAN)
# A training snapshot evaluates only its curve figure's settings.
CURVE_ICL_PARAMS = evaluate_cfg.curve_icl_params(config)
# Shipped with the workflow, so found beside the Snakefile whatever the working directory.
PUBLISHED = sorted(glob.glob(os.path.join(workflow.basedir, "config/published/*.csv")))
CLAIMS = os.path.join(workflow.basedir, "config/claims.yaml")
CLAIMS_SCHEMA = os.path.join(workflow.basedir, "config/schema/claims.schema.yaml")
if not PUBLISHED:
    raise ValueError(f"no published tables in {workflow.basedir}/config/published/")


if PAPER_PLAN["curve_runs"]:

    rule eval_curve:
        input:
            model=layout.final_model(RUN),
            tasks=[layout.icl_tasks(RUN)] if LOCAL_ICL else [],
            data=layout.lm_eval_data(RUN),
        output:
            layout.curve_icl(RUN),
        log:
            layout.job_log(RUN, "eval_curve", "{variant}/{fraction}"),
        benchmark:
            layout.benchmark(RUN, "eval_curve", "{variant}/{fraction}")
        wildcard_constraints:
            fraction="0\\.[0-9]+",
        container:
            CONTAINERS["train"]
        threads: job_threads(ICL_SHAPE)
        resources:
            **job_resources(ICL_SHAPE),
        params:
            snapshot=lambda w: layout.snapshot(RUN, w.variant, w.fraction),
            cfg=lambda w: json_param(CURVE_ICL_PARAMS[w.variant]),
            tasks=optional_flag("--tasks-dir", "tasks"),
            data_cache=ICL_DATA_CACHE_FLAG,
            cache=lambda w: layout.curve_icl_cache(RUN, w.variant, w.fraction),
        shell:
            "selectlab evaluate icl --model {params.snapshot} {params.tasks} {params.data_cache}"
            " --params {params.cfg:q} --cache-dir {params.cache} --out {output} > {log} 2>&1"


if REPORT.numbered_tables:

    rule paper_tables:
        input:
            PAPER_RESULTS,
            # Read for the rows short of their budget (a note under their tables).
            manifests=expand(layout.selection_manifest(RUN), variant=PAPER_ROWS),
            train_logs=expand(layout.train_log(RUN), variant=PAPER_ROWS),
        output:
            cells=layout.paper_cells(RUN),
            tables=expand(
                layout.table(RUN), name=REPORT.numbered_tables, ext=["csv", "md"]
            ),
        log:
            layout.log(RUN, "paper_tables"),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("paper_tables")
        resources:
            **rule_resources("paper_tables"),
        params:
            plan=PAPER_PLAN_PARAM,
            notes=json_param(JUDGE_NOTES),
            run_dir=lambda w, output: os.path.dirname(os.path.dirname(output.cells)),
        shell:
            "selectlab papers tables --params {params.plan:q} --run-dir {params.run_dir}"
            " --notes {params.notes:q} > {log} 2>&1"

    rule vs_published:
        input:
            cells=layout.paper_cells(RUN),
            published=PUBLISHED,
        output:
            csv=layout.table(RUN, report_cfg.VS_PUBLISHED, "csv"),
            md=layout.table(RUN, report_cfg.VS_PUBLISHED, "md"),
        log:
            layout.log(RUN, "vs_published"),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("vs_published")
        resources:
            **rule_resources("vs_published"),
        params:
            scale=PAPER_PLAN["scale"],
            notes=json_param(JUDGE_NOTES),
        shell:
            "selectlab papers vs-published --cells {input.cells} --published {input.published}"
            " --scale {params.scale:q} --notes {params.notes:q} --out-csv {output.csv}"
            " --out-md {output.md} > {log} 2>&1"

    rule claims:
        input:
            cells=layout.paper_cells(RUN),
            claims=CLAIMS,
            schema=CLAIMS_SCHEMA,
        output:
            csv=layout.table(RUN, report_cfg.CLAIMS, "csv"),
            md=layout.table(RUN, report_cfg.CLAIMS, "md"),
        log:
            layout.log(RUN, "claims"),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("claims")
        resources:
            **rule_resources("claims"),
        params:
            scale=PAPER_PLAN["scale"],
            notes=json_param(JUDGE_NOTES),
        shell:
            "selectlab papers claims --cells {input.cells} --claims {input.claims}"
            " --schema {input.schema} --scale {params.scale:q} --notes {params.notes:q}"
            " --out-csv {output.csv} --out-md {output.md} > {log} 2>&1"

    rule paper_charts:
        input:
            cells=layout.paper_cells(RUN),
        output:
            **{
                name: report(
                    layout.figure(RUN, name),
                    caption=caption(report_cfg.figure_caption(name)),
                    category="Papers",
                )
                for name in REPORT.paper_charts
            },
        log:
            layout.log(RUN, "paper_charts"),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("paper_charts")
        resources:
            **rule_resources("paper_charts"),
        params:
            plan=PAPER_PLAN_PARAM,
            out_dir=lambda w, output: os.path.dirname(output[0]),
        shell:
            "selectlab papers figures --params {params.plan:q} --cells {input.cells}"
            " --out-dir {params.out_dir} > {log} 2>&1"
