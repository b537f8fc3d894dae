"""Build the embedded corpus: read every source, hold out clean documents, corrupt, shard.

Order matters and is fixed: (1) each source is read with its own generator, (2) validation and
test documents are drawn per source from the clean text, before anything else touches it, then
the sources named in `dsir_target_docs_per_source` give DSIR its target documents (a split of
their own: DSIR's targets are never evaluation documents), (3) a fixed fraction of each source's
remaining documents is corrupted, (4) the training documents of all sources are shuffled
together and dealt round-robin into shards. Every random
draw comes from a generator seeded by `params["seed"]` and a fixed label, and each corrupted
document gets its own generator seeded by its id, so the same params give byte-identical files.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from selectlab.corpus.corrupt import OPERATORS, CorruptionContext, corrupt
from selectlab.corpus.inputs import corpus_inputs
from selectlab.corpus.resolve import REFERENCE_SPLIT
from selectlab.corpus.sources import SOURCE_READERS, RawText
from selectlab.corpus.wiki import donor_passages
from selectlab.shards import Document, atomic_path, write_documents, write_json

HELDOUT_SPLITS = ("validation", "test")
DSIR_TARGET = "dsir_target"
DSIR_TARGET_FILE = "dsir_target.jsonl.zst"
CLEAN = "none"


@dataclass(frozen=True)
class TrainingDocument:
    document: Document
    source: str
    operator: str
    severity: float


def _seeded(seed: int, *labels: str) -> random.Random:
    # String seeds hash with SHA-512 inside `random`, independent of PYTHONHASHSEED.
    return random.Random(":".join([str(seed), *labels]))


def _check_corruption(corruption: Mapping) -> tuple[float, list[str], float, float]:
    fraction = float(corruption.get("fraction", 0.0))
    operators = list(corruption.get("operators", []))
    low = float(corruption.get("severity_min", 0.2))
    high = float(corruption.get("severity_max", 1.0))
    if not 0 <= fraction <= 1:
        raise ValueError(f"corruption.fraction must be in [0, 1], got {fraction}")
    if fraction > 0 and not operators:
        raise ValueError("corruption.operators is empty but corruption.fraction > 0")
    unknown = [op for op in operators if op not in OPERATORS]
    if unknown:
        raise ValueError(f"unknown corruption operators {unknown}; known: {sorted(OPERATORS)}")
    if not 0 < low <= high <= 1:
        raise ValueError(f"need 0 < severity_min <= severity_max <= 1, got {low}, {high}")
    return fraction, operators, low, high


def _corruption_context(corruption: Mapping, operators: list[str], seed: int) -> CorruptionContext:
    if "language_mixing" not in operators:
        return CorruptionContext()
    languages = list(corruption.get("donor_languages", ["fr-fr", "es-es"]))
    count = int(corruption.get("donor_count", 200))
    return CorruptionContext(donor_texts=donor_passages(languages, count, seed))


def read_source(key: str, reader_params: Mapping, seed: int) -> list[RawText]:
    """All texts of one source, read with the generator the builder uses for it."""
    if key not in SOURCE_READERS:
        raise ValueError(f"unknown source {key!r}; known: {sorted(SOURCE_READERS)}")
    return list(SOURCE_READERS[key](reader_params, _seeded(seed, "read", key)))


def heldout_splits(heldout: Mapping[str, int]) -> tuple[str, ...]:
    """The held-out splits a build writes: validation and test, and the reference split when
    it is asked for."""
    return HELDOUT_SPLITS + ((REFERENCE_SPLIT,) if heldout.get(REFERENCE_SPLIT) else ())


def _split_heldout(key: str, count: int, heldout: Mapping[str, int], seed: int,
                   target: int = 0) -> dict[str, list[int]]:
    """Indices of each source's validation, test, DSIR target, reference (when asked) and train
    documents (each sorted). Each part comes after the ones before it in the same shuffled
    order, so adding the DSIR targets or the reference split changes none of the earlier
    splits (the training part shrinks by their size)."""
    held = sum(heldout[split] for split in HELDOUT_SPLITS)
    reference = heldout.get(REFERENCE_SPLIT, 0)
    needed = held + target + reference
    if count <= needed:
        raise ValueError(f"source {key!r} yielded {count} documents but the held-out splits and "
                         f"DSIR targets need {needed} plus at least one for training; raise its "
                         "max_docs or lower heldout_docs_per_source / dsir_target_docs_per_source")
    order = list(range(count))
    _seeded(seed, "heldout", key).shuffle(order)
    n_val = heldout["validation"]
    splits = {"validation": sorted(order[:n_val]), "test": sorted(order[n_val:held]),
              DSIR_TARGET: sorted(order[held:held + target])}
    if REFERENCE_SPLIT in heldout:
        splits[REFERENCE_SPLIT] = sorted(order[held + target:needed])
    return splits | {"train": sorted(order[needed:])}


def _corrupt_training(key: str, texts: list[RawText], train: list[int], set_name: str,
                      corruption: Mapping, context: CorruptionContext, seed: int
                      ) -> list[TrainingDocument]:
    fraction, operators, low, high = _check_corruption(corruption)
    rng = _seeded(seed, "corrupt", key)
    chosen = set(rng.sample(train, round(fraction * len(train))))
    documents = []
    for index in train:
        doc_id = f"{key}-{index:06d}"
        raw = texts[index]
        operator, severity, text = CLEAN, 0.0, raw.text
        if index in chosen:
            operator = operators[rng.randrange(len(operators))]
            severity = round(rng.uniform(low, high), 4)  # the recorded value is the one applied
            text = corrupt(text, operator, severity, _seeded(seed, "corrupt", doc_id), context)
        document = Document(id=doc_id, text=text, set_name=set_name, source_detail=raw.detail)
        documents.append(TrainingDocument(document, key, operator, severity))
    return documents


def _detail_kind(detail: str) -> str:
    """"wikipedia:fr:Paris" -> "wikipedia:fr"; "man:ls.1" -> "man"."""
    parts = detail.split(":")
    return ":".join(parts[:2]) if parts[0] == "wikipedia" else parts[0]


def _source_stats(set_name: str, read: list[RawText], splits: dict[str, list[int]],
                  training: list[TrainingDocument]) -> dict:
    chars = sum(len(t.document.text) for t in training)
    operators = Counter(t.operator for t in training if t.operator != CLEAN)
    return {
        "set_name": set_name,
        "documents_read": len(read),
        "documents": len(training),
        "characters": chars,
        "mean_characters": round(chars / max(len(training), 1), 1),
        "clean_mean_characters": round(sum(len(t.text) for t in read) / max(len(read), 1), 1),
        "corrupted": sum(operators.values()),
        "corrupted_by_operator": dict(sorted(operators.items())),
        "heldout": {split: len(splits[split]) for split in (*HELDOUT_SPLITS, REFERENCE_SPLIT)
                    if split in splits},
        DSIR_TARGET: len(splits[DSIR_TARGET]),
        "detail_kinds": dict(sorted(Counter(_detail_kind(t.detail) for t in read).items())),
    }


def _write_ground_truth(path: Path, training: list[TrainingDocument]) -> None:
    rows = sorted(training, key=lambda t: t.document.id)
    table = pa.table({
        "id": pa.array([t.document.id for t in rows], pa.string()),
        "set_name": pa.array([t.document.set_name for t in rows], pa.string()),
        "source": pa.array([t.source for t in rows], pa.string()),
        "operator": pa.array([t.operator for t in rows], pa.string()),
        "severity": pa.array([t.severity for t in rows], pa.float64()),
    })
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def _remove_stale_shards(raw_dir: Path, keep: set[str]) -> None:
    """Drop shards of an earlier build with more shards, so a glob sees only this build."""
    for path in raw_dir.glob("shard_*.jsonl.zst"):
        if path.name not in keep:
            path.unlink()


def build_embedded_corpus(params: Mapping, set_names: Mapping[str, str], num_shards: int,
                          out_dir: Path) -> dict:
    """Build the corpus described by `params` under `out_dir` and return its statistics.

    Writes raw/shard_{i:05d}.jsonl.zst, heldout/{validation,test[,reference]}.jsonl.zst,
    dsir_target.jsonl.zst, ground_truth.parquet and build_stats.json (see docs/layout.md).
    """
    out_dir = Path(out_dir)
    seed = int(params["seed"])
    asked = params["heldout_docs_per_source"]
    heldout = {split: int(asked[split]) for split in heldout_splits(asked)}
    targets = {key: int(n) for key, n in (params.get("dsir_target_docs_per_source") or {}).items()}
    corruption = params.get("corruption", {})
    _, operators, _, _ = _check_corruption(corruption)
    if num_shards < 1:
        raise ValueError(f"num_shards must be >= 1, got {num_shards}")
    sources = dict(params["sources"])
    missing = sorted(set(sources) - set(set_names))
    if missing:
        raise ValueError(f"no set name for sources {missing}")
    unknown = sorted(set(targets) - set(sources))
    if unknown:
        raise ValueError(f"dsir_target_docs_per_source names sources {unknown} that are not read")
    context = _corruption_context(corruption, operators, seed)

    training: list[TrainingDocument] = []
    held: dict[str, list[Document]] = {split: [] for split in (*heldout, DSIR_TARGET)}
    stats: dict = {"seed": seed, "num_shards": num_shards, "sources": {}}
    for key in sorted(sources):
        texts = read_source(key, sources[key], seed)
        splits = _split_heldout(key, len(texts), heldout, seed, targets.get(key, 0))
        for split in (*heldout, DSIR_TARGET):
            held[split].extend(Document(id=f"{key}-{i:06d}", text=texts[i].text,
                                        set_name=set_names[key], source_detail=texts[i].detail)
                               for i in splits[split])
        source_training = _corrupt_training(key, texts, splits["train"], set_names[key],
                                            corruption, context, seed)
        training.extend(source_training)
        stats["sources"][key] = _source_stats(set_names[key], texts, splits, source_training)

    order = list(range(len(training)))
    _seeded(seed, "shuffle").shuffle(order)
    shards: list[list[Document]] = [[] for _ in range(num_shards)]
    for position, index in enumerate(order):
        shards[position % num_shards].append(training[index].document)

    names = [f"shard_{i:05d}.jsonl.zst" for i in range(num_shards)]
    for name, documents in zip(names, shards, strict=True):
        write_documents(out_dir / "raw" / name, documents)
    _remove_stale_shards(out_dir / "raw", set(names))
    for split in heldout:
        write_documents(out_dir / "heldout" / f"{split}.jsonl.zst", held[split])
    write_documents(out_dir / DSIR_TARGET_FILE, held[DSIR_TARGET])
    _write_ground_truth(out_dir / "ground_truth.parquet", training)

    per_source = stats["sources"].values()
    stats["shard_documents"] = [len(docs) for docs in shards]
    stats["inputs"] = corpus_inputs(sources)
    stats["totals"] = {
        "documents": len(training),
        "characters": sum(s["characters"] for s in per_source),
        "corrupted": sum(s["corrupted"] for s in per_source),
        **{f"heldout_{split}": len(held[split]) for split in heldout},
        DSIR_TARGET: len(held[DSIR_TARGET]),
    }
    write_json(out_dir / "build_stats.json", stats)
    return stats
