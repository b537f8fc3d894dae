# MATES (selectlab.mates.plan): a `mates` variant pre-trains in stages. Each stage is a generated
# variant `{variant}__stage{k}` that the ordinary select, pack and pretrain rules run (stage 1
# uniform, stage k > 1 by predicted influence, continuing from stage k-1's model). Before stage
# k > 1: probe jobs measure oracle influence on the stage k-1 model (in parallel), a fit job
# trains the data-influence model on them, and the annotate rule scores the pool with it as
# family `{variant}__influence{k}`. The variant's own selection, model and training log are then
# assembled from its stages, so evaluation, tables and figures treat it like any variant.
MATES_VARIANTS = mates_cfg.mates_variants(config)


def mates_stage_files(pattern, wildcards):
    """`pattern` (with {stage}) for every stage of the variant, in stage order."""
    return expand(pattern, stage=mates_cfg.stage_names(config, wildcards.mates))


def mates_resource(job, key):
    return mates_cfg.resources(config, job)[key]


if MATES_VARIANTS:

    ruleorder: mates_selection > select
    ruleorder: mates_model > pretrain

    rule mates_probe:
        input:
            model=lambda w: (
                f"{RUN}/models/{mates_cfg.stage_name(w.mates, int(w.stage) - 1)}/final"
            ),
            reference=lambda w: mates_cfg.reference_files(config, RUN, w.mates),
            # Stands for every shard's meta sidecar and tokens (as for selection).
            corpus=f"{RUN}/tables/read_report.csv",
            earlier=lambda w: mates_cfg.earlier_selections(RUN, w.mates, int(w.stage)),
        output:
            probes=f"{RUN}/mates/{{mates}}/stage{{stage}}/probes/part{{part}}.parquet",
            metrics=f"{RUN}/mates/{{mates}}/stage{{stage}}/probes/part{{part}}.json",
        log:
            f"{LOGS}/mates_probe/{{mates}}/stage{{stage}}_part{{part}}.log",
        wildcard_constraints:
            mates=names_pattern(MATES_VARIANTS),
            stage="[0-9]+",
            part="[0-9]+",
        container:
            CONTAINERS["train"]
        threads: 2
        resources:
            mem_mb=mates_resource("probe", "mem_mb"),
            runtime=mates_resource("probe", "runtime"),
            gpu=mates_resource("probe", "gpu"),
        params:
            cfg=lambda w: json_param(
                mates_cfg.probe_params(config, w.mates, int(w.stage))
            ),
            meta=expand(f"{RUN}/attributes/meta/{{shard}}.parquet", shard=SHARDS),
            tokens_dir=f"{RUN}/corpus/tokens",
            # Kept by the stage's pretrain job next to its model (rules/pretrain.smk).
            checkpoints=lambda w, input: os.path.join(
                os.path.dirname(input.model), "checkpoints"
            ),
        shell:
            "selectlab mates probe --model {input.model} --checkpoints {params.checkpoints}"
            " --reference {input.reference}"
            " --params {params.cfg:q} --part {wildcards.part} --meta {params.meta}"
            " --tokens-dir {params.tokens_dir} --earlier {input.earlier}"
            " --gpus {resources.gpu} --threads {threads} --out {output.probes}"
            " --metrics {output.metrics} > {log} 2>&1"

    rule mates_fit:
        input:
            probes=lambda w: expand(
                f"{RUN}/mates/{w.mates}/stage{w.stage}/probes/part{{part}}.parquet",
                part=mates_cfg.probe_parts(config, w.mates),
            ),
        output:
            model=directory(
                f"{RUN}/mates/{{mates}}/stage{{stage}}/influence_model/model"
            ),
            card=f"{RUN}/mates/{{mates}}/stage{{stage}}/influence_model/rater_card.json",
            metrics=f"{RUN}/mates/{{mates}}/stage{{stage}}/metrics.json",
        log:
            f"{LOGS}/mates_fit/{{mates}}/stage{{stage}}.log",
        wildcard_constraints:
            mates=names_pattern(MATES_VARIANTS),
            stage="[0-9]+",
        container:
            CONTAINERS["train"]
        threads: 2
        resources:
            mem_mb=mates_resource("fit", "mem_mb"),
            runtime=mates_resource("fit", "runtime"),
            gpu=mates_resource("fit", "gpu"),
        params:
            cfg=lambda w: json_param(
                mates_cfg.influence_model_params(config, w.mates, int(w.stage))
            ),
            out=parent_dir("card"),
        shell:
            "selectlab mates fit --probes {input.probes} --params {params.cfg:q}"
            " --gpus {resources.gpu} --threads {threads} --out {params.out}"
            " --metrics {output.metrics} > {log} 2>&1"

    rule mates_selection:
        input:
            selections=lambda w: mates_stage_files(
                f"{RUN}/selections/{{stage}}/selection.parquet", w
            ),
            manifests=lambda w: mates_stage_files(
                f"{RUN}/selections/{{stage}}/manifest.json", w
            ),
        output:
            selection=f"{RUN}/selections/{{mates}}/selection.parquet",
            manifest=f"{RUN}/selections/{{mates}}/manifest.json",
        log:
            f"{LOGS}/mates_selection/{{mates}}.log",
        wildcard_constraints:
            mates=names_pattern(MATES_VARIANTS),
        container:
            CONTAINERS["cpu"]
        resources:
            mem_mb=8000,
            runtime=60,
        params:
            cfg=lambda w: json_param(mates_cfg.assembly_params(config, w.mates)),
            out_dir=parent_dir("manifest"),
        shell:
            "selectlab mates finish-selection --selections {input.selections}"
            " --manifests {input.manifests} --params {params.cfg:q}"
            " --out-dir {params.out_dir} > {log} 2>&1"

    rule mates_model:
        input:
            models=lambda w: mates_stage_files(f"{RUN}/models/{{stage}}/final", w),
            logs=lambda w: mates_stage_files(f"{RUN}/models/{{stage}}/train_log.csv", w),
        output:
            model=directory(f"{RUN}/models/{{mates}}/final"),
            train_log=f"{RUN}/models/{{mates}}/train_log.csv",
        log:
            f"{LOGS}/mates_model/{{mates}}.log",
        wildcard_constraints:
            mates=names_pattern(MATES_VARIANTS),
        container:
            CONTAINERS["cpu"]
        resources:
            mem_mb=4000,
            runtime=120,
        shell:
            "selectlab mates finish-model --models {input.models} --logs {input.logs}"
            " --variant {wildcards.mates} --out-dir {output.model}"
            " --out-log {output.train_log} > {log} 2>&1"
