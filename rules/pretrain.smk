# Pretraining: one Llama-style model per variant, from scratch or from another variant's model.
# A job's size comes from its model preset (selectlab.train.resolve); a multi-node job runs its
# command on the batch node, which starts one task per node in the train image
# (selectlab.train.launch, docs/cluster.md).
from selectlab.train import launch

PRETRAIN_SHAPE = per_job(lambda w: train_cfg.pretrain_shape(config, w["variant"]))
# Points of training at which the rows of a curve figure save snapshots (Meta-rater Figure 1).
SNAPSHOT_FRACTIONS = train_cfg.snapshot_fractions(config)
# srun does not exist inside the container, so a multi-node command runs on the host...
PRETRAIN_CONTAINER = lambda w: (
    None if PRETRAIN_SHAPE(w)["nodes"] > 1 else CONTAINERS["train"]
)
# ...and starts one `selectlab pretrain` per node, each in the image (empty on one node).
PRETRAIN_LAUNCHER = lambda w: launch.node_launcher(
    PRETRAIN_SHAPE(w),
    image=CONTAINERS["train"] if USES_APPTAINER else None,
    apptainer_args=workflow.deployment_settings.apptainer_args,
    home=os.getcwd(),
)

# `selectlab pretrain --launch ... --gpus ... --nodes ...`.
PRETRAIN_LAUNCH = lambda w: launch.launch_options(
    train_cfg.launch_settings(config, w.variant), PRETRAIN_SHAPE(w)
)
# Estimated peak GPU memory of one process; stops the plan if it cannot fit a GPU of a
# partition the job could be sent to (selectlab.train.memory, docs/cluster.md).
PRETRAIN_GPU_MEM_MB = per_job(
    lambda w: train_cfg.checked_gpu_memory_mb(
        config, w["variant"], slurm_partition_file()
    )
)


rule pretrain:
    input:
        data=layout.packed(RUN),
        tokenizer=layout.tokenizer(RUN),
        init=lambda w: train_cfg.init_inputs(config, RUN, w.variant),
    output:
        model=directory(layout.final_model(RUN)),
        train_log=layout.train_log(RUN),
    log:
        layout.job_log(RUN, "pretrain", "{variant}"),
    benchmark:
        layout.benchmark(RUN, "pretrain", "{variant}")
    container:
        PRETRAIN_CONTAINER
    threads: job_threads(PRETRAIN_SHAPE)
    resources:
        **job_resources(PRETRAIN_SHAPE, multi_node=True),
        gpu_mem_mb=PRETRAIN_GPU_MEM_MB,
        # How the job runs (srun per node, GPUs, micro-batch, activation checkpointing, FSDP):
        # resources, not params, so resizing a preset resumes its models instead of rerunning.
        launcher=PRETRAIN_LAUNCHER,
        launch=PRETRAIN_LAUNCH,
    params:
        cfg=lambda w: json_param(
            train_cfg.resolve_pretrain(
                config, w.variant, SNAPSHOT_FRACTIONS.get(w.variant)
            )
        ),
        checkpoints=lambda w: layout.checkpoints(RUN, w.variant),
        init=optional_flag("--init-from", "init"),
    shell:
        "{resources.launcher}selectlab pretrain --data {input.data} --tokenizer {input.tokenizer}"
        " {params.init} --params {params.cfg:q} {resources.launch} --out-dir {output.model}"
        " --checkpoint-dir {params.checkpoints} --log-csv {output.train_log} > {log} 2>&1"
