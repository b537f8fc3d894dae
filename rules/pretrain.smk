# Pretraining: one Llama-style model per variant, from scratch or from another variant's model.


rule pretrain:
    input:
        data=f"{RUN}/selections/{{variant}}/train.npy",
        tokenizer=f"{RUN}/tokenizer",
        init=init_model,
    output:
        model=directory(f"{RUN}/models/{{variant}}/final"),
        train_log=f"{RUN}/models/{{variant}}/train_log.csv",
    log:
        f"{LOGS}/pretrain/{{variant}}.log",
    container:
        pretrain_container
    threads: 2
    resources:
        mem_mb=lambda w: preset_resource(w.variant, "mem_mb", 8000),
        runtime=lambda w: preset_resource(w.variant, "runtime", 240),
        nodes=lambda w: pretrain_nodes(w.variant),
        gpu=lambda w: pretrain_gpu_resources(w.variant)["gpu"],
        gpu_model=lambda w: pretrain_gpu_resources(w.variant)["gpu_model"],
        gres=lambda w: pretrain_gpu_resources(w.variant)["gres"],
        cpus_per_gpu=lambda w: pretrain_gpu_resources(w.variant)["cpus_per_gpu"],
        tasks=lambda w: pretrain_mpi_resources(w.variant)["tasks"],
        tasks_per_gpu=lambda w: pretrain_mpi_resources(w.variant)["tasks_per_gpu"],
        mpi=lambda w: pretrain_mpi_resources(w.variant)["mpi"],
        gpu_mem_mb=lambda w: pretrain_gpu_mem_mb(w.variant),
        # How the job runs (srun per node, GPUs, micro-batch, activation checkpointing, FSDP):
        # resources, not params, so resizing a preset resumes its models instead of rerunning.
        launcher=lambda w: pretrain_launcher(w.variant),
        launch=lambda w: train_sizing.launch_arguments(config, w.variant),
    params:
        cfg=lambda w: json_param(cfg.resolve_pretrain(config, w.variant)),
        checkpoints=lambda w, output: os.path.join(
            os.path.dirname(output.model), "checkpoints"
        ),
        init=lambda w, input: f"--init-from {input.init}" if input.init else "",
    shell:
        "{resources.launcher}selectlab pretrain --data {input.data} --tokenizer {input.tokenizer}"
        " {params.init} --params {params.cfg:q} {resources.launch} --out-dir {output.model}"
        " --checkpoint-dir {params.checkpoints} --log-csv {output.train_log} > {log} 2>&1"
