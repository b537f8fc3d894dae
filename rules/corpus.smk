# Corpus: raw shards (built offline, or SlimPajama files), held-out splits, tokenizer, tokens.
from selectlab.corpus import resolve as corpus_cfg

SHARD_FILES = corpus_cfg.shard_files(config, RUN)
SHARDS = list(SHARD_FILES)
SPLITS = list(corpus_cfg.SPLITS)
MAX_DOC_CHARS = corpus_cfg.max_doc_chars(config)
# Records without an id are named relative to the pool's root, the same in every job that
# reads them (a params function of a rule whose input `raw` lists raw files).
ID_ROOT = lambda wildcards, input: corpus_cfg.id_root(config, input.raw)
ON_DAMAGED_FILE = corpus_cfg.damaged_file_policy(config)
# Selection pools besides `full` (the tokenized shards): each cut shard by shard into pool
# shards `{shard}__{pool}` (selectlab.corpus.pools; corpus.pools in the config).
POOLS = list(corpus_cfg.pool_settings(config))
POOL_SHARD = lambda pool: layout.meta_sidecar(RUN, f"{{shard}}__{pool}")


if config["corpus"]["mode"] == "embedded":

    rule build_corpus:
        output:
            shards=expand(layout.raw_shard(RUN), shard=SHARDS),
            heldout=expand(
                layout.heldout(RUN), split=corpus_cfg.built_heldout_splits(config)
            ),
            dsir_target=layout.dsir_target(RUN),
            ground_truth=layout.ground_truth(RUN),
            stats=layout.corpus_build_stats(RUN),
        log:
            layout.log(RUN, "build_corpus"),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("build_corpus")
        resources:
            **rule_resources("build_corpus"),
        params:
            cfg=json_param(corpus_cfg.build_params(config)),
            out_dir=parent_dir("stats"),
        shell:
            "selectlab corpus build --params {params.cfg:q} --out-dir {params.out_dir} > {log} 2>&1"

else:

    rule prepare_heldout:
        input:
            tokenizer=layout.tokenizer(RUN),
        output:
            layout.heldout(RUN),
        log:
            layout.job_log(RUN, "prepare_heldout", "{split}"),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("prepare_heldout")
        resources:
            **rule_resources("prepare_heldout"),
        params:
            cfg=lambda w: json_param(corpus_cfg.heldout_params(config, w.split)),
        shell:
            "selectlab corpus heldout --params {params.cfg:q} --tokenizer {input.tokenizer}"
            " --out {output} > {log} 2>&1"


if config["tokenizer"]["kind"] == "train_bpe":

    rule train_tokenizer:
        input:
            [path for shard in SHARDS for path in SHARD_FILES[shard]],
        output:
            directory(layout.tokenizer(RUN)),
        log:
            layout.log(RUN, "train_tokenizer"),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("train_tokenizer")
        resources:
            **rule_resources("train_tokenizer"),
        params:
            vocab_size=config["tokenizer"]["vocab_size"],
            sample_chars=config["tokenizer"]["sample_chars"],
            max_doc_chars=MAX_DOC_CHARS,
        shell:
            "selectlab tokens train --inputs {input} --vocab-size {params.vocab_size}"
            " --sample-chars {params.sample_chars} --max-doc-chars {params.max_doc_chars}"
            " --out-dir {output} > {log} 2>&1"

else:

    rule copy_tokenizer:
        output:
            directory(layout.tokenizer(RUN)),
        log:
            layout.log(RUN, "copy_tokenizer"),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("copy_tokenizer")
        resources:
            **rule_resources("copy_tokenizer"),
        params:
            source=config["tokenizer"].get("path", ""),
        shell:
            "selectlab tokens copy --source {params.source} --out-dir {output} > {log} 2>&1"


# corpus.shards_per_job: a job tokenizes one shard (tokenize_shard) or a batch of 10 or 100
# whose names differ in their last digits (tokenize_batch); each shard keeps its own outputs.
TOKENIZE_KINDS = corpus_cfg.job_kinds(
    config, ("tokenize_shard", "tokenize_batch"), SHARDS, BASE_SHARD
)
# Later per-shard jobs list one meta sidecar per tokenisation (or pool-cut) job whose shards
# they read, which stands for all of them (selectlab.shard_jobs.standing_for).
FIRST_SHARD = shard_jobs.first_shards(TOKENIZE_KINDS)
META_STANDING_FOR = lambda shards, tail="": [
    layout.meta_sidecar(RUN, f"{shard}{tail}")
    for shard in shard_jobs.standing_for(shards, FIRST_SHARD)
]


for kind in TOKENIZE_KINDS:

    rule:
        name:
            kind.rule
        input:
            raw=lambda w, kind=kind: [
                path for shard in kind.shards(w.batch) for path in SHARD_FILES[shard]
            ],
            tokenizer=layout.tokenizer(RUN),
        output:
            tokens=batch_paths(kind, layout.tokens),
            meta=batch_paths(kind, layout.meta_sidecar),
            report=batch_paths(kind, layout.shard_read_report),
            quarantine=batch_paths(kind, layout.quarantine),
        log:
            layout.job_log(RUN, kind.rule, "{batch}"),
        wildcard_constraints:
            batch=kind.pattern,
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("tokenize_shard")
        resources:
            **batch_rule_resources("tokenize_shard", kind),
        params:
            shard_files=lambda w, kind=kind: json_param(
                {shard: SHARD_FILES[shard] for shard in kind.shards(w.batch)}
            ),
            max_doc_chars=MAX_DOC_CHARS,
            id_root=ID_ROOT,
            on_damaged_file=ON_DAMAGED_FILE,
        shell:
            "selectlab tokens encode --shard-files {params.shard_files:q}"
            " --tokenizer {input.tokenizer} --max-doc-chars {params.max_doc_chars}"
            " --id-root {params.id_root:q} --on-damaged-file {params.on_damaged_file}"
            " --out-tokens {output.tokens} --out-meta {output.meta} --report {output.report}"
            " --quarantine {output.quarantine} > {log} 2>&1"


# Also where the pool's document ids are checked to be unique across shards.
rule read_report:
    input:
        META_STANDING_FOR(SHARDS),
    output:
        report(
            layout.read_report(RUN),
            caption=caption("read_report"),
            category="Corpus",
        ),
    log:
        layout.log(RUN, "read_report"),
    container:
        CONTAINERS["cpu"]
    threads: rule_threads("read_report")
    resources:
        **rule_resources("read_report"),
    params:
        reports=expand(layout.shard_read_report(RUN), shard=SHARDS),
        meta=expand(layout.meta_sidecar(RUN), shard=SHARDS),
    shell:
        "selectlab corpus read-report --reports {params.reports} --meta {params.meta}"
        " --out {output} > {log} 2>&1"


if POOLS:

    # A pool's part of each shard, batched as tokenisation is.
    for kind in corpus_cfg.job_kinds(
        config, ("cut_pool", "cut_pool_batch"), SHARDS, BASE_SHARD
    ):

        rule:
            name:
                kind.rule
            input:
                meta=lambda w, kind=kind: META_STANDING_FOR(kind.shards(w.batch)),
                tokenizer=layout.tokenizer(RUN),
            output:
                tokens=batch_paths(kind, layout.tokens, "__{pool}"),
                meta=batch_paths(kind, layout.meta_sidecar, "__{pool}"),
            log:
                layout.job_log(RUN, kind.rule, "{pool}/{batch}"),
            wildcard_constraints:
                batch=kind.pattern,
                pool=names_pattern(POOLS),
            container:
                CONTAINERS["cpu"]
            threads: rule_threads("cut_pool")
            resources:
                **batch_rule_resources("cut_pool", kind),
            params:
                cfg=lambda w: json_param(corpus_cfg.pool_settings(config)[w.pool]),
                tokens=lambda w, kind=kind: [
                    layout.tokens(RUN, shard) for shard in kind.shards(w.batch)
                ],
                meta=lambda w, kind=kind: [
                    layout.meta_sidecar(RUN, shard) for shard in kind.shards(w.batch)
                ],
            shell:
                "selectlab corpus cut-pool --params {params.cfg:q}"
                " --tokens {params.tokens} --meta {params.meta} --tokenizer {input.tokenizer}"
                " --out-tokens {output.tokens} --out-meta {output.meta} > {log} 2>&1"

    rule pool_report:
        input:
            lambda w: META_STANDING_FOR(SHARDS, f"__{w.pool}"),
        output:
            layout.pool_report(RUN),
        log:
            layout.job_log(RUN, "pool_report", "{pool}"),
        wildcard_constraints:
            pool=names_pattern(POOLS),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("pool_report")
        resources:
            **rule_resources("pool_report"),
        params:
            meta=lambda w: expand(POOL_SHARD(w.pool), shard=SHARDS),
        shell:
            "selectlab corpus pool-report --meta {params.meta} --out {output} > {log} 2>&1"
