# Annotation: one sidecar per (rater family, shard), aligned row for row with the shard's meta
# sidecar. A family's kind (selectlab.annotate.registry) decides its fitted inputs, container and
# GPU use, so a new rater family needs a config entry, not a new rule. DSIR's n-gram counts and
# the offline reference LM are prepared once per run.
#
# The shard's raw files are read but not listed as inputs: the meta sidecar stands for them
# (tokenize_shard writes it from them, so it is rewritten whenever they change), and leaving
# them out keeps a paper-scale plan (thousands of raw files x 9 families) from spending most of
# its time resolving the same raw paths again for every family (benchmarks/dag_scale.py).


wildcard_constraints:
    family=names_pattern(ANNOTATE_FAMILIES),


# One command for a job of one shard and for a job of annotate.shards_per_job shards: every
# shard still gets its own sidecar and stats file. Batch sizes are resources, not params:
# they change how fast a job scores, not what it writes.
ANNOTATE_COMMAND = (
    "selectlab annotate run --family {wildcards.family} --params {params.cfg:q}"
    " --throughput {resources.throughput:q} --shard-files {params.shard_files:q}"
    " --meta-dir {params.meta_dir} --fitted {input.fitted}"
    " --max-doc-chars {params.max_doc_chars} --gpus {resources.gpu} --threads {threads}"
    " --out-dir {params.out_dir} --stats {output.stats} > {log} 2>&1"
)


rule annotate:
    input:
        meta=f"{RUN}/attributes/meta/{{shard}}.parquet",
        fitted=annotate_fitted_inputs,
    output:
        sidecar=f"{RUN}/attributes/{{family}}/{{shard}}.parquet",
        stats=f"{LOGS}/annotate/{{family}}/{{shard}}.json",
    log:
        f"{LOGS}/annotate/{{family}}/{{shard}}.log",
    wildcard_constraints:
        shard=ANNOTATE_ALONE_PATTERN,
    container:
        annotate_container
    threads: annotate_threads
    resources:
        mem_mb=annotate_resource("mem_mb"),
        runtime=annotate_resource("runtime"),
        gpu=annotate_resource("gpu"),
        throughput=annotate_throughput,
    params:
        cfg=lambda w: json_param(annotate_cfg.resolve_family(config, w.family)),
        shard_files=lambda w: json_param({w.shard: SHARD_FILES[w.shard]}),
        meta_dir=parent_dir_of_input("meta"),
        out_dir=parent_dir("sidecar"),
        max_doc_chars=config["corpus"]["reader"]["max_doc_chars"],
    shell:
        ANNOTATE_COMMAND


if ANNOTATE_BATCHES:

    rule annotate_batch:
        input:
            meta=expand(
                f"{RUN}/attributes/meta/{{{{batch}}}}{{suffix}}.parquet",
                suffix=ANNOTATE_SUFFIXES,
            ),
            fitted=annotate_fitted_inputs,
        output:
            sidecars=expand(
                f"{RUN}/attributes/{{{{family}}}}/{{{{batch}}}}{{suffix}}.parquet",
                suffix=ANNOTATE_SUFFIXES,
            ),
            stats=f"{LOGS}/annotate/{{family}}/{{batch}}_batch.json",
        log:
            f"{LOGS}/annotate/{{family}}/{{batch}}_batch.log",
        wildcard_constraints:
            batch=names_pattern(ANNOTATE_BATCHES),
        container:
            annotate_container
        threads: annotate_threads
        resources:
            mem_mb=annotate_resource("mem_mb", len(ANNOTATE_SUFFIXES)),
            runtime=annotate_resource("runtime", len(ANNOTATE_SUFFIXES)),
            gpu=annotate_resource("gpu"),
            throughput=annotate_throughput,
        params:
            cfg=lambda w: json_param(annotate_cfg.resolve_family(config, w.family)),
            shard_files=lambda w: json_param(
                {shard: SHARD_FILES[shard] for shard in ANNOTATE_BATCHES[w.batch]}
            ),
            meta_dir=parent_dir_of_input("meta"),
            out_dir=parent_dir("sidecars"),
            max_doc_chars=config["corpus"]["reader"]["max_doc_chars"],
        shell:
            ANNOTATE_COMMAND


if DSIR_FAMILIES:

    rule fit_dsir:
        input:
            meta=dsir_raw_meta,
            raw=dsir_raw_files,
            heldout=dsir_heldout,
            targets=lambda w: annotate_cfg.dsir_target_files(config, w.family),
        output:
            model=f"{RUN}/raters/{{family}}/model.npz",
            card=f"{RUN}/raters/{{family}}/rater_card.json",
        log:
            f"{LOGS}/fit_dsir/{{family}}.log",
        wildcard_constraints:
            family=names_pattern(DSIR_FAMILIES),
        container:
            CONTAINERS["cpu"]
        resources:
            mem_mb=4000,
            runtime=120,
        params:
            cfg=lambda w: json_param(annotate_cfg.resolve_fit_dsir(config, w.family)),
            shard_files=lambda w: json_param(dsir_shard_files(w.family)),
            heldout=lambda w, input: (
                f"--heldout {input.heldout}" if input.heldout else ""
            ),
        shell:
            "selectlab annotate fit-dsir --params {params.cfg:q} --meta {input.meta}"
            " --shard-files {params.shard_files:q} {params.heldout}"
            " --out-model {output.model} --out-card {output.card} > {log} 2>&1"


if annotate_cfg.needs_reference_lm(config):

    rule prepare_reference_lm:
        output:
            directory(annotate_cfg.reference_lm_dir(RUN)),
        log:
            f"{LOGS}/prepare_reference_lm.log",
        container:
            CONTAINERS["train"]
        threads: 1  # parsing and dequantising the GGUF file is single-threaded
        resources:
            mem_mb=4000,
            runtime=30,
        shell:
            "selectlab annotate prepare-reference-lm --out-dir {output} > {log} 2>&1"


# One family's throughput row, written once all its shards are annotated: selection waits on
# this table instead of on every shard's sidecar (rules/select.smk).
rule family_throughput:
    input:
        lambda w: annotation_stats([w.family]),
    output:
        csv=f"{RUN}/attributes/{{family}}/throughput.csv",
        md=f"{RUN}/attributes/{{family}}/throughput.md",
    log:
        f"{LOGS}/family_throughput/{{family}}.log",
    container:
        CONTAINERS["cpu"]
    resources:
        mem_mb=2000,
        runtime=15,
    shell:
        "selectlab annotate throughput --stats {input} --out-csv {output.csv}"
        " --out-md {output.md} > {log} 2>&1"


rule annotation_throughput:
    input:
        annotation_stats(ANNOTATE_FAMILIES),
    output:
        csv=f"{RUN}/tables/annotation_throughput.csv",
        md=f"{RUN}/tables/annotation_throughput.md",
    log:
        f"{LOGS}/annotation_throughput.log",
    container:
        CONTAINERS["cpu"]
    resources:
        mem_mb=2000,
        runtime=15,
    shell:
        "selectlab annotate throughput --stats {input} --out-csv {output.csv}"
        " --out-md {output.md} > {log} 2>&1"
