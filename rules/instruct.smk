# Instruction following (QuRating Figure 3, DataMan Figure 2): the instruction set, supervised
# fine-tuning of every variant a comparison names, its answers to the held-out instructions,
# pairwise judgments of the answers against each comparison's reference variant (both orders,
# through the judge backends and an undeclared sqlite cache that survives reruns), and the
# win-rate table and figure. GPU rules at full scale: sft, generate (vLLM) and a local judge.
if INSTRUCT:

    wildcard_constraints:
        comparison=names_pattern(INSTRUCT_COMPARISONS),

    rule instruct_data:
        input:
            tokenizer=f"{RUN}/tokenizer",
            corpus=instruct_corpus_files(),
        output:
            train=f"{INSTRUCT_DATA}/train.parquet",
            eval=f"{INSTRUCT_DATA}/eval.parquet",
            record=f"{INSTRUCT_DATA}/split.json",
        log:
            f"{LOGS}/instruct_data.log",
        container:
            CONTAINERS["cpu"]
        threads: 1
        # A full ShareGPT dump (~700 MB of JSON) takes several GB once parsed.
        resources:
            mem_mb=16000,
            runtime=60,
        params:
            # A lambda: the template's "{instruction}" is no wildcard.
            cfg=lambda w: json_param(instruct_cfg.resolve_data(config)),
            corpus=lambda w, input: f"--corpus {input.corpus}" if input.corpus else "",
        shell:
            "selectlab instruct data --params {params.cfg:q} --tokenizer {input.tokenizer}"
            " {params.corpus} --out-train {output.train} --out-eval {output.eval}"
            " --out-record {output.record} > {log} 2>&1"

    rule sft:
        input:
            model=f"{RUN}/models/{{variant}}/final",
            train=rules.instruct_data.output.train,
        output:
            model=directory(f"{RUN}/{instruct_cfg.SFT_MODEL}"),
            sft_log=f"{RUN}/{instruct_cfg.SFT_LOG}",
        log:
            f"{LOGS}/sft/{{variant}}.log",
        container:
            CONTAINERS["train"]
        threads: instruct_resource("sft", "cpus")
        resources:
            mem_mb=instruct_resource("sft", "mem_mb"),
            runtime=instruct_resource("sft", "runtime"),
            gpu=instruct_resource("sft", "gpu"),
            gpu_model=instruct_gpu_model("sft"),
        params:
            cfg=lambda w: json_param(instruct_cfg.resolve_sft(config, w.variant)),
            checkpoints=lambda w: f"{RUN}/{instruct_cfg.SFT_CHECKPOINTS}".format(
                variant=w.variant
            ),
        shell:
            "selectlab instruct sft --model {input.model} --train {input.train}"
            " --params {params.cfg:q} --gpus {resources.gpu} --threads {threads}"
            " --out-dir {output.model}"
            " --checkpoint-dir {params.checkpoints} --log-csv {output.sft_log} > {log} 2>&1"

    rule generate:
        input:
            model=rules.sft.output.model,
            eval=rules.instruct_data.output.eval,
        output:
            INSTRUCT_ANSWERS,
        log:
            f"{LOGS}/generate/{{variant}}.log",
        container:
            CONTAINERS[instruct_cfg.container_key(config, "generate")]
        threads: instruct_resource("generate", "cpus")
        resources:
            mem_mb=instruct_resource("generate", "mem_mb"),
            runtime=instruct_resource("generate", "runtime"),
            gpu=instruct_resource("generate", "gpu"),
            gpu_model=instruct_gpu_model("generate"),
        params:
            cfg=lambda w: json_param(instruct_cfg.resolve_generate(config)),
        shell:
            "selectlab instruct generate --model {input.model} --eval {input.eval}"
            " --variant {wildcards.variant} --params {params.cfg:q} --gpus {resources.gpu}"
            " --threads {threads} --out {output} > {log} 2>&1"

    rule judge_answers:
        input:
            eval=rules.instruct_data.output.eval,
            answers=comparison_answers,
        output:
            judgments=INSTRUCT_JUDGMENTS,
            summary=f"{RUN}/{instruct_cfg.JUDGE_SUMMARY}",
        log:
            f"{LOGS}/judge_answers/{{comparison}}.log",
        container:
            CONTAINERS[instruct_cfg.container_key(config, "judge")]
        threads: instruct_resource("judge", "cpus")
        resources:
            mem_mb=instruct_resource("judge", "mem_mb"),
            runtime=instruct_resource("judge", "runtime"),
            gpu=instruct_resource("judge", "gpu"),
            gpu_model=instruct_gpu_model("judge"),
        params:
            cfg=lambda w: json_param(instruct_cfg.resolve_judge(config, w.comparison)),
            cache=lambda w, output: os.path.join(
                os.path.dirname(output.judgments), "cache.sqlite"
            ),
        shell:
            "selectlab instruct judge --eval {input.eval} --answers {input.answers}"
            " --params {params.cfg:q} --gpus {resources.gpu} --cache {params.cache}"
            " --out-judgments {output.judgments} --out-summary {output.summary}"
            " > {log} 2>&1"

    rule winrate:
        input:
            expand(INSTRUCT_JUDGMENTS, comparison=INSTRUCT_COMPARISONS),
        output:
            csv=report(
                f"{RUN}/tables/{instruct_cfg.TABLE}.csv",
                caption="../report/winrate_table.rst",
                category="Tables",
            ),
            md=f"{RUN}/tables/{instruct_cfg.TABLE}.md",
            figure=report(
                f"{RUN}/figures/{instruct_cfg.FIGURE}.png",
                caption="../report/winrate.rst",
                category="Figures",
            ),
        log:
            f"{LOGS}/winrate.log",
        container:
            CONTAINERS["cpu"]
        threads: 1
        resources:
            mem_mb=2000,
            runtime=30,
        params:
            cfg=json_param(instruct_cfg.resolve_winrate(config, judge_notes())),
        shell:
            "selectlab instruct winrate --params {params.cfg:q} --judgments {input}"
            " --out-csv {output.csv} --out-md {output.md} --out-figure {output.figure}"
            " > {log} 2>&1"
