# Selection: one budgeted selection per variant from the sidecars, then packed into sequences.
# Selection and packing read every shard, but declare only tables written after all shards
# (the read report for meta sidecars and tokens, a throughput table per score family): per-shard
# inputs for every variant and Meta-rater proxy would make planning quadratic at full scale.
rule select:
    input:
        corpus=f"{RUN}/tables/read_report.csv",
        scores=selection_sidecars,
        upstream=selection_upstream,
    output:
        selection=f"{RUN}/selections/{{variant}}/selection.parquet",
        manifest=f"{RUN}/selections/{{variant}}/manifest.json",
    log:
        f"{LOGS}/select/{{variant}}.log",
    container:
        CONTAINERS["cpu"]
    threads: select_resource("cpus")
    resources:
        mem_mb=select_resource("mem_mb"),
        runtime=select_resource("runtime"),
    params:
        cfg=lambda w: json_param(cfg.resolve_selection(config, w.variant)),
        attributes_dir=f"{RUN}/attributes",
        meta=expand(f"{RUN}/attributes/meta/{{shard}}.parquet", shard=SHARDS),
        out_dir=parent_dir("manifest"),
        upstream=lambda w, input: (
            f"--upstream {input.upstream}" if input.upstream else ""
        ),
    shell:
        "selectlab select run --params {params.cfg:q} --attributes-dir {params.attributes_dir}"
        " --meta {params.meta} {params.upstream} --out-dir {params.out_dir} > {log} 2>&1"


rule pack:
    input:
        selection=f"{RUN}/selections/{{variant}}/selection.parquet",
        corpus=f"{RUN}/tables/read_report.csv",
        tokenizer=f"{RUN}/tokenizer",
    output:
        f"{RUN}/selections/{{variant}}/train.npy",
    log:
        f"{LOGS}/pack/{{variant}}.log",
    container:
        CONTAINERS["cpu"]
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        seq_len=lambda w: cfg.resolve_pretrain(config, w.variant)["settings"]["seq_len"],
        tokens_dir=f"{RUN}/corpus/tokens",
    shell:
        "selectlab select pack --selection {input.selection} --tokens-dir {params.tokens_dir}"
        " --tokenizer {input.tokenizer} --seq-len {params.seq_len} --out {output} > {log} 2>&1"
