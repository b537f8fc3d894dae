# selectlab: raw corpus shards -> judgments -> raters -> per-shard annotation -> selection
# variants -> pretraining -> evaluation -> tables, figures, report and archive.
import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

from selectlab import layout
from selectlab.config_errors import schema_error
from selectlab.crossref import check_config
from selectlab.lifecycle import RERUN_ADVICE, export_supervisor
from selectlab.selection import grids

min_version("9.0")


# A config given with --configfile replaces the embedded default instead of being merged into
# it, so the default's variants never leak into another configuration.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


try:
    validate(config, "config/schema/config.schema.yaml")
except WorkflowError as error:
    # Snakemake's message carries the whole schema and config: say it one line per problem.
    schema = os.path.join(workflow.basedir, "config/schema/config.schema.yaml")
    raise (schema_error(config, schema) or error) from None

# Variant grids become plain variants here, once, so every rule and resolver sees only those;
# the variants a grid produces are checked like written-out ones.
validate(
    grids.grid_variants(config["variants"]), "config/schema/variant_set.schema.yaml"
)
config["variants"] = grids.expand_variants(config["variants"])
# Names and sizes the config refers to, grid variants included, before any job is planned.
check_config(config, layout.run_dir(config["run"]))
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
