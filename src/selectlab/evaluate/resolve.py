"""The evaluation stage's plan: what each perplexity and lm-eval job reads, and its size.

Plain dict functions (no torch). An evaluation job runs on `evaluation.gpu` GPUs (0 or 1); on
a GPU it takes its model preset's GPU model and one GPU's share of the preset's cores. Its
wall time and memory follow the model's size and the tokens it scores
(selectlab.evaluate.sizing); the rule's `resources` default in
config/schema/resources.schema.yaml gives the rest, and `resources.<rule>` overrides.

Besides the overview's tasks, a model is evaluated on every (task, shots) setting the papers'
protocols need for the tables it is a row of (selectlab.papers.protocols), each setting once;
a replicate (`{variant}__rep{i}`) needs what its variant needs. The rows of a curve figure
have their training snapshots evaluated on the figure's settings.
"""

from __future__ import annotations

from selectlab.evaluate.sizing import eval_size
from selectlab.papers import protocols as paper_protocols
from selectlab.papers.plan import curve_runs
from selectlab.replicates import base_variant, replicate_names
from selectlab.resources import rule_shape, schema_default
from selectlab.train.resolve import pretrain_shape, seq_len

ICL_KEYS = ("tasks", "batch_size", "dtype", "limit")
# Whether lm-eval reads the offline tasks built from the held-out test split (the papers'
# protocols then evaluate their stand-ins).
uses_local_tasks = paper_protocols.uses_local_tasks


def local_task_params(config: dict) -> dict:
    """What `selectlab evaluate tasks` needs: the local tasks' settings and, when a paper's
    protocol asks a stand-in task for demonstrations, the most it asks for (which sizes the
    tasks' few-shot split)."""
    shots = paper_protocols.largest_stand_in_shots(config)
    return (config["evaluation"]["icl"].get("local_tasks", {})
            | ({"protocol_shots": shots} if shots else {}))


def perplexity_params(config: dict, name: str) -> dict:
    """What `selectlab evaluate perplexity` needs for one variant's model."""
    return config["evaluation"]["perplexity"] | {"seq_len": seq_len(config, name)}


def _settings(settings: list) -> list[list]:
    return [[setting.task, setting.shots] for setting in settings]


def _icl_common(config: dict) -> dict:
    icl = config["evaluation"]["icl"]
    return {key: icl[key] for key in ICL_KEYS if key in icl} | {"seed": config["seed"]}


def icl_params(config: dict) -> dict[str, dict]:
    """What `selectlab evaluate icl` needs for each evaluated model (every variant and
    replicate): the overview's tasks and the protocol settings of the model's paper tables.
    Resolved for all models at once: the protocols are read once, not once per job."""
    common, tables = _icl_common(config), paper_protocols.paper_tables(config)
    params = {}
    for variant in config["variants"]:
        settings = _settings(paper_protocols.variant_settings(config, variant, tables))
        for name in replicate_names(config, variant):
            params[name] = common | {"settings": settings}
    return params


def curve_icl_params(config: dict) -> dict[str, dict]:
    """What `selectlab evaluate icl` needs for the snapshots of each model on a curve figure:
    only the figure's settings (no overview table)."""
    common = _icl_common(config) | {"settings_only": True}
    return {name: common | {"settings": _settings(
                paper_protocols.curve_settings(config, base_variant(name)))}
            for name in dict.fromkeys(name for name, _ in curve_runs(config))}


def data_cache(config: dict) -> str:
    """The shared directory fetch_eval_data fills and the ICL jobs read offline."""
    return config["evaluation"]["icl"].get("data_cache") or schema_default(
        "evaluation.schema.yaml", "properties", "icl", "properties", "data_cache")


def fetch_params(config: dict) -> dict:
    """What `selectlab evaluate fetch-data` downloads: the lm-eval tasks of the overview and of
    the papers' protocols (none when local)."""
    tasks = config["evaluation"]["icl"]["tasks"]
    if tasks == "local":
        return {"tasks": tasks}
    named, tables = {task["name"] for task in tasks}, paper_protocols.paper_tables(config)
    protocol_tasks = sorted({setting.task for variant in config["variants"]
                             for setting in paper_protocols.variant_settings(
                                 config, variant, tables)}
                            - named)
    return {"tasks": list(tasks) + [{"name": name} for name in protocol_tasks]}


def eval_shape(config: dict, rule: str, name: str) -> dict:
    """The job of `rule` (eval_perplexity, eval_icl) on variant `name`'s model."""
    gpu = int(config["evaluation"].get("gpu", 0))
    derived = {"gpu": gpu} | eval_size(config, name, rule.removeprefix("eval_"))
    if gpu:
        preset = pretrain_shape(config, name)
        derived |= {"gpu_model": preset.get("gpu_model"),
                    "cpus": max(1, preset["cpus"] // max(preset["gpu"], 1))}
    return rule_shape(config, rule, derived)
