# MATES (selectlab.mates.plan): a `mates` variant pre-trains in stages. Each stage is a generated
# variant `{variant}__stage{k}` that the ordinary select, pack and pretrain rules run (stage 1
# uniform, stage k > 1 by predicted influence, continuing from stage k-1's model). Before stage
# k > 1: probe jobs measure oracle influence on the stage k-1 model (in parallel), a fit job
# trains the data-influence model on them, and the annotate rule scores the pool with it as
# family `{variant}__influence{k}`. The variant's own selection, model and training log are then
# assembled from its stages, so evaluation, tables and figures treat it like any variant.
MATES_VARIANTS = mates_cfg.mates_variants(config)
# A probe job's model, reference set and earlier selections.
PROBE_INPUTS = lambda w: mates_cfg.probe_inputs(config, RUN, w.variant, int(w.stage))
# Each stage's selection, manifest, model and log, in stage order.
STAGE_INPUTS = lambda w: mates_cfg.stage_inputs(config, RUN, w.variant)
PROBE_SHAPE = per_job(lambda w: mates_cfg.job_shape_of(config, "probe"))
FIT_SHAPE = per_job(lambda w: mates_cfg.job_shape_of(config, "fit"))


if MATES_VARIANTS:

    ruleorder: mates_selection > select
    ruleorder: mates_model > pretrain

    rule mates_probe:
        input:
            model=lambda w: PROBE_INPUTS(w)["model"],
            reference=lambda w: PROBE_INPUTS(w)["reference"],
            # Stands for every shard's meta sidecar and tokens (as for selection).
            corpus=layout.read_report(RUN),
            earlier=lambda w: PROBE_INPUTS(w)["earlier"],
        output:
            probes=layout.mates_probes(RUN),
            metrics=layout.mates_probe_metrics(RUN),
        log:
            layout.job_log(RUN, "mates_probe", "{variant}/stage{stage}_part{part}"),
        benchmark:
            layout.benchmark(RUN, "mates_probe", "{variant}/stage{stage}_part{part}")
        wildcard_constraints:
            variant=names_pattern(MATES_VARIANTS),
            stage="[0-9]+",
            part="[0-9]+",
        container:
            CONTAINERS["train"]
        threads: job_threads(PROBE_SHAPE)
        resources:
            **job_resources(PROBE_SHAPE),
        params:
            cfg=lambda w: json_param(
                mates_cfg.probe_params(config, w.variant, int(w.stage))
            ),
            meta_dir=os.path.dirname(layout.meta_sidecar(RUN)),
            tokens_dir=layout.tokens_dir(RUN),
            # Kept by the previous stage's pretrain job next to its model (rules/pretrain.smk).
            checkpoints=lambda w, input: os.path.join(
                os.path.dirname(input.model[0]), "checkpoints"
            ),
            gpus=lambda w: PROBE_SHAPE(w)["gpu"],
        shell:
            "selectlab mates probe --model {input.model} --checkpoints {params.checkpoints}"
            " --reference {input.reference}"
            " --params {params.cfg:q} --part {wildcards.part} --pool {input.corpus}"
            " --meta-dir {params.meta_dir}"
            " --tokens-dir {params.tokens_dir} --earlier {input.earlier}"
            " --gpus {params.gpus} --threads {threads} --out {output.probes}"
            " --metrics {output.metrics} > {log} 2>&1"

    rule mates_fit:
        input:
            probes=lambda w: mates_cfg.probe_files(config, RUN, w.variant, int(w.stage)),
        output:
            model=directory(layout.influence_model(RUN)),
            card=layout.influence_model_card(RUN),
            metrics=layout.mates_fit_metrics(RUN),
        log:
            layout.job_log(RUN, "mates_fit", "{variant}/stage{stage}"),
        benchmark:
            layout.benchmark(RUN, "mates_fit", "{variant}/stage{stage}")
        wildcard_constraints:
            variant=names_pattern(MATES_VARIANTS),
            stage="[0-9]+",
        container:
            CONTAINERS["train"]
        threads: job_threads(FIT_SHAPE)
        resources:
            **job_resources(FIT_SHAPE),
        params:
            cfg=lambda w: json_param(
                mates_cfg.influence_model_params(config, w.variant, int(w.stage))
            ),
            out=parent_dir("card"),
            gpus=lambda w: FIT_SHAPE(w)["gpu"],
        shell:
            "selectlab mates fit --probes {input.probes} --params {params.cfg:q}"
            " --gpus {params.gpus} --threads {threads} --out {params.out}"
            " --metrics {output.metrics} > {log} 2>&1"

    rule mates_selection:
        input:
            selections=lambda w: STAGE_INPUTS(w)["selections"],
            manifests=lambda w: STAGE_INPUTS(w)["manifests"],
        output:
            selection=layout.selection(RUN),
            manifest=layout.selection_manifest(RUN),
        log:
            layout.job_log(RUN, "mates_selection", "{variant}"),
        wildcard_constraints:
            variant=names_pattern(MATES_VARIANTS),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("mates_selection")
        resources:
            **rule_resources("mates_selection"),
        params:
            cfg=lambda w: json_param(mates_cfg.assembly_params(config, w.variant)),
            out_dir=parent_dir("manifest"),
        shell:
            "selectlab mates finish-selection --selections {input.selections}"
            " --manifests {input.manifests} --params {params.cfg:q}"
            " --out-dir {params.out_dir} > {log} 2>&1"

    rule mates_model:
        input:
            models=lambda w: STAGE_INPUTS(w)["models"],
            logs=lambda w: STAGE_INPUTS(w)["logs"],
        output:
            model=directory(layout.final_model(RUN)),
            train_log=layout.train_log(RUN),
        log:
            layout.job_log(RUN, "mates_model", "{variant}"),
        wildcard_constraints:
            variant=names_pattern(MATES_VARIANTS),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("mates_model")
        resources:
            **rule_resources("mates_model"),
        shell:
            "selectlab mates finish-model --models {input.models} --logs {input.logs}"
            " --variant {wildcards.variant} --out-dir {output.model}"
            " --out-log {output.train_log} > {log} 2>&1"
