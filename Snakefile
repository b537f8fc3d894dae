# selectlab: raw corpus shards -> judgments -> raters -> per-shard annotation -> selection
# variants -> pretraining -> evaluation -> tables, figures, report and archive.
from snakemake.utils import min_version

from selectlab.schema import validate_config
from selectlab.selection import grids

min_version("9.0")


# A config given with --configfile replaces the embedded default instead of being merged into
# it, so the default's variants never leak into another configuration.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# Each schema file read once for both checks (Snakemake's validate re-reads a file per
# cross-file reference); defaults fill in as with Snakemake's.
SCHEMA_DIR = f"{workflow.basedir}/config/schema"
validate_config(config, f"{SCHEMA_DIR}/config.schema.yaml")

# Variant grids become plain variants here, once, so every rule and resolver sees only those;
# the variants a grid produces are checked like written-out ones.
validate_config(
    grids.grid_variants(config["variants"]),
    f"{SCHEMA_DIR}/variant_set.schema.yaml",
    "a variant of a grid",
)
config["variants"] = grids.expand_variants(config["variants"])


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
include: "rules/instruct.smk"
include: "rules/report.smk"
include: "rules/paper.smk"
include: "rules/cost.smk"
include: "rules/containers.smk"


rule all:
    default_target: True
    input:
        final_targets(),
