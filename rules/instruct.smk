# Instruction following (QuRating Figure 3, DataMan Figure 2): the instruction set, supervised
# fine-tuning of every variant a comparison names, its answers to the held-out instructions,
# pairwise judgments of the answers against each comparison's reference variant (both orders,
# through the judge backends and an undeclared sqlite cache that survives reruns), and the
# win-rate table and figure (names from selectlab.report.plan). GPU rules at full scale: sft,
# generate (vLLM) and a local judge, each sized by its `instruct.<stage>.resources`.
from selectlab.instruct import resolve as instruct_cfg
from selectlab.report import plan as report_cfg

INSTRUCT = instruct_cfg.configured(config)
INSTRUCT_COMPARISONS = list(instruct_cfg.comparisons(config)) if INSTRUCT else []
INSTRUCT_SHAPES = (
    {
        stage: instruct_cfg.job_shape_of(config, stage)
        for stage in instruct_cfg.SIZED_STAGES
    }
    if INSTRUCT
    else {}
)
# What the archive keeps besides the win-rate table and figure.
INSTRUCT_ARCHIVE = instruct_cfg.archive_files(config, RUN)
INSTRUCT_CORPUS = (
    instruct_cfg.corpus_inputs(config, SHARD_FILES, RUN, SPLITS) if INSTRUCT else []
)
COMPARISON_ANSWERS = lambda w: instruct_cfg.comparison_answers(
    config, RUN, w.comparison
)
(WINRATE_TABLE,) = report_cfg.WINRATE_TABLES
(WINRATE_FIGURE,) = report_cfg.WINRATE_FIGURES


if INSTRUCT:

    wildcard_constraints:
        comparison=names_pattern(INSTRUCT_COMPARISONS),

    rule instruct_data:
        input:
            tokenizer=layout.tokenizer(RUN),
            corpus=INSTRUCT_CORPUS,
        output:
            train=layout.instruct_train(RUN),
            eval=layout.instruct_eval(RUN),
            record=layout.instruct_split(RUN),
        log:
            layout.log(RUN, "instruct_data"),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("instruct_data")
        resources:
            **rule_resources("instruct_data"),
        params:
            # A lambda: the template's "{instruction}" is no wildcard.
            cfg=lambda w: json_param(instruct_cfg.resolve_data(config)),
            corpus=optional_flag("--corpus", "corpus"),
        shell:
            "selectlab instruct data --params {params.cfg:q} --tokenizer {input.tokenizer}"
            " {params.corpus} --out-train {output.train} --out-eval {output.eval}"
            " --out-record {output.record} > {log} 2>&1"

    rule sft:
        input:
            model=layout.final_model(RUN),
            train=layout.instruct_train(RUN),
        output:
            model=directory(layout.sft_model(RUN)),
            sft_log=layout.sft_log(RUN),
        log:
            layout.job_log(RUN, "sft", "{variant}"),
        benchmark:
            layout.benchmark(RUN, "sft", "{variant}")
        container:
            CONTAINERS["train"]
        threads: INSTRUCT_SHAPES["sft"]["cpus"]
        resources:
            **res.present(res.as_snakemake(INSTRUCT_SHAPES["sft"])),
        params:
            cfg=lambda w: json_param(instruct_cfg.resolve_sft(config, w.variant)),
            checkpoints=lambda w: layout.sft_checkpoints(RUN, w.variant),
        shell:
            "selectlab instruct sft --model {input.model} --train {input.train}"
            " --params {params.cfg:q} --gpus {resources.gpu} --threads {threads}"
            " --out-dir {output.model}"
            " --checkpoint-dir {params.checkpoints} --log-csv {output.sft_log} > {log} 2>&1"

    rule generate:
        input:
            model=layout.sft_model(RUN),
            eval=layout.instruct_eval(RUN),
        output:
            answers=layout.answers(RUN),
            metrics=layout.answers_metrics(RUN),
        log:
            layout.job_log(RUN, "generate", "{variant}"),
        benchmark:
            layout.benchmark(RUN, "generate", "{variant}")
        container:
            CONTAINERS[instruct_cfg.container_key(config, "generate")]
        threads: INSTRUCT_SHAPES["generate"]["cpus"]
        resources:
            **res.present(res.as_snakemake(INSTRUCT_SHAPES["generate"])),
        params:
            cfg=lambda w: json_param(instruct_cfg.resolve_generate(config)),
        shell:
            "selectlab instruct generate --model {input.model} --eval {input.eval}"
            " --variant {wildcards.variant} --params {params.cfg:q} --gpus {resources.gpu}"
            " --threads {threads} --out {output.answers}"
            " --out-metrics {output.metrics} > {log} 2>&1"

    rule judge_answers:
        input:
            eval=layout.instruct_eval(RUN),
            answers=COMPARISON_ANSWERS,
        output:
            judgments=layout.answer_judgments(RUN),
            summary=layout.answer_judge_summary(RUN),
        log:
            layout.job_log(RUN, "judge_answers", "{comparison}"),
        container:
            CONTAINERS[instruct_cfg.container_key(config, "judge")]
        threads: INSTRUCT_SHAPES["judge"]["cpus"]
        resources:
            **res.present(res.as_snakemake(INSTRUCT_SHAPES["judge"])),
        params:
            cfg=lambda w: json_param(instruct_cfg.resolve_judge(config, w.comparison)),
            cache=lambda w: layout.answer_judge_cache(RUN, w.comparison),
        shell:
            "selectlab instruct judge --eval {input.eval} --answers {input.answers}"
            " --params {params.cfg:q} --gpus {resources.gpu} --cache {params.cache}"
            " --out-judgments {output.judgments} --out-summary {output.summary}"
            " > {log} 2>&1"

    rule winrate:
        input:
            expand(layout.answer_judgments(RUN), comparison=INSTRUCT_COMPARISONS),
        output:
            csv=report(
                layout.table(RUN, WINRATE_TABLE, "csv"),
                caption=caption(report_cfg.table_caption(WINRATE_TABLE)),
                category="Tables",
            ),
            md=layout.table(RUN, WINRATE_TABLE, "md"),
            figure=report(
                layout.figure(RUN, WINRATE_FIGURE),
                caption=caption(report_cfg.figure_caption(WINRATE_FIGURE)),
                category="Figures",
            ),
        log:
            layout.log(RUN, "winrate"),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("winrate")
        resources:
            **rule_resources("winrate"),
        params:
            cfg=json_param(instruct_cfg.resolve_winrate(config, JUDGE_NOTES)),
        shell:
            "selectlab instruct winrate --params {params.cfg:q} --judgments {input}"
            " --out-csv {output.csv} --out-md {output.md} --out-figure {output.figure}"
            " > {log} 2>&1"
