# Evaluation: per-source perplexity and in-context learning (lm-eval) for every trained model.
from selectlab.evaluate import resolve as evaluate_cfg

LOCAL_ICL = evaluate_cfg.uses_local_tasks(config)
# lm-eval's benchmarks are read offline from the cache fetch_eval_data filled (docs/cluster.md).
ICL_DATA_CACHE_FLAG = (
    "" if LOCAL_ICL else f"--data-cache {evaluate_cfg.data_cache(config)}"
)
# Sized from the model and the tokens it scores (selectlab.evaluate.sizing).
PERPLEXITY_SHAPE = per_job(
    lambda w: evaluate_cfg.eval_shape(config, "eval_perplexity", w["variant"])
)
ICL_SHAPE = per_job(lambda w: evaluate_cfg.eval_shape(config, "eval_icl", w["variant"]))
# Per model: the overview's tasks and the (task, shots) settings of its papers' tables.
ICL_PARAMS = evaluate_cfg.icl_params(config)
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


# The lm-eval benchmarks, downloaded once on the submit host into a shared cache that the ICL
# jobs read offline (compute nodes may have no internet); nothing to fetch for local tasks.
localrules:
    fetch_eval_data,


rule fetch_eval_data:
    output:
        layout.lm_eval_data(RUN),
    log:
        layout.log(RUN, "fetch_eval_data"),
    container:
        CONTAINERS["train"]
    threads: rule_threads("fetch_eval_data")
    resources:
        **rule_resources("fetch_eval_data"),
    params:
        cfg=json_param(evaluate_cfg.fetch_params(config)),
        cache=evaluate_cfg.data_cache(config),
    shell:
        "selectlab evaluate fetch-data --params {params.cfg:q} --cache-dir {params.cache}"
        " --out {output} > {log} 2>&1"


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
        # Not an output: what a pre-empted job has scored survives its failure.
        progress=lambda w: layout.perplexity_progress(RUN, w.variant),
    shell:
        "selectlab evaluate perplexity --model {input.model} --heldout {input.heldout}"
        " --params {params.cfg:q} --progress {params.progress} --out {output} > {log} 2>&1"


rule eval_icl:
    input:
        model=layout.final_model(RUN),
        tasks=[layout.icl_tasks(RUN)] if LOCAL_ICL else [],
        data=layout.lm_eval_data(RUN),
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
        cfg=lambda w: json_param(ICL_PARAMS[w.variant]),
        tasks=optional_flag("--tasks-dir", "tasks"),
        data_cache=ICL_DATA_CACHE_FLAG,
        # Results per (task, shots) of this model, kept across reruns (not an output).
        cache=lambda w: layout.icl_cache(RUN, w.variant),
    shell:
        "selectlab evaluate icl --model {input.model} {params.tasks} {params.data_cache}"
        " --params {params.cfg:q} --cache-dir {params.cache} --out {output} > {log} 2>&1"
