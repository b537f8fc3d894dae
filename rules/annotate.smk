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
# What a family's jobs share is resolved once per family, not once per shard: a paper-scale plan
# has ~17,000 annotation jobs of a dozen families (benchmarks/dag_scale.py).
FAMILY_CONTAINER = functools.cache(
    lambda family: CONTAINERS[annotate_cfg.container_key(config, family)]
)
FAMILY_PARAMS = functools.cache(
    lambda family: json_param(annotate_cfg.resolve_family(config, family))
)
FAMILY_FITTED = functools.cache(
    lambda family: annotate_cfg.fitted_inputs(config, RUN, family)
)
# Batch sizes are resources, not params: they change how fast a job scores, not what it writes.
FAMILY_THROUGHPUT = functools.cache(
    lambda family: json_param(annotate_cfg.resolve_throughput(config, family))
)
ANNOTATE_CONTAINER = lambda w: FAMILY_CONTAINER(w.family)
ANNOTATE_THROUGHPUT = lambda w: FAMILY_THROUGHPUT(w.family)
# shards_per_job (annotate.shards_per_job, or the family's own): a job scores one shard
# (annotate, annotate_pool) or a batch of 10 or 100 whose names differ in their last digits
# (annotate_batch10, annotate_pool_batch100, ...), in the tokenized shards (`full`) and in every
# other pool a family annotates; each shard keeps its own sidecar, each job writes one stats
# file listing its shards. Each family's forms name its stats files; the rules run them.
FAMILY_KINDS = annotate_cfg.family_job_kinds(
    config,
    ANNOTATE_FAMILIES + MATES_FAMILIES,
    ("annotate", "annotate_batch"),
    SHARDS,
    BASE_SHARD,
)
POOL_FAMILY_KINDS = annotate_cfg.family_job_kinds(
    config,
    ANNOTATE_FAMILIES + MATES_FAMILIES,
    ("annotate_pool", "annotate_pool_batch"),
    SHARDS,
    BASE_SHARD,
)
ANNOTATE_RULES = annotate_cfg.rule_kinds(FAMILY_KINDS, BASE_SHARD)
POOL_RULES = annotate_cfg.rule_kinds(POOL_FAMILY_KINDS, BASE_SHARD)
# The stats files of every annotation job of some families (a family's jobs in every pool are
# cut as in the full pool, so its full-pool forms name them all).
ANNOTATION_STATS = lambda families: annotate_cfg.stats_files(
    RUN,
    [
        (family, pool)
        for family in families
        for pool in annotate_cfg.family_pools(config, family)
    ],
    FAMILY_KINDS,
)
# The raw files of the shards a DSIR family samples its raw distribution from.
DSIR_SHARD_FILES = lambda w: annotate_cfg.dsir_shard_files(
    config, w.family, SHARD_FILES
)
# The throughput table: it reads the stats file of every annotation job, so `all` builds every
# family's sidecar of every shard through it without naming each (hundreds of thousands of
# paths in a paper-scale plan).
ANNOTATION_TARGETS = [layout.table(RUN, ANNOTATION_THROUGHPUT, "md")]


wildcard_constraints:
    family=names_pattern(ANNOTATE_FAMILIES + MATES_FAMILIES),


# The shape of a family's jobs of `kind`: one shard's memory, the time of all its shards.
JOB_SHAPES = {
    kind.rule: per_job(
        lambda w, kind=kind: annotate_cfg.resources(
            config, w["family"], len(kind.suffixes)
        )
    )
    for kind, _ in ANNOTATE_RULES + POOL_RULES
}
ANNOTATE_COMMAND = (
    "selectlab annotate run --family {wildcards.family} --params {params.cfg:q}"
    " --throughput {resources.throughput:q} --meta-dir {params.meta_dir}"
    " --fitted {input.fitted} --max-doc-chars {params.max_doc_chars}"
    " --gpus {resources.gpu} --threads {threads}"
    " --out-dir {params.out_dir} --stats {output.stats}"
)


# The tokenized shards' documents, read from their raw files.
for kind, families in ANNOTATE_RULES:

    rule:
        name:
            kind.rule
        input:
            meta=lambda w, kind=kind: META_STANDING_FOR(kind.shards(w.batch)),
            fitted=lambda w: list(FAMILY_FITTED(w.family)),
        output:
            sidecars=batch_paths(
                kind, lambda root, shard: layout.sidecar(root, shard=shard)
            ),
            stats=annotate_cfg.job_stats_path(RUN, kind),
        log:
            layout.job_log(RUN, "annotate", annotate_cfg.job_name(kind)),
        benchmark:
            layout.benchmark(RUN, "annotate", annotate_cfg.job_name(kind))
        wildcard_constraints:
            batch=kind.pattern,
            family=names_pattern(families),
        container:
            ANNOTATE_CONTAINER
        threads: job_threads(JOB_SHAPES[kind.rule])
        resources:
            **job_resources(JOB_SHAPES[kind.rule]),
            throughput=ANNOTATE_THROUGHPUT,
        params:
            cfg=lambda w: FAMILY_PARAMS(w.family),
            shard_files=lambda w, kind=kind: json_param(
                {shard: SHARD_FILES[shard] for shard in kind.shards(w.batch)}
            ),
            meta_dir=parent_dir_of_input("meta"),
            out_dir=parent_dir("sidecars"),
            max_doc_chars=MAX_DOC_CHARS,
            id_root=lambda w, kind=kind: corpus_cfg.id_root(
                config, SHARD_FILES[kind.shards(w.batch)[0]]
            ),
        shell:
            f"{ANNOTATE_COMMAND} --shard-files {{params.shard_files:q}}"
            " --id-root {params.id_root:q} > {log} 2>&1"


# A pool's units, read from its shards' tokens (texts decoded with the run's tokenizer).
for kind, families in POOL_RULES:

    rule:
        name:
            kind.rule
        input:
            # The pool shards' tokens and meta sidecars are read; the cut jobs write both, so
            # a meta sidecar per cut job stands for them (cuts are batched as tokenisation).
            meta=lambda w, kind=kind: META_STANDING_FOR(
                kind.shards(w.batch), f"__{w.pool}"
            ),
            tokenizer=layout.tokenizer(RUN),
            fitted=lambda w: list(FAMILY_FITTED(w.family)),
        output:
            sidecars=batch_paths(
                kind, lambda root, shard: layout.sidecar(root, shard=shard), "__{pool}"
            ),
            stats=annotate_cfg.job_stats_path(RUN, kind, "__{pool}"),
        log:
            layout.job_log(RUN, "annotate", annotate_cfg.job_name(kind, "__{pool}")),
        benchmark:
            layout.benchmark(RUN, "annotate", annotate_cfg.job_name(kind, "__{pool}"))
        wildcard_constraints:
            batch=kind.pattern,
            family=names_pattern(families),
            pool=names_pattern(POOLS),
        container:
            ANNOTATE_CONTAINER
        threads: job_threads(JOB_SHAPES[kind.rule])
        resources:
            **job_resources(JOB_SHAPES[kind.rule]),
            throughput=ANNOTATE_THROUGHPUT,
        params:
            cfg=lambda w: FAMILY_PARAMS(w.family),
            pool_shards=lambda w, kind=kind: json_param(
                {
                    name: layout.tokens(RUN, name)
                    for name in pool_cfg.pool_shards(kind.shards(w.batch), w.pool)
                }
            ),
            meta_dir=parent_dir_of_input("meta"),
            out_dir=parent_dir("sidecars"),
            max_doc_chars=MAX_DOC_CHARS,
        shell:
            f"{ANNOTATE_COMMAND} --pool-shards {{params.pool_shards:q}}"
            " --tokenizer {input.tokenizer} > {log} 2>&1"


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
