# Selection: one budgeted selection per variant from the sidecars, then packed into sequences.
rule select:
    input:
        meta=expand(f"{RUN}/attributes/meta/{{shard}}.parquet", shard=SHARDS),
        scores=selection_sidecars,
        upstream=selection_upstream,
    output:
        selection=f"{RUN}/selections/{{variant}}/selection.parquet",
        manifest=f"{RUN}/selections/{{variant}}/manifest.json",
    log:
        f"{LOGS}/select/{{variant}}.log",
    container:
        CONTAINERS["cpu"]
    resources:
        mem_mb=8000,
        runtime=120,
    params:
        cfg=lambda w: json_param(cfg.resolve_selection(config, w.variant)),
        attributes_dir=lambda w, input: os.path.dirname(os.path.dirname(input.meta[0])),
        out_dir=parent_dir("manifest"),
        upstream=lambda w, input: (
            f"--upstream {input.upstream}" if input.upstream else ""
        ),
    shell:
        "selectlab select run --params {params.cfg:q} --attributes-dir {params.attributes_dir}"
        " --meta {input.meta} {params.upstream} --out-dir {params.out_dir} > {log} 2>&1"


rule pack:
    input:
        selection=f"{RUN}/selections/{{variant}}/selection.parquet",
        tokens=expand(f"{RUN}/corpus/tokens/{{shard}}.npy", shard=SHARDS),
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
        tokens_dir=lambda w, input: os.path.dirname(input.tokens[0]),
    shell:
        "selectlab select pack --selection {input.selection} --tokens-dir {params.tokens_dir}"
        " --tokenizer {input.tokenizer} --seq-len {params.seq_len} --out {output} > {log} 2>&1"
