# Selection: one budgeted selection per variant from the sidecars, then packed into sequences.
# Selection and packing read every shard, but declare only tables written after all shards
# (the read report for meta sidecars and tokens, a throughput table per score family): per-shard
# inputs for every variant and Meta-rater proxy would make planning quadratic at full scale.
# Scores combined on percentile ranks are ranked once per pool (rank_scores), not per selection.
# Both rules stream the pool within selection.memory_mb, which is also what their jobs ask for;
# a select job's cores and time follow the pool's size, and SemDeDup asks for its in-memory
# ranks on top of the ceiling (selectlab.selection.sizing).
from selectlab.selection import pools as pool_cfg
from selectlab.selection import sizing as select_sizing
from selectlab.train import resolve as train_cfg

VARIANTS = select_cfg.variant_names(config)
RANKED = select_cfg.ranked_scores(config)
RANK_SHAPE = select_cfg.selection_job_shape(config, "rank_scores")
POOL_DOCUMENTS = select_sizing.pool_documents(config, SHARD_FILES)
SELECT_SHAPE = per_job(
    lambda w: select_cfg.select_shape(config, w["variant"], POOL_DOCUMENTS)
)
# The memory the pool streams within (the command's --memory-mb): the job's memory but for
# SemDeDup's in-memory ranks. A resource, as mem_mb is: changing it reruns nothing.
SELECT_CEILING_MB = select_cfg.selection_job_shape(config, "select")["mem_mb"]


rule rank_scores:
    input:
        corpus=layout.read_report(RUN),
        scores=layout.family_throughput(RUN, ext="csv"),
    output:
        directory(layout.rank_dir(RUN)),
    log:
        layout.job_log(RUN, "rank_scores", "{family}"),
    wildcard_constraints:
        family=names_pattern(RANKED),
    container:
        CONTAINERS["cpu"]
    threads: RANK_SHAPE["cpus"]
    resources:
        **res.present(res.as_snakemake(RANK_SHAPE)),
    params:
        columns=lambda w: RANKED[w.family],
        # attributes/ranks/{family} -> attributes/ (snakemake --lint: derived, not hardcoded)
        attributes_dir=lambda w, output: os.path.dirname(os.path.dirname(output[0])),
    shell:
        "selectlab select rank --family {wildcards.family} --columns {params.columns}"
        " --attributes-dir {params.attributes_dir} --pool {input.corpus}"
        " --memory-mb {resources.mem_mb} > {log} 2>&1"


rule select:
    input:
        corpus=lambda w: pool_cfg.pool_ready(config, RUN, w.variant),
        scores=lambda w: select_cfg.score_inputs(config, RUN, w.variant),
        ranks=lambda w: select_cfg.rank_inputs(config, RUN, w.variant),
        upstream=lambda w: select_cfg.selection_upstream(config, RUN, w.variant),
        method=lambda w: select_cfg.method_inputs(config, w.variant),
    output:
        selection=layout.selection(RUN),
        manifest=layout.selection_manifest(RUN),
    log:
        layout.job_log(RUN, "select", "{variant}"),
    container:
        CONTAINERS["cpu"]
    threads: job_threads(SELECT_SHAPE)
    resources:
        **job_resources(SELECT_SHAPE),
        memory_ceiling_mb=SELECT_CEILING_MB,
    params:
        cfg=lambda w: json_param(select_cfg.resolve_selection(config, w.variant)),
        attributes_dir=layout.attributes_dir(RUN),
        out_dir=parent_dir("manifest"),
        upstream=optional_flag("--upstream", "upstream"),
    shell:
        "selectlab select run --params {params.cfg:q} --attributes-dir {params.attributes_dir}"
        " --pool {input.corpus} {params.upstream} --out-dir {params.out_dir}"
        " --memory-mb {resources.memory_ceiling_mb} > {log} 2>&1"


# The packed sequences are read by this variant's pretraining only, so they go once it is done.
rule pack:
    input:
        selection=layout.selection(RUN),
        corpus=lambda w: pool_cfg.pool_ready(config, RUN, w.variant),
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
        # Sequence units carry their documents' EOS tokens; documents get one each here.
        eos=lambda w: (
            "--units-hold-eos"
            if pool_cfg.variant_pool_spec(config, w.variant).eos_inside
            else ""
        ),
    shell:
        "selectlab select pack --selection {input.selection} --tokens-dir {params.tokens_dir}"
        " --tokenizer {input.tokenizer} --seq-len {params.seq_len} {params.eos}"
        " --out {output} > {log} 2>&1"
