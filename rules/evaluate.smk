# Evaluation: per-source perplexity and in-context learning (lm-eval) for every trained model.
from selectlab.evaluate import resolve as evaluate_cfg

LOCAL_ICL = evaluate_cfg.uses_local_tasks(config)
PERPLEXITY_SHAPE = per_job(
    lambda w: evaluate_cfg.eval_shape(config, "eval_perplexity", w["variant"])
)
ICL_SHAPE = per_job(lambda w: evaluate_cfg.eval_shape(config, "eval_icl", w["variant"]))
# Both evaluation results of each variant (perplexity, then ICL): what the tables read.
EVAL_RESULTS = [
    path(RUN, variant)
    for variant in VARIANTS
    for path in (layout.perplexity, layout.icl)
]


if LOCAL_ICL:

    rule build_icl_tasks:
        input:
            layout.heldout(RUN, "test"),
        output:
            directory(layout.icl_tasks(RUN)),
        log:
            layout.log(RUN, "build_icl_tasks"),
        container:
            CONTAINERS["train"]
        threads: rule_threads("build_icl_tasks")
        resources:
            **rule_resources("build_icl_tasks"),
        params:
            cfg=json_param(evaluate_cfg.local_task_params(config)),
        shell:
            "selectlab evaluate tasks --heldout {input} --params {params.cfg:q}"
            " --out-dir {output} > {log} 2>&1"


rule eval_perplexity:
    input:
        model=layout.final_model(RUN),
        heldout=expand(layout.heldout(RUN), split=SPLITS),
    output:
        layout.perplexity(RUN),
    log:
        layout.job_log(RUN, "eval_perplexity", "{variant}"),
    benchmark:
        layout.benchmark(RUN, "eval_perplexity", "{variant}")
    container:
        CONTAINERS["train"]
    threads: job_threads(PERPLEXITY_SHAPE)
    resources:
        **job_resources(PERPLEXITY_SHAPE),
    params:
        cfg=lambda w: json_param(evaluate_cfg.perplexity_params(config, w.variant)),
    shell:
        "selectlab evaluate perplexity --model {input.model} --heldout {input.heldout}"
        " --params {params.cfg:q} --out {output} > {log} 2>&1"


rule eval_icl:
    input:
        model=layout.final_model(RUN),
        tasks=[layout.icl_tasks(RUN)] if LOCAL_ICL else [],
    output:
        layout.icl(RUN),
    log:
        layout.job_log(RUN, "eval_icl", "{variant}"),
    benchmark:
        layout.benchmark(RUN, "eval_icl", "{variant}")
    container:
        CONTAINERS["train"]
    threads: job_threads(ICL_SHAPE)
    resources:
        **job_resources(ICL_SHAPE),
    params:
        cfg=json_param(evaluate_cfg.icl_params(config)),
        tasks=optional_flag("--tasks-dir", "tasks"),
    shell:
        "selectlab evaluate icl --model {input.model} {params.tasks} --params {params.cfg:q}"
        " --out {output} > {log} 2>&1"
