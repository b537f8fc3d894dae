# Evaluation: per-source perplexity and in-context learning (lm-eval) for every trained model.
ICL = config["evaluation"]["icl"]
LOCAL_ICL = ICL["tasks"] == "local"


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
    shell:
        "selectlab evaluate icl --model {input.model} {params.tasks} --params {params.cfg:q}"
        " --out {output} > {log} 2>&1"
