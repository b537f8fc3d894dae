# Annotation: one sidecar per (rater family, shard), aligned row for row with the shard's meta
# sidecar. A family's kind (selectlab.annotate.registry) decides its fitted inputs, container and
# GPU use, so a new rater family needs a config entry, not a new rule. DSIR's n-gram counts and
# the offline reference LM are prepared once per run.
#
# The shard's raw files are read but not listed as inputs: the meta sidecar stands for them
# (tokenize_shard writes it from them, so it is rewritten whenever they change), and leaving
# them out keeps a paper-scale plan (thousands of raw files x 9 families) from spending most of
# its time resolving the same raw paths again for every family (benchmarks/dag_scale.py).
from selectlab.annotate import resolve as annotate_cfg
from selectlab.mates import plan as mates_cfg
from selectlab.report.plan import ANNOTATION_THROUGHPUT

ANNOTATE_FAMILIES = annotate_cfg.family_names(config)
# Generated per stage of a MATES variant; annotated when that stage is selected, never a target.
MATES_FAMILIES = mates_cfg.family_names(config)
DSIR_FAMILIES = annotate_cfg.families_of_kind(config, "dsir")
FAMILY_SHAPE = per_job(lambda w: annotate_cfg.resources(config, w["family"]))
# The raw files of the shards a DSIR family samples its raw distribution from.
DSIR_SHARD_FILES = lambda w: annotate_cfg.dsir_shard_files(
    config, w.family, SHARD_FILES
)
# Every family's sidecar of every shard, and the throughput table.
ANNOTATION_TARGETS = expand(
    layout.sidecar(RUN), family=ANNOTATE_FAMILIES, shard=SHARDS
) + [layout.table(RUN, ANNOTATION_THROUGHPUT, "md")]


wildcard_constraints:
    family=names_pattern(ANNOTATE_FAMILIES + MATES_FAMILIES),


rule annotate:
    input:
        meta=layout.meta_sidecar(RUN),
        fitted=lambda w: annotate_cfg.fitted_inputs(config, RUN, w.family),
    output:
        sidecar=layout.sidecar(RUN),
        stats=layout.annotation_stats(RUN),
    log:
        layout.job_log(RUN, "annotate", "{family}/{shard}"),
    benchmark:
        layout.benchmark(RUN, "annotate", "{family}/{shard}")
    container:
        lambda w: CONTAINERS[annotate_cfg.container_key(config, w.family)]
    threads: job_threads(FAMILY_SHAPE)
    resources:
        **job_resources(FAMILY_SHAPE),
    params:
        cfg=lambda w: json_param(annotate_cfg.resolve_family(config, w.family)),
        raw=RAW_SHARD_FILES,
        max_doc_chars=MAX_DOC_CHARS,
        id_root=lambda w: corpus_cfg.id_root(config, SHARD_FILES[w.shard]),
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
            meta=lambda w: expand(
                layout.meta_sidecar(RUN), shard=list(DSIR_SHARD_FILES(w))
            ),
            raw=lambda w: [
                path for files in DSIR_SHARD_FILES(w).values() for path in files
            ],
            target_split=lambda w: annotate_cfg.dsir_target_split_inputs(
                config, RUN, w.family
            ),
            targets=lambda w: annotate_cfg.dsir_target_files(config, w.family),
        output:
            model=layout.dsir_model(RUN),
            card=layout.rater_card(RUN, "{family}"),
        log:
            layout.job_log(RUN, "fit_dsir", "{family}"),
        wildcard_constraints:
            family=names_pattern(DSIR_FAMILIES),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("fit_dsir")
        resources:
            **rule_resources("fit_dsir"),
        params:
            cfg=lambda w: json_param(annotate_cfg.resolve_fit_dsir(config, w.family)),
            shard_files=lambda w: json_param(DSIR_SHARD_FILES(w)),
            target_split=optional_flag("--target-split", "target_split"),
        shell:
            "selectlab annotate fit-dsir --params {params.cfg:q} --meta {input.meta}"
            " --shard-files {params.shard_files:q} {params.target_split}"
            " --out-model {output.model} --out-card {output.card} > {log} 2>&1"


if annotate_cfg.needs_reference_lm(config):

    rule prepare_reference_lm:
        output:
            directory(layout.reference_lm(RUN)),
        log:
            layout.log(RUN, "prepare_reference_lm"),
        container:
            CONTAINERS["train"]
        threads: rule_threads("prepare_reference_lm")
        resources:
            **rule_resources("prepare_reference_lm"),
        shell:
            "selectlab annotate prepare-reference-lm --out-dir {output} > {log} 2>&1"


# One family's throughput row, written once all its shards are annotated: selection waits on
# this table instead of on every shard's sidecar (rules/select.smk).
rule family_throughput:
    input:
        lambda w: expand(layout.annotation_stats(RUN, w.family), shard=SHARDS),
    output:
        csv=layout.family_throughput(RUN, ext="csv"),
        md=layout.family_throughput(RUN, ext="md"),
    log:
        layout.job_log(RUN, "family_throughput", "{family}"),
    container:
        CONTAINERS["cpu"]
    threads: rule_threads("family_throughput")
    resources:
        **rule_resources("family_throughput"),
    shell:
        "selectlab annotate throughput --stats {input} --out-csv {output.csv}"
        " --out-md {output.md} > {log} 2>&1"


rule annotation_throughput:
    input:
        expand(layout.annotation_stats(RUN), family=ANNOTATE_FAMILIES, shard=SHARDS),
    output:
        csv=layout.table(RUN, ANNOTATION_THROUGHPUT, "csv"),
        md=layout.table(RUN, ANNOTATION_THROUGHPUT, "md"),
    log:
        layout.log(RUN, "annotation_throughput"),
    container:
        CONTAINERS["cpu"]
    threads: rule_threads("annotation_throughput")
    resources:
        **rule_resources("annotation_throughput"),
    shell:
        "selectlab annotate throughput --stats {input} --out-csv {output.csv}"
        " --out-md {output.md} > {log} 2>&1"
