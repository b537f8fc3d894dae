# Judge: per configured protocol (qurating, dataman, prrc; fineweb_edu, wanjuan), draw the
# documents to judge, then ask the configured judge backend; labels.parquet is what the raters
# train on. The sqlite cache next to the outputs is not declared, so a failed or re-run job
# keeps every finished judgment.
from selectlab.judge import resolve as judge_cfg
from selectlab.report.plan import JUDGE_FAILURES

PROTOCOLS = judge_cfg.configured_protocols(config)
JUDGE_SHARDS = judge_cfg.candidate_shards(
    SHARDS, config["judge"].get("sample", {}).get("max_shards")
)
JUDGE_SHAPE = judge_cfg.job_shape_of_judge(config)
JUDGE_CONTAINER = (
    CONTAINERS["vllm"]
    if config["judge"]["backend"]["kind"] == "vllm"
    else CONTAINERS["train"]
)
# Caveats every table carries (a simulated judge is not an LLM).
JUDGE_NOTES = judge_cfg.notes(config)
JUDGE_TARGETS = [
    path(RUN, protocol)
    for protocol in PROTOCOLS
    for path in (layout.judge_labels, layout.judge_summary)
]


wildcard_constraints:
    protocol=names_pattern(PROTOCOLS),


rule judge_sample:
    input:
        meta=expand(layout.meta_sidecar(RUN), shard=JUDGE_SHARDS),
        raw=[path for shard in JUDGE_SHARDS for path in SHARD_FILES[shard]],
        tokenizer=layout.tokenizer(RUN),
    output:
        layout.judge_sample(RUN),
    log:
        layout.job_log(RUN, "judge_sample", "{protocol}"),
    container:
        CONTAINERS["cpu"]
    threads: rule_threads("judge_sample")
    resources:
        **rule_resources("judge_sample"),
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
        sample=layout.judge_sample(RUN),
        ground_truth=judge_cfg.ground_truth_inputs(config, RUN),
    output:
        judgments=layout.judgments(RUN),
        labels=layout.judge_labels(RUN),
        summary=layout.judge_summary(RUN),
    log:
        layout.job_log(RUN, "judge", "{protocol}"),
    benchmark:
        layout.benchmark(RUN, "judge", "{protocol}")
    container:
        JUDGE_CONTAINER
    threads: JUDGE_SHAPE["cpus"]
    resources:
        **res.present(res.as_snakemake(JUDGE_SHAPE)),
        # The backend's batch size: speed, not answers (a resource, so it reruns nothing).
        throughput=json_param(judge_cfg.resolve_throughput(config)),
    params:
        cfg=lambda w: json_param(judge_cfg.resolve_run(config, w.protocol)),
        cache=lambda w: layout.judge_cache(RUN, w.protocol),
        ground_truth=optional_flag("--ground-truth", "ground_truth"),
    shell:
        "selectlab judge run --sample {input.sample} {params.ground_truth}"
        " --params {params.cfg:q} --throughput {resources.throughput:q}"
        " --gpus {resources.gpu} --cache {params.cache}"
        " --out-judgments {output.judgments} --out-labels {output.labels}"
        " --out-summary {output.summary} > {log} 2>&1"


# Failed judgments per protocol (counts only, no timings): shown in the report, archived.
rule judge_failures:
    input:
        expand(layout.judge_summary(RUN), protocol=PROTOCOLS),
    output:
        csv=layout.table(RUN, JUDGE_FAILURES, "csv"),
        md=layout.table(RUN, JUDGE_FAILURES, "md"),
    log:
        layout.log(RUN, "judge_failures"),
    container:
        CONTAINERS["cpu"]
    threads: rule_threads("judge_failures")
    resources:
        **rule_resources("judge_failures"),
    params:
        notes=json_param(JUDGE_NOTES),
    shell:
        "selectlab judge failures --summaries {input} --notes {params.notes:q}"
        " --out-csv {output.csv} --out-md {output.md} > {log} 2>&1"
