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


rule annotate:
    input:
        meta=f"{RUN}/attributes/meta/{{shard}}.parquet",
        fitted=annotate_fitted_inputs,
    output:
        sidecar=f"{RUN}/attributes/{{family}}/{{shard}}.parquet",
        stats=f"{LOGS}/annotate/{{family}}/{{shard}}.json",
    log:
        f"{LOGS}/annotate/{{family}}/{{shard}}.log",
    container:
        annotate_container
    threads: annotate_threads
    resources:
        mem_mb=annotate_resource("mem_mb"),
        runtime=annotate_resource("runtime"),
        gpu=annotate_resource("gpu"),
    params:
        cfg=lambda w: json_param(annotate_cfg.resolve_family(config, w.family)),
        raw=raw_shard_files,
        max_doc_chars=config["corpus"]["reader"]["max_doc_chars"],
        id_root=ID_ROOT,
        batch_size=config["annotate"]["batch_size"],
    shell:
        "selectlab annotate run --family {wildcards.family} --shard {wildcards.shard}"
        " --params {params.cfg:q} --inputs {params.raw} --meta {input.meta}"
        " --fitted {input.fitted} --max-doc-chars {params.max_doc_chars}"
        " --id-root {params.id_root:q}"
        " --batch-size {params.batch_size} --gpus {resources.gpu} --threads {threads}"
        " --out {output.sidecar} --stats {output.stats} > {log} 2>&1"


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
        lambda w: expand(f"{LOGS}/annotate/{w.family}/{{shard}}.json", shard=SHARDS),
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
        expand(
            f"{LOGS}/annotate/{{family}}/{{shard}}.json",
            family=ANNOTATE_FAMILIES,
            shard=SHARDS,
        ),
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
