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
        CONTAINERS["train"]
    threads: 2
    resources:
        mem_mb=8000,
        runtime=240,
        gpu=0,
    params:
        cfg=lambda w: json_param(cfg.resolve_pretrain(config, w.variant)),
        checkpoints=lambda w, output: os.path.join(
            os.path.dirname(output.model), "checkpoints"
        ),
        init=lambda w, input: f"--init-from {input.init}" if input.init else "",
    shell:
        "selectlab pretrain --data {input.data} --tokenizer {input.tokenizer} {params.init}"
        " --params {params.cfg:q} --gpus {resources.gpu} --out-dir {output.model}"
        " --checkpoint-dir {params.checkpoints} --log-csv {output.train_log} > {log} 2>&1"
