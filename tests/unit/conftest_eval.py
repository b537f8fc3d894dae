"""A tiny, fully offline evaluation world shared by the evaluation tests.

Two synthetic sources whose documents walk a fixed cycle of words from a random starting point,
so the next word is a deterministic function of the current one. A 1-layer model learns that in
a few dozen steps, which gives the tests a model that is reliably better than a random one on
the source it saw, without downloads and in a few seconds:

* `random/`: a random-init `LlamaForCausalLM` (hidden 32, 1 layer) with its tokenizer;
* `trained/`: the same model after `TRAIN_STEPS` steps on Wikipedia-like training documents only;
* `heldout/{validation,test}.jsonl.zst`: held-out documents of both sources, plus a few
  documents too short for any ICL task.

Test modules build it through `eval_world(tmp_path_factory)`; it is built once per session.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

from selectlab.shards import Document, write_documents

# Nothing in the evaluation tests may reach the Hugging Face hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

WIKI = "RedPajamaWikipedia"
CODE = "RedPajamaGithub"
WIKI_WORDS = (
    "the river crosses northern valley where ancient towns built stone bridges over "
    "green fields and farmers gather golden wheat during warm summer months while "
    "children watch birds flying above quiet forests near distant mountains covered "
    "with winter snow"
).split()
CODE_WORDS = (
    "def parse_args return value import sys class Config self path open file read "
    "lines yield token for item in items if None else raise Error while True break "
    "append result"
).split()
VOCAB_SIZE = 500
SEQ_LEN = 64
TRAIN_STEPS = 40
SHORT_DOCS_PER_SOURCE = 3  # too short for every ICL kind: must be skipped and counted


@dataclass(frozen=True)
class EvalWorld:
    root: Path
    random_model: Path
    trained_model: Path
    heldout: dict[str, Path]
    vocab_size: int


def cycle_text(words: tuple[str, ...] | list[str], start: int, length: int) -> str:
    return " ".join(words[(start + i) % len(words)] for i in range(length))


def make_documents(rng: random.Random, set_name: str, words: list[str], n: int, prefix: str,
                   short: int = 0) -> list[Document]:
    docs = []
    for i in range(n):
        text = cycle_text(words, rng.randrange(len(words)), rng.randrange(60, 120))
        docs.append(Document(id=f"{prefix}-{i}", text=text, set_name=set_name))
    for i in range(short):
        text = cycle_text(words, rng.randrange(len(words)), 5)
        docs.append(Document(id=f"{prefix}-short-{i}", text=text, set_name=set_name))
    return docs


def train_tokenizer(texts: list[str]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=["<|endoftext|>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|endoftext|>", pad_token="<pad>"
    )


def random_model(tokenizer):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None, tie_word_embeddings=True,
    )
    return LlamaForCausalLM(config)


def train_briefly(model, tokenizer, texts: list[str], steps: int):
    """A few dozen Adam steps on random `SEQ_LEN` windows of the texts joined with EOS."""
    import torch

    stream: list[int] = []
    for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        stream += ids + [tokenizer.eos_token_id]
    data = torch.tensor(stream)
    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    model.train()
    for _ in range(steps):
        starts = torch.randint(0, len(data) - SEQ_LEN - 1, (16,), generator=generator)
        batch = torch.stack([data[s:s + SEQ_LEN] for s in starts.tolist()])
        loss = model(input_ids=batch, labels=batch).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def build_world(root: Path) -> EvalWorld:
    rng = random.Random(1234)
    train_docs = make_documents(rng, WIKI, WIKI_WORDS, 200, "train-wiki")
    code_train = make_documents(rng, CODE, CODE_WORDS, 200, "train-code")
    heldout = {}
    for split in ("validation", "test"):
        docs = (make_documents(rng, WIKI, WIKI_WORDS, 60, f"{split}-wiki", SHORT_DOCS_PER_SOURCE)
                + make_documents(rng, CODE, CODE_WORDS, 60, f"{split}-code",
                                 SHORT_DOCS_PER_SOURCE))
        rng.shuffle(docs)  # interleave sources, as a real held-out file would
        heldout[split] = root / "heldout" / f"{split}.jsonl.zst"
        write_documents(heldout[split], docs)

    tokenizer = train_tokenizer([d.text for d in train_docs + code_train])
    model = random_model(tokenizer)
    paths = {"random": root / "random", "trained": root / "trained"}
    model.save_pretrained(paths["random"])
    tokenizer.save_pretrained(paths["random"])
    train_briefly(model, tokenizer, [d.text for d in train_docs], TRAIN_STEPS)
    model.save_pretrained(paths["trained"])
    tokenizer.save_pretrained(paths["trained"])
    return EvalWorld(root, paths["random"], paths["trained"], heldout, len(tokenizer))


_WORLD: list[EvalWorld] = []  # built once per session, shared by every test module


def eval_world(tmp_path_factory) -> EvalWorld:
    if not _WORLD:
        _WORLD.append(build_world(tmp_path_factory.mktemp("eval_world")))
    return _WORLD[0]
