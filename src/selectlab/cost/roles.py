"""Which stage of the cost tables each trained model belongs to, from the config alone.

Stages follow Meta-rater's Table 2 and extend it to every job that runs a model:

- judging: the LLM judge's answers the raters learn from;
- rater training: QuRater, DataMan, PRRC and classifier raters;
- annotation: every rater family's pass over the pool;
- Meta-rater construction: the proxies of every weight search (pre-training and perplexity);
- MATES selection: oracle probes, data-influence models and their annotation passes;
- pre-training: every variant's model (a MATES variant's stages included);
- SFT: fine-tuning and answer generation of every instruction-following variant (answer
  judging records no FLOPs: the table's note says where its cost is);
- evaluation: perplexity and in-context learning of every variant.

"Quality scores rating" in Meta-rater's sense is judging + rater training + annotation.
No torch here: the workflow passes these roles to the table job as parameters.
"""

from __future__ import annotations

from selectlab.instruct.resolve import answer_judging_cost_note
from selectlab.report.plan import metarater_figure_fits
from selectlab.selection import mates_stages
from selectlab.selection import resolve as select_cfg
from selectlab.train.resolve import preset_name

JUDGING = "judging"
RATER_TRAINING = "rater training"
ANNOTATION = "annotation"
CONSTRUCTION = "Meta-rater construction"
MATES = "MATES selection"
PRETRAINING = "pre-training"
SFT = "SFT"
EVALUATION = "evaluation"
STAGES = (JUDGING, RATER_TRAINING, ANNOTATION, CONSTRUCTION, MATES, PRETRAINING, SFT, EVALUATION)
RATING = (JUDGING, RATER_TRAINING, ANNOTATION)  # Meta-rater's "quality scores rating"


def proxies_trained(config: dict) -> list[str]:
    """Every proxy some Meta-rater fit reads (each search's first N, N the largest used)."""
    return [name for search, count in metarater_figure_fits(config)
            for name in select_cfg.proxy_names(config, search, count)]


def model_roles(config: dict) -> dict[str, dict]:
    """variant (configured, proxy or MATES stage) -> {stage, item, variant, preset}: the stage and
    row its pre-training counts towards, and the configured variant it serves."""
    roles = {}
    for name in config["variants"]:
        if name in mates_stages.mates_variants(config):
            for stage in mates_stages.mates_stage_names(config, name):
                roles[stage] = {"stage": PRETRAINING, "item": name, "variant": name}
        else:
            roles[name] = {"stage": PRETRAINING, "item": name, "variant": name}
    for name in proxies_trained(config):
        search, _ = select_cfg.parse_proxy_name(name)
        roles[name] = {"stage": CONSTRUCTION, "item": search, "variant": ""}
    for name, role in roles.items():
        role["preset"] = preset_name(config, name)
    return roles


def evaluated(config: dict) -> dict[str, dict]:
    """variant -> role of its evaluation jobs (configured variants: perplexity and ICL;
    proxies: perplexity, part of Meta-rater's construction)."""
    roles = {name: {"stage": EVALUATION, "item": name, "variant": name}
             for name in config["variants"]}
    for name in proxies_trained(config):
        roles[name] = {"stage": CONSTRUCTION, "item": select_cfg.parse_proxy_name(name)[0],
                       "variant": ""}
    return roles


def table_roles(config: dict) -> dict:
    """What the cost table job needs to place every row: the roles of trained and evaluated
    models and the variant each MATES influence family serves."""
    families = {}
    for variant in mates_stages.mates_variants(config):
        for stage in mates_stages.influence_stages(config, variant):
            families[mates_stages.influence_family(variant, stage)] = variant
    searches = {name: select_cfg.selection_params(config, name)["search"]
                for name, v in config["variants"].items() if v["method"] == "metarater"}
    return {"models": model_roles(config), "evaluations": evaluated(config),
            "variants": list(config["variants"]), "mates_families": families,
            "variant_searches": searches, "main_preset": config["pretrain"]["preset"],
            "notes": answer_judging_cost_note(config)}
