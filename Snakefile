# selectlab: raw corpus shards -> judgments -> raters -> per-shard annotation -> selection
# variants -> pretraining -> evaluation -> tables, figures, report and archive.
from snakemake.utils import min_version, validate

min_version("9.0")


# A config given with --configfile replaces the embedded default instead of being merged into
# it, so the default's variants never leak into another configuration.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


validate(config, "config/schema/config.schema.yaml")


include: "rules/common.smk"
include: "rules/corpus.smk"
include: "rules/judge.smk"
include: "rules/raters.smk"
include: "rules/annotate.smk"
include: "rules/analysis.smk"
include: "rules/select.smk"
include: "rules/metarater.smk"
include: "rules/pretrain.smk"
include: "rules/mates.smk"
include: "rules/evaluate.smk"
include: "rules/report.smk"
include: "rules/paper.smk"
include: "rules/cost.smk"
include: "rules/containers.smk"


rule all:
    default_target: True
    input:
        final_targets(),
