# Raters: per configured rater (qurater, dataman, prrc, fineweb_edu, wanjuan), train on its judge
# protocol's labels.parquet (or, with `pretrained`, wrap the public classifiers' directories)
# into raters/{rater}/, loadable with selectlab.raters.load_rater; then the rater tables. A GPU
# rule at full scale: raters.<rater>.gpu says how many GPUs the training job asks for.


wildcard_constraints:
    rater=names_pattern(RATERS),


rule train_rater:
    input:
        labels=rater_labels,
        tokenizer=rater_tokenizer,
    output:
        model=directory(f"{RUN}/raters/{{rater}}/model"),
        card=f"{RUN}/raters/{{rater}}/rater_card.json",
        metrics=f"{RUN}/raters/{{rater}}/metrics.json",
    log:
        f"{LOGS}/train_rater/{{rater}}.log",
    container:
        CONTAINERS["train"]
    threads: 2
    resources:
        mem_mb=rater_resource("mem_mb"),
        runtime=rater_resource("runtime"),
        gpu=rater_resource("gpu"),
        # Chunks per forward pass: speed, not what is learned (a resource: reruns nothing).
        throughput=lambda w: json_param(raters_cfg.resolve_throughput(config, w.rater)),
    params:
        cfg=lambda w: json_param(raters_cfg.rater_params(config, w.rater)),
        notes=json_param(judge_notes()),
        out=parent_dir("card"),
        labels=lambda w, input: f"--labels {input.labels}" if input.labels else "",
        tokenizer=lambda w, input: (
            f"--tokenizer {input.tokenizer}" if input.tokenizer else ""
        ),
    shell:
        "selectlab raters train --rater {wildcards.rater} --params {params.cfg:q}"
        " --throughput {resources.throughput:q}"
        " {params.labels} {params.tokenizer} --judge-notes {params.notes:q}"
        " --gpus {resources.gpu} --threads {threads} --out {params.out}"
        " --metrics {output.metrics} > {log} 2>&1"


if RATER_TABLES:

    rule rater_tables:
        input:
            expand(f"{RUN}/raters/{{rater}}/metrics.json", rater=RATERS),
        output:
            expand(
                f"{RUN}/tables/{{name}}.{{ext}}", name=RATER_TABLES, ext=["csv", "md"]
            ),
        log:
            f"{LOGS}/rater_tables.log",
        container:
            CONTAINERS["cpu"]
        threads: 1
        resources:
            mem_mb=2000,
            runtime=10,
        params:
            names=RATER_TABLES,
            out=lambda w, output: os.path.dirname(output[0]),
        shell:
            "selectlab raters tables --metrics {input} --expect {params.names}"
            " --out-dir {params.out} > {log} 2>&1"
