# selectlab: raw corpus shards -> judgments -> raters -> per-shard annotation -> selection
# variants -> pretraining -> evaluation -> tables, figures, report and archive.
import sys

from snakemake.utils import min_version

from selectlab import layout, variant_subset
from selectlab.config import with_includes
from selectlab.schema import validate_config
from selectlab.crossref import check_config
from selectlab.lifecycle import RERUN_ADVICE, export_supervisor
from selectlab.selection import grids

min_version("9.0")


# A config given with --configfile replaces the embedded default instead of being merged into
# it, so the default's variants never leak into another configuration.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# A config file's `include:` files lie under it (paths relative to the file naming them):
# config/paper.yaml shows its rows and includes the papers' fixed protocols, raters and job sizes.
_merged = with_includes(config, workflow.configfiles)
config.clear()
config.update(_merged)

# Each schema file read once for both checks (Snakemake's validate re-reads a file per
# cross-file reference); defaults fill in as with Snakemake's. A config that breaks the schema
# stops the plan with one line per problem (selectlab.schema).
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
# A ladder rung keeps some of its base config's rows (selectlab.variant_subset).
config.update(variant_subset.keep_variants(config))
config.pop(variant_subset.KEY, None)
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
include: "rules/mates.smk"
include: "rules/evaluate.smk"
include: "rules/instruct.smk"
include: "rules/report.smk"
include: "rules/papers.smk"
include: "rules/paper.smk"
include: "rules/cost.smk"
include: "rules/containers.smk"


rule all:
    default_target: True
    input:
        final_targets(),


onerror:
    print(RERUN_ADVICE, file=sys.stderr)
