# Cost: every model job records its FLOPs and time in its metrics file (selectlab.flops); the
# cost tables gather them per stage, per variant and in Meta-rater's Table 2 layout. cost_plan
# estimates them from the config alone, before anything runs (`snakemake cost_plan`).
from selectlab.cost import roles as cost_roles

COST_ROLES = cost_roles.table_roles(config)
INSTRUCT_COST = instruct_cfg.cost_inputs(config, RUN)
COST_TARGETS = expand(layout.table(RUN), name=report_cfg.COST_TABLES, ext="md")
THROUGHPUT = config.get("cost", {}).get("throughput", "profiles/slurm/throughput.yaml")


rule cost_table:
    input:
        models=expand(layout.final_model(RUN), variant=list(COST_ROLES["models"])),
        evaluations=EVAL_RESULTS
        + expand(layout.perplexity(RUN), variant=cost_roles.proxies_trained(config)),
        raters=expand(layout.rater_metrics(RUN), rater=RATERS),
        annotation=[layout.table(RUN, ANNOTATION_THROUGHPUT, "csv")]
        + expand(layout.family_throughput(RUN, ext="csv"), family=MATES_FAMILIES),
        judgments=expand(layout.judge_summary(RUN), protocol=PROTOCOLS),
        mates=mates_cfg.cost_inputs(config, RUN),
        sft=INSTRUCT_COST["sft"],
        generation=INSTRUCT_COST["generation"],
    output:
        expand(layout.table(RUN), name=report_cfg.COST_TABLES, ext=["csv", "md"]),
    log:
        layout.log(RUN, "cost_table"),
    container:
        CONTAINERS["cpu"]
    threads: rule_threads("cost_table")
    resources:
        **rule_resources("cost_table"),
    params:
        cfg=json_param(COST_ROLES),
        out_dir=lambda w, output: os.path.dirname(output[0]),
    shell:
        "selectlab cost table --params {params.cfg:q} --models {input.models}"
        " --evaluations {input.evaluations} --raters {input.raters}"
        " --annotation {input.annotation} --judgments {input.judgments}"
        " --mates {input.mates} --sft {input.sft} --generation {input.generation}"
        " --out-dir {params.out_dir} > {log} 2>&1"


rule cost_plan:
    input:
        THROUGHPUT,
    output:
        expand(
            layout.cost_plan(RUN),
            name=["jobs", "stages", "table2"],
            ext=["csv", "md"],
        ),
    log:
        layout.log(RUN, "cost_plan"),
    localrule: True
    container:
        CONTAINERS["cpu"]
    params:
        cfg=json_param(config),
        out_dir=lambda w, output: os.path.dirname(output[0]),
    shell:
        "selectlab cost plan --params {params.cfg:q} --throughput {input}"
        " --out-dir {params.out_dir} > {log} 2>&1"
