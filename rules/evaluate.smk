# Evaluation: per-source perplexity and in-context learning (lm-eval) for every trained model.
ICL = config["evaluation"]["icl"]
LOCAL_ICL = ICL["tasks"] == "local"
ICL_DATA_CACHE = ICL.get("data_cache", "cache/huggingface")


if LOCAL_ICL:

    rule build_icl_tasks:
        input:
            f"{RUN}/corpus/heldout/test.jsonl.zst",
        output:
            directory(f"{RUN}/eval/tasks"),
        log:
            f"{LOGS}/build_icl_tasks.log",
        container:
            CONTAINERS["train"]
        params:
            cfg=json_param(ICL.get("local_tasks", {})),
        shell:
            "selectlab evaluate tasks --heldout {input} --params {params.cfg:q}"
            " --out-dir {output} > {log} 2>&1"


# The lm-eval benchmarks, downloaded once on the submit host into a shared cache that the ICL
# jobs read offline (compute nodes may have no internet); nothing to fetch for local tasks.
localrules:
    fetch_eval_data,


rule fetch_eval_data:
    output:
        f"{RUN}/eval/lm_eval_data.json",
    log:
        f"{LOGS}/fetch_eval_data.log",
    container:
        CONTAINERS["train"]
    params:
        cfg=json_param({"tasks": ICL["tasks"]}),
        cache=ICL_DATA_CACHE,
    shell:
        "selectlab evaluate fetch-data --params {params.cfg:q} --cache-dir {params.cache}"
        " --out {output} > {log} 2>&1"


rule eval_perplexity:
    input:
        model=f"{RUN}/models/{{variant}}/final",
        heldout=expand(f"{RUN}/corpus/heldout/{{split}}.jsonl.zst", split=SPLITS),
    output:
        f"{RUN}/eval/{{variant}}/perplexity.json",
    log:
        f"{LOGS}/eval_perplexity/{{variant}}.log",
    container:
        CONTAINERS["train"]
    threads: 2
    resources:
        mem_mb=eval_resource("perplexity", "mem_mb"),
        runtime=eval_resource("perplexity", "runtime"),
        gpu=eval_gpu(),
        gpu_model=lambda w: eval_gpu_resource(w.variant, "gpu_model"),
        cpus_per_gpu=lambda w: eval_gpu_resource(w.variant, "cpus_per_gpu"),
    params:
        cfg=lambda w: json_param(
            config["evaluation"]["perplexity"]
            | {
                "seq_len": cfg.resolve_pretrain(config, w.variant)["settings"][
                    "seq_len"
                ]
            }
        ),
    shell:
        "selectlab evaluate perplexity --model {input.model} --heldout {input.heldout}"
        " --params {params.cfg:q} --out {output} > {log} 2>&1"


rule eval_icl:
    input:
        model=f"{RUN}/models/{{variant}}/final",
        tasks=[f"{RUN}/eval/tasks"] if LOCAL_ICL else [],
        data=rules.fetch_eval_data.output,
    output:
        f"{RUN}/eval/{{variant}}/icl.json",
    log:
        f"{LOGS}/eval_icl/{{variant}}.log",
    container:
        CONTAINERS["train"]
    threads: 2
    resources:
        mem_mb=eval_resource("icl", "mem_mb"),
        runtime=eval_resource("icl", "runtime"),
        gpu=eval_gpu(),
        gpu_model=lambda w: eval_gpu_resource(w.variant, "gpu_model"),
        cpus_per_gpu=lambda w: eval_gpu_resource(w.variant, "cpus_per_gpu"),
    params:
        cfg=json_param(
            {k: ICL[k] for k in ("tasks", "batch_size", "dtype", "limit") if k in ICL}
            | {"seed": config["seed"]}
        ),
        tasks=lambda w, input: f"--tasks-dir {input.tasks}" if input.tasks else "",
        data=f"--data-cache {ICL_DATA_CACHE}" if not LOCAL_ICL else "",
    shell:
        "selectlab evaluate icl --model {input.model} {params.tasks} {params.data}"
        " --params {params.cfg:q} --out {output} > {log} 2>&1"
