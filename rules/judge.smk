# Judge: per configured protocol (qurating, dataman, prrc; fineweb_edu, wanjuan), draw the
# documents to judge, then ask the configured judge backend; labels.parquet is what the raters
# train on. The sqlite cache next to the outputs is not declared, so a failed or re-run job
# keeps every finished judgment.
JUDGE_BACKEND = config["judge"]["backend"]
JUDGE_RESOURCES = config["judge"].get("resources", {})


wildcard_constraints:
    protocol=names_pattern(judge_cfg.configured_protocols(config)),


rule judge_sample:
    input:
        meta=expand(f"{RUN}/attributes/meta/{{shard}}.parquet", shard=JUDGE_SHARDS),
        raw=[path for shard in JUDGE_SHARDS for path in SHARD_FILES[shard]],
        tokenizer=f"{RUN}/tokenizer",
    output:
        f"{RUN}/judgments/{{protocol}}/sample.parquet",
    log:
        f"{LOGS}/judge_sample/{{protocol}}.log",
    container:
        CONTAINERS["cpu"]
    threads: 1
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        cfg=lambda w: json_param(judge_cfg.resolve_sample(config, w.protocol)),
        shard_files=json_param({shard: SHARD_FILES[shard] for shard in JUDGE_SHARDS}),
        id_root=ID_ROOT,
    shell:
        "selectlab judge sample --meta {input.meta} --shard-files {params.shard_files:q}"
        " --tokenizer {input.tokenizer} --id-root {params.id_root:q} --params {params.cfg:q}"
        " --out {output} > {log} 2>&1"


rule judge:
    input:
        sample=f"{RUN}/judgments/{{protocol}}/sample.parquet",
        ground_truth=judge_ground_truth(),
    output:
        judgments=f"{RUN}/judgments/{{protocol}}/judgments.parquet",
        labels=f"{RUN}/judgments/{{protocol}}/labels.parquet",
        summary=f"{RUN}/judgments/{{protocol}}/summary.csv",
    log:
        f"{LOGS}/judge/{{protocol}}.log",
    container:
        CONTAINERS["vllm"] if JUDGE_BACKEND["kind"] == "vllm" else CONTAINERS["train"]
    threads: 2
    resources:
        mem_mb=JUDGE_RESOURCES.get("mem_mb", 8000),
        runtime=JUDGE_RESOURCES.get("runtime", 60),
        gpu=judge_cfg.gpus(config),
    params:
        cfg=lambda w: json_param(judge_cfg.resolve_run(config, w.protocol)),
        cache=lambda w, output: os.path.join(
            os.path.dirname(output.labels), "cache.sqlite"
        ),
        ground_truth=lambda w, input: (
            f"--ground-truth {input.ground_truth}" if input.ground_truth else ""
        ),
    shell:
        "selectlab judge run --sample {input.sample} {params.ground_truth}"
        " --params {params.cfg:q} --gpus {resources.gpu} --cache {params.cache}"
        " --out-judgments {output.judgments} --out-labels {output.labels}"
        " --out-summary {output.summary} > {log} 2>&1"


# Failed judgments per protocol (counts only, no timings): shown in the report, archived.
rule judge_failures:
    input:
        expand(
            f"{RUN}/judgments/{{protocol}}/summary.csv",
            protocol=judge_cfg.configured_protocols(config),
        ),
    output:
        csv=f"{RUN}/tables/judge_failures.csv",
        md=f"{RUN}/tables/judge_failures.md",
    log:
        f"{LOGS}/judge_failures.log",
    container:
        CONTAINERS["cpu"]
    params:
        notes=json_param(judge_notes()),
    shell:
        "selectlab judge failures --summaries {input} --notes {params.notes:q}"
        " --out-csv {output.csv} --out-md {output.md} > {log} 2>&1"
