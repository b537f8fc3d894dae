# Corpus: raw shards (built offline, or SlimPajama files), held-out splits, tokenizer, tokens.


if config["corpus"]["mode"] == "embedded":

    rule build_corpus:
        output:
            shards=expand(f"{RUN}/corpus/raw/{{shard}}.jsonl.zst", shard=SHARDS),
            heldout=expand(f"{RUN}/corpus/heldout/{{split}}.jsonl.zst", split=SPLITS),
            ground_truth=f"{RUN}/corpus/ground_truth.parquet",
            stats=f"{RUN}/corpus/build_stats.json",
        log:
            f"{LOGS}/build_corpus.log",
        container:
            CONTAINERS["cpu"]
        resources:
            mem_mb=4000,
            runtime=30,
        params:
            cfg=json_param(
                {
                    "embedded": config["corpus"]["embedded"],
                    "set_names": config["corpus"]["set_names"],
                    "num_shards": config["corpus"]["num_shards"],
                }
            ),
            out_dir=parent_dir("stats"),
        shell:
            "selectlab corpus build --params {params.cfg:q} --out-dir {params.out_dir} > {log} 2>&1"

else:

    rule prepare_heldout:
        output:
            f"{RUN}/corpus/heldout/{{split}}.jsonl.zst",
        log:
            f"{LOGS}/prepare_heldout/{{split}}.log",
        container:
            CONTAINERS["cpu"]
        resources:
            mem_mb=8000,
            runtime=120,
        params:
            cfg=lambda w: json_param(
                {
                    "directory": config["corpus"]["slimpajama"][f"{w.split}_dir"],
                    "pattern": config["corpus"]["slimpajama"]["pattern"],
                    "docs_per_source": config["corpus"]["slimpajama"][
                        "heldout_docs_per_source"
                    ],
                    "max_doc_chars": config["corpus"]["reader"]["max_doc_chars"],
                    "on_damaged_file": reading.damaged_file_policy(config),
                    "seed": config["seed"],
                }
            ),
        shell:
            "selectlab corpus heldout --params {params.cfg:q} --out {output} > {log} 2>&1"


if config["tokenizer"]["kind"] == "train_bpe":

    rule train_tokenizer:
        input:
            [files for shard in SHARDS for files in SHARD_FILES[shard]],
        output:
            directory(f"{RUN}/tokenizer"),
        log:
            f"{LOGS}/train_tokenizer.log",
        container:
            CONTAINERS["cpu"]
        threads: 2
        resources:
            mem_mb=8000,
            runtime=60,
        params:
            vocab_size=config["tokenizer"]["vocab_size"],
            sample_chars=config["tokenizer"]["sample_chars"],
            max_doc_chars=config["corpus"]["reader"]["max_doc_chars"],
        shell:
            "selectlab tokens train --inputs {input} --vocab-size {params.vocab_size}"
            " --sample-chars {params.sample_chars} --max-doc-chars {params.max_doc_chars}"
            " --out-dir {output} > {log} 2>&1"

else:

    rule copy_tokenizer:
        output:
            directory(f"{RUN}/tokenizer"),
        log:
            f"{LOGS}/copy_tokenizer.log",
        container:
            CONTAINERS["cpu"]
        params:
            source=config["tokenizer"].get("path", ""),
        shell:
            "selectlab tokens copy --source {params.source} --out-dir {output} > {log} 2>&1"


rule tokenize_shard:
    input:
        raw=raw_shard_files,
        tokenizer=f"{RUN}/tokenizer",
    output:
        tokens=f"{RUN}/corpus/tokens/{{shard}}.npy",
        meta=f"{RUN}/attributes/meta/{{shard}}.parquet",
        report=f"{RUN}/corpus/reports/{{shard}}.json",
        quarantine=f"{RUN}/corpus/quarantine/{{shard}}.jsonl",
    log:
        f"{LOGS}/tokenize_shard/{{shard}}.log",
    container:
        CONTAINERS["cpu"]
    threads: 2
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        max_doc_chars=config["corpus"]["reader"]["max_doc_chars"],
        id_root=ID_ROOT,
        on_damaged_file=reading.damaged_file_policy(config),
    shell:
        "selectlab tokens encode --inputs {input.raw} --tokenizer {input.tokenizer}"
        " --shard {wildcards.shard} --max-doc-chars {params.max_doc_chars}"
        " --id-root {params.id_root:q} --on-damaged-file {params.on_damaged_file}"
        " --out-tokens {output.tokens} --out-meta {output.meta} --report {output.report}"
        " --quarantine {output.quarantine} > {log} 2>&1"


# Also where the pool's document ids are checked to be unique across shards.
rule read_report:
    input:
        reports=expand(f"{RUN}/corpus/reports/{{shard}}.json", shard=SHARDS),
        meta=expand(f"{RUN}/attributes/meta/{{shard}}.parquet", shard=SHARDS),
    output:
        report(
            f"{RUN}/tables/read_report.csv",
            caption="../report/read_report.rst",
            category="Corpus",
        ),
    log:
        f"{LOGS}/read_report.log",
    container:
        CONTAINERS["cpu"]
    shell:
        "selectlab corpus read-report --reports {input.reports} --meta {input.meta}"
        " --out {output} > {log} 2>&1"
