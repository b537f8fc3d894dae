# Raters: per configured rater (qurater, dataman, prrc, fineweb_edu, wanjuan), train on its judge
# protocol's labels.parquet (or, with `pretrained`, wrap the public classifiers' directories)
# into raters/{rater}/, loadable with selectlab.raters.load_rater; then the rater tables. On GPUs
# at full scale: raters.<rater>.resources says what each training job asks for.
from selectlab.raters import resolve as raters_cfg

RATERS = raters_cfg.configured_raters(config)
RATER_TABLES = raters_cfg.table_names(config)
RATER_SHAPE = per_job(lambda w: raters_cfg.resources(config, w["rater"]))
# Every configured rater's card and the rater tables.
RATER_TARGETS = expand(layout.rater_card(RUN), rater=RATERS) + expand(
    layout.table(RUN, ext="md"), name=RATER_TABLES
)


wildcard_constraints:
    rater=names_pattern(RATERS),


rule train_rater:
    input:
        labels=lambda w: raters_cfg.labels_input(config, RUN, w.rater),
        tokenizer=lambda w: raters_cfg.tokenizer_inputs(config, RUN, w.rater),
    output:
        model=directory(layout.rater_model(RUN)),
        card=layout.rater_card(RUN),
        metrics=layout.rater_metrics(RUN),
    log:
        layout.job_log(RUN, "train_rater", "{rater}"),
    benchmark:
        layout.benchmark(RUN, "train_rater", "{rater}")
    container:
        CONTAINERS["train"]
    threads: job_threads(RATER_SHAPE)
    resources:
        **job_resources(RATER_SHAPE),
        # Chunks per forward pass: speed, not what is learned (a resource: reruns nothing).
        throughput=lambda w: json_param(raters_cfg.resolve_throughput(config, w.rater)),
    params:
        cfg=lambda w: json_param(raters_cfg.rater_params(config, w.rater)),
        notes=json_param(JUDGE_NOTES),
        out=parent_dir("card"),
        labels=optional_flag("--labels", "labels"),
        tokenizer=optional_flag("--tokenizer", "tokenizer"),
    shell:
        "selectlab raters train --rater {wildcards.rater} --params {params.cfg:q}"
        " --throughput {resources.throughput:q}"
        " {params.labels} {params.tokenizer} --judge-notes {params.notes:q}"
        " --gpus {resources.gpu} --threads {threads} --out {params.out}"
        " --metrics {output.metrics} > {log} 2>&1"


if RATER_TABLES:

    rule rater_tables:
        input:
            expand(layout.rater_metrics(RUN), rater=RATERS),
        output:
            expand(layout.table(RUN), name=RATER_TABLES, ext=["csv", "md"]),
        log:
            layout.log(RUN, "rater_tables"),
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("rater_tables")
        resources:
            **rule_resources("rater_tables"),
        params:
            names=RATER_TABLES,
            out=lambda w, output: os.path.dirname(output[0]),
        shell:
            "selectlab raters tables --metrics {input} --expect {params.names}"
            " --out-dir {params.out} > {log} 2>&1"
