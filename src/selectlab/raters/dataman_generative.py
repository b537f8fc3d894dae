"""DataMan at full scale: a causal LM (Qwen2-0.5B/1.5B) fine-tuned to write the rating string.

Three versions, as in the paper: `all` (the 14 ratings and the domain), `score` (the Overall
Score only) and `domain` (the domain only). An example is the version's prompt around the
document, then the answer and the end-of-sequence token; the loss covers exactly the answer
and EOS tokens (every prompt and document token is masked with -100). The document is clipped
so that the whole example fits `max_length`; the answer never is. Documents rated low overall
(< 3) are repeated `upsample_low_scores` times in the training split (fourfold in the paper).

Inference goes through the judge's backends (`selectlab.judge.factory.build_backend`): the card
names the backend (`vllm` at full scale, run in the vllm container; `transformers` elsewhere),
the rater sends each document's prompt verbatim with greedy decoding and parses the answer
strictly. An answer that does not parse leaves the document's ratings null, with `status` and
`missing_reason` saying why. Held-out metrics at training time come from the same parser on
greedy generations with the transformers backend, inside the training job.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from selectlab.flops import cost_record, module_shape, training_flops
from selectlab.judge import dataman
from selectlab.judge.backends import CompletionRequest
from selectlab.judge.parse import OK, Parsed, failure, parse_rating_block
from selectlab.raters import pointwise
from selectlab.raters.io import FORMAT_VERSION, MODEL_DIR, Rater, heads_record, write_card
from selectlab.raters.spec import (
    DOMAIN,
    OVERALL,
    STATUS,
    Head,
    dataman_version_heads,
    heads,
    sidecar_columns,
)

log = logging.getLogger(__name__)
IGNORE = -100

_PROMPTS = {
    "all": ("Rate the text below on fourteen quality criteria, each a whole number from 1 "
            "(worst) to 5 (best), and name the one domain (a letter from A to O) it belongs "
            "to.\nText:\n"),
    "score": "Give the text below one overall quality score from 1 (worst) to 5 (best).\nText:\n",
    "domain": "Name the domain of the text below with one letter from A to O.\nText:\n",
}
_CUES = {"all": "\nRatings:\n", "score": "\nOverall score:", "domain": "\nDomain:"}



def prompt_parts(version: str) -> tuple[str, str]:
    """The text that goes before the document and the cue after it."""
    dataman_version_heads(version)
    return _PROMPTS[version], _CUES[version]


def render_target(row: pd.Series | dict, version: str) -> str:
    if version == "score":
        return f" {int(row[OVERALL])}"
    if version == "domain":
        return f" {row[DOMAIN]}"
    lines = [dataman.MARKER] + [f"{name}: {int(row[key])}" for key, (name, _) in
                                dataman.CRITERIA.items()]
    return "\n".join(lines + [f"{dataman.DOMAIN_LABEL}: {row[DOMAIN]}"])


def parse_target(text: str, version: str) -> Parsed:
    """The ratings a generation states, as {head: value}, or a parse failure."""
    if version == "all":
        names = {name: key for key, (name, _) in dataman.CRITERIA.items()}
        parsed = parse_rating_block(f"{dataman.MARKER}\n{text}", dataman.MARKER, names, 1, 5,
                                    dataman.DOMAIN_LABEL, dataman.DOMAINS)
        if not parsed.ok:
            return parsed
        value = dict(parsed.value)
        value[DOMAIN] = value.pop(dataman.DOMAIN_LABEL.lower())
        return Parsed(value, OK)
    first = (text or "").strip().split()
    if not first:
        return failure("empty answer")
    token = first[0].strip(".,;:*")
    if version == "score":
        if not re.fullmatch(r"[1-5]", token):
            return failure(f"{token!r} is not an overall score from 1 to 5")
        return Parsed({OVERALL: int(token)}, OK)
    if not re.fullmatch(r"[A-O]", token):
        return failure(f"{token!r} is not a domain letter from A to O")
    return Parsed({DOMAIN: token}, OK)


@dataclass(frozen=True)
class Encoded:
    input_ids: list[int]
    labels: list[int]  # IGNORE outside the answer


def encode_example(tokenizer, text: str, target: str, version: str,
                   max_length: int) -> Encoded:
    """Prompt + (clipped) document + cue + answer + EOS, with the loss on answer and EOS only."""
    before, cue = prompt_parts(version)
    encode = lambda s: tokenizer(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    head, tail, answer = encode(before), encode(cue), encode(target)
    answer = answer + [tokenizer.eos_token_id]
    room = max_length - len(head) - len(tail) - len(answer)
    if room < 1:
        raise ValueError(f"max_length {max_length} leaves no room for the document")
    prompt = head + encode(text)[:room] + tail
    return Encoded(prompt + answer, [IGNORE] * len(prompt) + answer)


def clip_document(tokenizer, text: str, version: str, max_length: int, answer_room: int) -> str:
    """The document cut so that its prompt leaves `answer_room` tokens within `max_length`."""
    before, cue = prompt_parts(version)
    fixed = len(tokenizer(before + cue, add_special_tokens=False)["input_ids"])
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    keep = max(1, max_length - fixed - answer_room)
    return text if len(ids) <= keep else tokenizer.decode(ids[:keep])


def collate(examples: Sequence[Encoded], pad_id: int) -> dict[str, torch.Tensor]:
    width = max(len(e.input_ids) for e in examples)
    ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    for row, e in enumerate(examples):
        n = len(e.input_ids)
        ids[row, :n] = torch.as_tensor(e.input_ids)
        labels[row, :n] = torch.as_tensor(e.labels)
        mask[row, :n] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def answer_room(version: str) -> int:
    """Generation budget: the longest answer of the version, with slack for tokenisation."""
    return {"all": 160, "score": 4, "domain": 4}[version]


class GenerativeDataManRater(Rater):
    rater = "dataman"

    def __init__(self, backend, tokenizer, card: dict):
        self.backend = backend
        self.tokenizer = tokenizer
        self.card = card
        self.version = card["version"]
        self.heads = dataman_version_heads(self.version)
        self.columns = sidecar_columns("dataman", self.heads)

    @classmethod
    def from_card(cls, rater_dir: Path, card: dict, gpus: int):
        from transformers import AutoTokenizer

        from selectlab.judge.factory import build_backend

        model_dir = str(Path(rater_dir) / MODEL_DIR)
        settings = dict(card["inference"]) | {"model": model_dir}
        backend = build_backend(settings, seed=card["params"]["seed"], gpus=gpus)
        return cls(backend, AutoTokenizer.from_pretrained(model_dir), card)

    def requests(self, texts: Sequence[str]) -> list[CompletionRequest]:
        before, cue = prompt_parts(self.version)
        room = answer_room(self.version)
        return [CompletionRequest((), max_tokens=room, temperature=0.0,
                                  prompt=before + clip_document(self.tokenizer, t, self.version,
                                                                self.card["max_length"], room)
                                  + cue) for t in texts]

    def score(self, texts: Sequence[str]) -> dict[str, object]:
        return self.columns_of(self.backend.complete(self.requests(texts)))

    def columns_of(self, completions) -> dict[str, object]:
        """The sidecar columns of one completion per document, parsed strictly."""
        values = {h.name: [None] * len(completions) for h in self.heads}
        status, reasons = [], []
        for i, completion in enumerate(completions):
            if completion.error:
                status.append("backend_error")
                reasons.append(completion.error)
                continue
            parsed = parse_target(completion.text, self.version)
            status.append(parsed.status)
            reasons.append(None if parsed.ok else parsed.error)
            for name in values:
                values[name][i] = parsed.value[name] if parsed.ok else None
        out: dict[str, object] = {}
        for name, column in values.items():
            out[name] = (np.array(column, dtype=object) if name == DOMAIN
                         else pd.array(column, dtype="Int64"))
        out[STATUS] = np.array(status, dtype=object)
        out["missing_reason"] = np.array(reasons, dtype=object)
        return out


def fine_tune(model, tokenizer, examples: list[Encoded], params: dict, device: str) -> list[float]:
    """Epochs of AdamW over shuffled batches; returns the mean loss of each epoch."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=params["lr"],
                                  weight_decay=params["weight_decay"])
    rng = np.random.default_rng(params["seed"])
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    use_autocast = device.startswith("cuda") and params["dtype"] != "float32"
    model.train()
    history = []
    for _ in range(params["epochs"]):
        losses = []
        for start in range(0, len(examples), params["batch_size"]):
            batch = [examples[i] for i in rng.permutation(len(examples))[start:start +
                                                                          params["batch_size"]]]
            inputs = {k: v.to(device) for k, v in collate(batch, pad).items()}
            with torch.autocast("cuda", dtype=getattr(torch, params["dtype"]),
                                enabled=use_autocast):
                loss = model(**inputs).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        history.append(float(np.mean(losses)))
    model.eval()
    return history


def train_generative(labels_path: str | Path, params: dict, out_dir: str | Path, *,
                     name: str = "dataman", gpus: int = 0, judge_notes: list[str] | None = None,
                     config_hash: str = "") -> dict:
    """Fine-tune, save as a rater directory, evaluate on held-out documents; metrics record.

    The held-out documents are split off before the low scores are up-sampled, so no copy of
    a held-out document is trained on. DataMan (appendix B.2) trains a fixed 5 epochs; its
    validation set chose the hyperparameters, so no validation share is kept here."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from selectlab.devices import select_device
    from selectlab.raters.build import split_documents
    from selectlab.raters.io import metrics_record
    from selectlab.raters.throughput import measured, throughput_record

    version = params["version"]
    rater_heads = dataman_version_heads(version)
    labels = pd.read_parquet(labels_path)
    data, dropped = pointwise.point_data(labels, heads("dataman"))
    train, heldout = split_documents(len(data), params["heldout_fraction"], params["seed"])
    train = pointwise.upsample_low_scores(train, pointwise.overall_scores(data, heads("dataman")),
                                          params.get("upsample_low_scores", 1))
    torch.manual_seed(params["seed"])
    device = select_device(gpus)
    tokenizer = AutoTokenizer.from_pretrained(params["backbone"])
    model = AutoModelForCausalLM.from_pretrained(params["backbone"],
                                                 dtype=torch.float32).to(device)
    examples = [encode_example(tokenizer, data.texts[i], render_target(labels.iloc[i], version),
                               version, params["max_length"]) for i in train]
    started = time.perf_counter()
    history = fine_tune(model, tokenizer, examples, params, device)
    # Fine-tuning FLOPs (selectlab.flops: 6ND + attention); held-out generation is left out.
    shape = module_shape(model, params["max_length"])
    tokens = sum(len(e.input_ids) for e in examples) * params["epochs"]
    cost = cost_record("train", training_flops(shape, tokens),
                       seconds=time.perf_counter() - started, gpus=gpus, device=device,
                       shape=shape, tokens=tokens)
    model_dir = Path(out_dir) / MODEL_DIR
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    card = {"format": FORMAT_VERSION, "kind": "generative", "rater": "dataman", "name": name,
            "family": "dataman", "protocol": dataman.NAME, "version": version,
            "heads": heads_record(rater_heads), "columns": sidecar_columns("dataman", rater_heads),
            "max_length": params["max_length"], "inference": params["inference"],
            "backbone": {"source": params["backbone"], "label": params["backbone"],
                         "window": params["max_length"], "trained": True, "saved": True},
            "training": dropped | {"documents": len(data), "train_examples": len(train),
                                   "heldout_documents": int(len(heldout)),
                                   "epoch_losses": history},
            "metrics": {}, "config_hash": config_hash, "params": params, "cost": cost,
            "judge": {"simulated": bool(judge_notes), "notes": list(judge_notes or [])}}
    write_card(out_dir, card)
    # vLLM lives in its own container; greedy decoding with transformers gives the same answers.
    evaluator = GenerativeDataManRater.from_card(
        Path(out_dir), card | {"inference": {"kind": "transformers", "dtype": "float32",
                                             "batch_size": params["batch_size"]}}, gpus)
    requests = evaluator.requests([data.texts[i] for i in heldout])
    with measured(device) as timing:
        completions = evaluator.backend.complete(requests)
    card["throughput"] = throughput_record(
        len(requests), sum(c.prompt_tokens for c in completions),
        sum(c.completion_tokens for c in completions), timing)
    predicted = evaluator.columns_of(completions)
    card["metrics"] = heldout_metrics(rater_heads, predicted, data, heldout)
    write_card(out_dir, card)
    return metrics_record(card)


def heldout_metrics(rater_heads: list[Head], predicted: dict, data, heldout: np.ndarray) -> dict:
    """Pointwise metrics on documents whose answer parsed, and the parse rate."""
    status = np.asarray(predicted[STATUS])
    parsed = heldout[status == OK]
    full = {h.name: np.zeros(len(data), dtype=object) for h in rater_heads}
    for name in full:
        full[name][heldout] = np.asarray(predicted[name], dtype=object)
    result = pointwise.evaluate("dataman", rater_heads, full, data, parsed) if len(parsed) else {}
    return result | {"parsed_share": float(np.mean(status == OK)) if len(status) else 0.0}
