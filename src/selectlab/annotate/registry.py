"""The one table of rater family kinds: `FAMILIES[kind]` builds the kind's annotator.

A config family (`annotate.families.<name>`) names its kind; the workflow's single `annotate`
rule asks this table for the family's fitted inputs, container and GPU use, so a new kind is
one entry here (plus its schema) and never a new rule. Modules imported here stay free of
torch at import time: the workflow imports this table while it builds the DAG.
"""

from __future__ import annotations

from selectlab import layout
from selectlab.annotate.base import Annotator, FamilyKind
from selectlab.annotate.dataman_generation import GenerativeDataManAnnotator, RetryPolicy
from selectlab.annotate.dsir import DsirAnnotator
from selectlab.annotate.embedding import MINILM, MINILM_LABEL, EmbeddingAnnotator, minilm_path
from selectlab.annotate.rater_family import RaterAnnotator, rater_dir_inputs, rater_dir_of
from selectlab.annotate.refppl import SMOLLM2_GGUF, SMOLLM2_LABEL, ReferenceLMAnnotator
from selectlab.annotate.signals import redpajama_signals
from selectlab.mates import annotator as mates_influence
from selectlab.plugins.families import PluginAnnotator
from selectlab.plugins.loading import load_object, module_files


def build_signals(params: dict, fitted: list[str], gpus: int) -> Annotator:
    return PluginAnnotator(redpajama_signals, {}, gpus, kind="signals")


def build_plugin(params: dict, fitted: list[str], gpus: int) -> Annotator:
    """Your own family (selectlab.plugins): its object, loaded from where the config says."""
    where = f"annotate.families ({params.get('module') or params.get('entry_point')})"
    return PluginAnnotator(load_object(params, "family", where), params.get("options", {}), gpus,
                           nan=params.get("nan", "refuse"), where=where)


def plugin_fitted(run_dir: str, name: str, params: dict) -> list[str]:
    """A family's own .py file: editing it reruns the family's annotation."""
    return module_files(params)


def build_dsir(params: dict, fitted: list[str], gpus: int) -> Annotator:
    return DsirAnnotator(fitted[0], params["buckets"], list(params["targets"]),
                         params.get("smoothing", "epsilon"))


def dsir_fitted(run_dir: str, name: str, params: dict) -> list[str]:
    return [layout.dsir_model(run_dir, name)]


def model_settings(params: dict, gpus: int) -> dict:
    return {"max_tokens": params["max_tokens"],
            "forward_batch_size": params["forward_batch_size"],
            "dtype": params["dtype"], "gpus": gpus}


def build_refppl(params: dict, fitted: list[str], gpus: int) -> Annotator:
    if params["model"] == SMOLLM2_GGUF:
        model_dir, label = fitted[0], SMOLLM2_LABEL
    else:
        model_dir, label = params["model"], params["model"]
    return ReferenceLMAnnotator(model_dir, model_label=label, **model_settings(params, gpus))


def refppl_fitted(run_dir: str, name: str, params: dict) -> list[str]:
    return [layout.reference_lm(run_dir)] if params["model"] == SMOLLM2_GGUF else []


def build_embedding(params: dict, fitted: list[str], gpus: int) -> Annotator:
    if params["model"] == MINILM:
        model_dir, label = minilm_path(), MINILM_LABEL
    else:
        model_dir, label = params["model"], params["model"]
    return EmbeddingAnnotator(model_dir, model_label=label, **model_settings(params, gpus))


def build_rater(params: dict, fitted: list[str], gpus: int) -> Annotator:
    return RaterAnnotator(rater_dir_of(fitted), params["rater"], params["forward_batch_size"],
                          gpus)


def build_rater_generative(params: dict, fitted: list[str], gpus: int) -> Annotator:
    policy = RetryPolicy(params["max_attempts"], params["retry_temperature"],
                         params.get("batch_retries", 2))
    return GenerativeDataManAnnotator(rater_dir_of(fitted), policy, gpus)


def rater_fitted(run_dir: str, name: str, params: dict) -> list[str]:
    return rater_dir_inputs(run_dir, params["rater"])


FAMILIES: dict[str, FamilyKind] = {
    # Written on the plugin contract, as a user's family is (selectlab.plugins).
    "signals": FamilyKind(build=build_signals),
    # Your own family: a function or class of texts (docs/your_method.md); torch is there.
    "plugin": FamilyKind(build=build_plugin, fitted_inputs=plugin_fitted, container="train"),
    "dsir": FamilyKind(build=build_dsir, fitted_inputs=dsir_fitted),
    "refppl": FamilyKind(build=build_refppl, fitted_inputs=refppl_fitted, container="train",
                         uses_model=True),
    "embedding": FamilyKind(build=build_embedding, container="train", uses_model=True),
    "rater": FamilyKind(build=build_rater, fitted_inputs=rater_fitted, container="train",
                        uses_model=True),
    "rater_generative": FamilyKind(build=build_rater_generative, fitted_inputs=rater_fitted,
                                   container="vllm", uses_model=True),
    # Generated per MATES stage from a `mates` variant (selectlab.mates.plan), not configured.
    "mates_influence": FamilyKind(build=mates_influence.build,
                                  fitted_inputs=mates_influence.fitted_inputs, container="train",
                                  uses_model=True),
}


def family_kind(kind: str) -> FamilyKind:
    if kind not in FAMILIES:
        raise ValueError(f"unknown annotation family kind {kind!r}; known: {sorted(FAMILIES)}")
    return FAMILIES[kind]


def build_annotator(params: dict, fitted: list[str], gpus: int = 0) -> Annotator:
    """The annotator of one family from its resolved params (which carry its `kind`)."""
    return family_kind(params["kind"]).build(params, fitted, gpus)
