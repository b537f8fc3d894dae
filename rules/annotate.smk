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
from selectlab.selection import pools as pool_cfg

ANNOTATE_FAMILIES = annotate_cfg.family_names(config)
# Generated per stage of a MATES variant; annotated when that stage is selected, never a target.
MATES_FAMILIES = mates_cfg.family_names(config)
DSIR_FAMILIES = annotate_cfg.families_of_kind(config, "dsir")
FAMILY_SHAPE = per_job(lambda w: annotate_cfg.resources(config, w["family"]))
ANNOTATE_CONTAINER = lambda w: CONTAINERS[annotate_cfg.container_key(config, w.family)]
# Batch sizes are resources, not params: they change how fast a job scores, not what it writes.
ANNOTATE_THROUGHPUT = lambda w: json_param(
    annotate_cfg.resolve_throughput(config, w.family)
)
# annotate.shards_per_job: full batches of shards scored by one job each (annotate_batch), and
# the shards of a last, incomplete batch (every shard when it is 1), scored alone (annotate).
ANNOTATE_BATCHES, ANNOTATE_ALONE = annotate_cfg.shard_batches(
    SHARDS, annotate_cfg.shards_per_job(config)
)
ANNOTATE_SUFFIXES = annotate_cfg.batch_suffixes(annotate_cfg.shards_per_job(config))
ANNOTATE_ALONE_PATTERN = (
    names_pattern(ANNOTATE_ALONE) if ANNOTATE_BATCHES else BASE_SHARD
)
# Where each family annotates (annotate.families.*.pools): the tokenized shards (`full`) in
# batches as above, and every other pool's shards one job each (annotate_pool).
FULL_FAMILIES = annotate_cfg.pool_families(config, pool_cfg.FULL)
POOL_SHARDS_OF = lambda family: [
    pool_shard
    for pool in annotate_cfg.family_pools(config, family)
    if pool != pool_cfg.FULL
    for pool_shard in pool_cfg.pool_shards(SHARDS, pool)
]
# A batch job keeps one shard's memory and adds up its shards' time.
BATCH_SHAPE = per_job(
    lambda w: annotate_cfg.resources(config, w["family"], len(ANNOTATE_SUFFIXES))
)
# The stats files of every annotation job of some families: one per batch, one per shard
# scored alone (each lists its shards).
ANNOTATION_STATS = lambda families: annotate_cfg.stats_files(
    RUN,
    [f for f in families if pool_cfg.FULL in annotate_cfg.family_pools(config, f)],
    ANNOTATE_BATCHES,
    ANNOTATE_ALONE,
) + [
    layout.annotation_stats(RUN, family, shard)
    for family in families
    for shard in POOL_SHARDS_OF(family)
]
# The raw files of the shards a DSIR family samples its raw distribution from.
DSIR_SHARD_FILES = lambda w: annotate_cfg.dsir_shard_files(
    config, w.family, SHARD_FILES
)
# Every family's sidecar of every shard, and the throughput table.
ANNOTATION_TARGETS = (
    expand(layout.sidecar(RUN), family=FULL_FAMILIES, shard=SHARDS)
    + [
        layout.sidecar(RUN, family, shard)
        for family in ANNOTATE_FAMILIES
        for shard in POOL_SHARDS_OF(family)
    ]
    + [layout.table(RUN, ANNOTATION_THROUGHPUT, "md")]
)


wildcard_constraints:
    family=names_pattern(ANNOTATE_FAMILIES + MATES_FAMILIES),


# One command for a job of one shard and for a job of annotate.shards_per_job shards: every
# shard still gets its own sidecar; each job writes one stats file listing its shards.
ANNOTATE_COMMAND = (
    "selectlab annotate run --family {wildcards.family} --params {params.cfg:q}"
    " --throughput {resources.throughput:q} --shard-files {params.shard_files:q}"
    " --meta-dir {params.meta_dir} --fitted {input.fitted}"
    " --max-doc-chars {params.max_doc_chars} --id-root {params.id_root:q}"
    " --gpus {resources.gpu} --threads {threads}"
    " --out-dir {params.out_dir} --stats {output.stats} > {log} 2>&1"
)


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
    wildcard_constraints:
        shard=ANNOTATE_ALONE_PATTERN,
    container:
        ANNOTATE_CONTAINER
    threads: job_threads(FAMILY_SHAPE)
    resources:
        **job_resources(FAMILY_SHAPE),
        throughput=ANNOTATE_THROUGHPUT,
    params:
        cfg=lambda w: json_param(annotate_cfg.resolve_family(config, w.family)),
        shard_files=lambda w: json_param({w.shard: SHARD_FILES[w.shard]}),
        meta_dir=parent_dir_of_input("meta"),
        out_dir=parent_dir("sidecar"),
        max_doc_chars=MAX_DOC_CHARS,
        id_root=lambda w: corpus_cfg.id_root(config, SHARD_FILES[w.shard]),
    shell:
        ANNOTATE_COMMAND


# A pool shard's units, read from its tokens (texts decoded with the run's tokenizer).
rule annotate_pool:
    input:
        meta=layout.meta_sidecar(RUN, "{shard}__{pool}"),
        tokens=layout.tokens(RUN, "{shard}__{pool}"),
        tokenizer=layout.tokenizer(RUN),
        fitted=lambda w: annotate_cfg.fitted_inputs(config, RUN, w.family),
    output:
        sidecar=layout.sidecar(RUN, shard="{shard}__{pool}"),
        stats=layout.annotation_stats(RUN, shard="{shard}__{pool}"),
    log:
        layout.job_log(RUN, "annotate", "{family}/{shard}__{pool}"),
    benchmark:
        layout.benchmark(RUN, "annotate", "{family}/{shard}__{pool}")
    wildcard_constraints:
        shard=BASE_SHARD,
        pool=names_pattern(list(corpus_cfg.pool_settings(config))),
    container:
        ANNOTATE_CONTAINER
    threads: job_threads(FAMILY_SHAPE)
    resources:
        **job_resources(FAMILY_SHAPE),
        throughput=ANNOTATE_THROUGHPUT,
    params:
        cfg=lambda w: json_param(annotate_cfg.resolve_family(config, w.family)),
        pool_shards=lambda w, input: json_param({f"{w.shard}__{w.pool}": input.tokens}),
        meta_dir=parent_dir_of_input("meta"),
        out_dir=parent_dir("sidecar"),
        max_doc_chars=MAX_DOC_CHARS,
    shell:
        "selectlab annotate run --family {wildcards.family} --params {params.cfg:q}"
        " --throughput {resources.throughput:q} --pool-shards {params.pool_shards:q}"
        " --tokenizer {input.tokenizer} --meta-dir {params.meta_dir}"
        " --fitted {input.fitted} --max-doc-chars {params.max_doc_chars}"
        " --gpus {resources.gpu} --threads {threads}"
        " --out-dir {params.out_dir} --stats {output.stats} > {log} 2>&1"


if ANNOTATE_BATCHES:

    rule annotate_batch:
        input:
            meta=[layout.meta_sidecar(RUN, f"{{batch}}{s}") for s in ANNOTATE_SUFFIXES],
            fitted=lambda w: annotate_cfg.fitted_inputs(config, RUN, w.family),
        output:
            sidecars=[
                layout.sidecar(RUN, shard=f"{{batch}}{s}") for s in ANNOTATE_SUFFIXES
            ],
            stats=layout.annotation_batch_stats(RUN),
        log:
            layout.job_log(RUN, "annotate", "{family}/{batch}_batch"),
        benchmark:
            layout.benchmark(RUN, "annotate", "{family}/{batch}_batch")
        wildcard_constraints:
            batch=names_pattern(ANNOTATE_BATCHES),
        container:
            ANNOTATE_CONTAINER
        threads: job_threads(BATCH_SHAPE)
        resources:
            **job_resources(BATCH_SHAPE),
            throughput=ANNOTATE_THROUGHPUT,
        params:
            cfg=lambda w: json_param(annotate_cfg.resolve_family(config, w.family)),
            shard_files=lambda w: json_param(
                {shard: SHARD_FILES[shard] for shard in ANNOTATE_BATCHES[w.batch]}
            ),
            meta_dir=parent_dir_of_input("meta"),
            out_dir=parent_dir("sidecars"),
            max_doc_chars=MAX_DOC_CHARS,
            id_root=lambda w: corpus_cfg.id_root(
                config, SHARD_FILES[ANNOTATE_BATCHES[w.batch][0]]
            ),
        shell:
            ANNOTATE_COMMAND


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
        lambda w: ANNOTATION_STATS([w.family]),
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
        ANNOTATION_STATS(ANNOTATE_FAMILIES),
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
