# selectlab: raw corpus shards -> judgments -> raters -> per-shard annotation -> selection
# variants -> pretraining -> evaluation -> tables, figures, report and archive.
import os
import sys

from snakemake.utils import min_version, validate

from selectlab.config_errors import check_schema
from selectlab.crossref import check_config
from selectlab.lifecycle import RERUN_ADVICE, export_supervisor

min_version("9.0")


# A config given with --configfile replaces the embedded default instead of being merged into
# it, so the default's variants never leak into another configuration.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# The schema check first in our words (key, value, expected); Snakemake's then fills defaults.
check_schema(config, os.path.join(workflow.basedir, "config/schema/config.schema.yaml"))
validate(config, "config/schema/config.schema.yaml")
check_config(config, f"results/{config['run']}")
# Jobs started from here stop if this process is killed (selectlab.lifecycle).
export_supervisor()


include: "rules/common.smk"
include: "rules/corpus.smk"
include: "rules/judge.smk"
include: "rules/raters.smk"
include: "rules/annotate.smk"
include: "rules/analysis.smk"
include: "rules/select.smk"
include: "rules/metarater.smk"
include: "rules/pretrain.smk"
include: "rules/evaluate.smk"
include: "rules/report.smk"
include: "rules/paper.smk"
include: "rules/containers.smk"


rule all:
    default_target: True
    input:
        final_targets(),


onerror:
    print(RERUN_ADVICE, file=sys.stderr)
