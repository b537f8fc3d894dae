# Cost: every model job records its FLOPs and time in its metrics file (selectlab.flops); the
# cost tables gather them per stage, per variant and in Meta-rater's Table 2 layout. cost_plan
# estimates them from the config alone, before anything runs (`snakemake cost_plan`).
COST_ROLES = cost_roles.table_roles(config)
COST_TABLES = cost_roles.COST_TABLE_NAMES
THROUGHPUT = config.get("cost", {}).get("throughput", "profiles/slurm/throughput.yaml")


def cost_mates_files():
    """Every probe job's and fit job's metrics of every MATES variant."""
    files = []
    for variant in mates_cfg.mates_variants(config):
        for stage in mates_cfg.selected_stages(config, variant):
            directory = mates_cfg.mates_dir(RUN, variant, stage)
            files += expand(
                f"{directory}/probes/part{{part}}.json",
                part=mates_cfg.probe_parts(config, variant),
            )
            files.append(f"{directory}/metrics.json")
    return files


rule cost_table:
    input:
        models=expand(f"{RUN}/models/{{name}}/final", name=list(COST_ROLES["models"])),
        evaluations=expand(
            f"{RUN}/eval/{{variant}}/{{kind}}.json",
            variant=VARIANTS,
            kind=["perplexity", "icl"],
        )
        + expand(
            f"{RUN}/eval/{{proxy}}/perplexity.json",
            proxy=cost_roles.proxies_trained(config),
        ),
        raters=expand(f"{RUN}/raters/{{rater}}/metrics.json", rater=RATERS),
        annotation=[f"{RUN}/tables/annotation_throughput.csv"]
        + expand(f"{RUN}/attributes/{{family}}/throughput.csv", family=MATES_FAMILIES),
        judgments=expand(
            f"{RUN}/judgments/{{protocol}}/summary.csv",
            protocol=judge_cfg.configured_protocols(config),
        ),
        mates=cost_mates_files(),
    output:
        expand(f"{RUN}/tables/{{name}}.{{ext}}", name=COST_TABLES, ext=["csv", "md"]),
    log:
        f"{LOGS}/cost_table.log",
    container:
        CONTAINERS["cpu"]
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        cfg=json_param(COST_ROLES),
        out_dir=lambda w, output: os.path.dirname(output[0]),
    shell:
        "selectlab cost table --params {params.cfg:q} --models {input.models}"
        " --evaluations {input.evaluations} --raters {input.raters}"
        " --annotation {input.annotation} --judgments {input.judgments}"
        " --mates {input.mates} --out-dir {params.out_dir} > {log} 2>&1"


rule cost_plan:
    input:
        THROUGHPUT,
    output:
        expand(
            f"{RUN}/cost/plan_{{name}}.{{ext}}",
            name=["jobs", "stages", "table2"],
            ext=["csv", "md"],
        ),
    log:
        f"{LOGS}/cost_plan.log",
    localrule: True
    params:
        cfg=json_param(config),
        out_dir=lambda w, output: os.path.dirname(output[0]),
    shell:
        "selectlab cost plan --params {params.cfg:q} --throughput {input}"
        " --out-dir {params.out_dir} > {log} 2>&1"
