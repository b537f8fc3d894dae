# Selection: one budgeted selection per variant from the sidecars, then packed into sequences.
# Selection and packing read every shard, but declare only tables written after all shards
# (the read report for meta sidecars and tokens, a throughput table per score family): per-shard
# inputs for every variant and Meta-rater proxy would make planning quadratic at full scale.
from selectlab.train import resolve as train_cfg

VARIANTS = select_cfg.variant_names(config)


rule select:
    input:
        corpus=layout.read_report(RUN),
        scores=lambda w: select_cfg.score_inputs(config, RUN, w.variant),
        upstream=lambda w: select_cfg.selection_upstream(config, RUN, w.variant),
    output:
        selection=layout.selection(RUN),
        manifest=layout.selection_manifest(RUN),
    log:
        layout.job_log(RUN, "select", "{variant}"),
    container:
        CONTAINERS["cpu"]
    threads: rule_threads("select")
    resources:
        **rule_resources("select"),
    params:
        cfg=lambda w: json_param(select_cfg.resolve_selection(config, w.variant)),
        attributes_dir=layout.attributes_dir(RUN),
        meta=expand(layout.meta_sidecar(RUN), shard=SHARDS),
        out_dir=parent_dir("manifest"),
        upstream=optional_flag("--upstream", "upstream"),
    shell:
        "selectlab select run --params {params.cfg:q} --attributes-dir {params.attributes_dir}"
        " --meta {params.meta} {params.upstream} --out-dir {params.out_dir} > {log} 2>&1"


# The packed sequences are read by this variant's pretraining only, so they go once it is done.
rule pack:
    input:
        selection=layout.selection(RUN),
        corpus=layout.read_report(RUN),
        tokenizer=layout.tokenizer(RUN),
    output:
        temp(layout.packed(RUN)),
    log:
        layout.job_log(RUN, "pack", "{variant}"),
    container:
        CONTAINERS["cpu"]
    threads: rule_threads("pack")
    resources:
        **rule_resources("pack"),
    params:
        seq_len=lambda w: train_cfg.seq_len(config, w.variant),
        tokens_dir=layout.tokens_dir(RUN),
    shell:
        "selectlab select pack --selection {input.selection} --tokens-dir {params.tokens_dir}"
        " --tokenizer {input.tokenizer} --seq-len {params.seq_len} --out {output} > {log} 2>&1"
