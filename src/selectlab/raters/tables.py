"""Rater tables in the papers' shapes, from the raters' metrics.json files.

- `rater_qurater`: held-out pairwise accuracy per criterion (QuRating section 3.4).
- `rater_dataman`: 5-level and binary accuracy per criterion, accuracy per domain, and their
  averages (DataMan Table 8), one block per trained version (all-rating, domain-only,
  score-only; a version has the rows of its heads).
- `rater_dataman_confusion`: the Overall Score's accuracies and misclassification rates
  (DataMan Table 9), one row per version that rates the Overall Score.
- `rater_dataman_throughput`: input, output and document speed and memory of each version
  scoring the held-out documents (DataMan Table 10).
- `rater_prrc`: macro-F1 per dimension (Meta-rater Table 9).
- `rater_classifiers`: the FineWeb-Edu- and WanjuanCC-style raters.

Every table says what the rater was and what it learned from; tables built on the simulated
judge carry its note.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from selectlab.judge import dataman

SCALE = 100.0  # accuracies and F1 are shown in percent, as in the papers


def _pct(value) -> float | None:
    return None if value is None or not np.isfinite(value) else round(SCALE * value, 1)


def provenance(record: dict) -> str:
    training = record.get("training", {})
    if training.get("pretrained"):
        return (f"{record['rater']}: the public classifier(s) {record['backbone']},"
                " not evaluated here.")
    size = (training.get("train_rows_confident") or training.get("train_documents"))
    unit = "confident pairs" if "train_rows_confident" in training else "documents"
    return (f"{record.get('name', record['rater'])}: {record['kind']} rater on "
            f"{record['backbone']} (window "
            f"{record['window']} tokens), trained on {size} judged {unit}; metrics on held-out "
            f"judgments never trained on.")


def notes_of(records: list[dict]) -> list[str]:
    notes = [provenance(r) for r in records]
    for r in records:
        notes += [n for n in r.get("judge", {}).get("notes", []) if n not in notes]
    return notes


def qurater_table(record: dict) -> pd.DataFrame:
    rows = [{"criterion": criterion, "pairwise_accuracy": _pct(m["pairwise_accuracy"]),
             "confident_pairs": m["pairs"], "accuracy_all_pairs": _pct(m["pairwise_accuracy_all"]),
             "all_pairs": m["pairs_all"]} for criterion, m in record["metrics"].items()]
    return pd.DataFrame(rows)


VERSION_LABELS = {"all": "All-rating", "domain": "Domain-only", "score": "Score-only"}


def dataman_records(records: dict[str, dict]) -> list[dict]:
    """The trained DataMan versions, in Table 8's order."""
    found = [r for r in records.values() if r["rater"] == "dataman"]
    return sorted(found, key=lambda r: list(VERSION_LABELS).index(r.get("version") or "all"))


def version_label(record: dict) -> str:
    return VERSION_LABELS[record.get("version") or "all"]


def dataman_table(record: dict) -> pd.DataFrame:
    """Table 8: one row per quality criterion and per domain, then the two averages."""
    m = record["metrics"]
    rows = []
    quality = [key for key in dataman.CRITERIA if key in m]
    for key in quality:
        rows.append({"section": "quality", "item": dataman.CRITERIA[key][0],
                     "accuracy_5level": _pct(m[key]["accuracy"]),
                     "accuracy_binary": _pct(m[key]["acc_binary"]), "n": m[key]["n"]})
    if quality:
        rows.append({"section": "quality", "item": "Quality avg.",
                     "accuracy_5level": _pct(np.mean([m[k]["accuracy"] for k in quality])),
                     "accuracy_binary": _pct(np.mean([m[k]["acc_binary"] for k in quality])),
                     "n": m[quality[0]]["n"]})
    if "domain" in m:
        per_domain = m["domain"]["per_domain"]
        for letter, name in dataman.DOMAINS.items():
            if letter in per_domain:
                rows.append({"section": "domain", "item": f"{name} ({letter})",
                             "accuracy_5level": _pct(per_domain[letter]),
                             "accuracy_binary": None, "n": None})
        rows.append({"section": "domain", "item": "Domain avg.",
                     "accuracy_5level": _pct(m["domain"]["accuracy"]), "accuracy_binary": None,
                     "n": m["domain"]["n"]})
    frame = pd.DataFrame(rows)
    frame["n"] = frame["n"].astype("Int64")
    return frame


def dataman_versions_table(records: list[dict]) -> pd.DataFrame:
    """Table 8 for every trained version, a block each."""
    frames = [dataman_table(r).assign(version=version_label(r)) for r in records]
    frame = pd.concat(frames, ignore_index=True)
    return frame[["version", *[c for c in frame.columns if c != "version"]]]


CONFUSION_COLUMNS = {
    "acc_5level": "5-level", "acc_binary": "<3 vs >=3", "acc_high": ">=3 acc", "acc_low": "<3 acc",
    "err_lt2_as_ge3": "<2 but >=3", "err_2_as_gt3": ">=2,<3 but >3",
    "err_2_as_3": ">=2,<3 but =3", "err_ge4_as_lt3": ">=4 but <3", "err_3_as_lt3": ">=3,<4 but <3",
}


def dataman_confusion_table(records: list[dict]) -> pd.DataFrame:
    """Table 9: the Overall Score's accuracies and error rates (percent), per version that
    rates it."""
    rows = []
    for record in records:
        analysis = record["metrics"].get("overall_score_analysis")
        if analysis is None:
            continue
        row = {"version": version_label(record)}
        row |= {label: _pct(analysis.get(key)) for key, label in CONFUSION_COLUMNS.items()}
        rows.append(row | {"low docs": analysis.get("n_low"), "high docs": analysis.get("n_high")})
    return pd.DataFrame(rows, columns=["version", *CONFUSION_COLUMNS.values(), "low docs",
                                       "high docs"])


THROUGHPUT_COLUMNS = {"input_tokens_per_s": "Input Speed (Tok/s)",
                      "output_tokens_per_s": "Output Speed (Tok/s)",
                      "docs_per_s": "Processing Speed (Docs/s)", "memory_gb": "Memory (G)"}


def dataman_throughput_table(records: list[dict]) -> pd.DataFrame:
    """Table 10: each version's speeds and memory on the held-out documents."""
    rows = []
    for record in records:
        measured = record.get("throughput")
        if measured is None:
            raise ValueError(f"{record.get('name', 'dataman')}: no throughput in its metrics; "
                             "re-run train_rater")
        rows.append({"version": version_label(record)}
                    | {label: measured[key] for key, label in THROUGHPUT_COLUMNS.items()}
                    | {"documents": measured["documents"], "device": measured["device"],
                       "memory": measured["memory_kind"]})
    return pd.DataFrame(rows)


def prrc_table(record: dict) -> pd.DataFrame:
    rows = [{"dimension": dim, "macro_f1": _pct(m["macro_f1"]), "accuracy": _pct(m["accuracy"]),
             "n": m["n"]} for dim, m in record["metrics"].items()]
    return pd.DataFrame(rows)


def classifiers_table(records: list[dict]) -> pd.DataFrame:
    rows = []
    for record in records:
        if not record["metrics"]:
            rows.append({"rater": record["rater"], "score": "(pretrained)"})
        for score, m in record["metrics"].items():
            rows.append({"rater": record["rater"], "score": score, "n": m["n"],
                         "accuracy": _pct(m.get("accuracy", m.get("accuracy_rounded"))),
                         "macro_f1": _pct(m.get("macro_f1", m.get("macro_f1_rounded"))),
                         "f1": _pct(m.get("f1_positive", m.get("f1_ge3"))),
                         "rmse": None if "rmse" not in m else round(m["rmse"], 3),
                         "spearman": None if "spearman" not in m else round(m["spearman"], 3)})
    frame = pd.DataFrame(rows, columns=["rater", "score", "n", "accuracy", "macro_f1", "f1",
                                        "rmse", "spearman"])
    frame["n"] = frame["n"].astype("Int64")
    frame.attrs["notes"] = [
        "fineweb_edu: regression 0-5; accuracy and macro-F1 of the rounded score, f1 of the "
        "split >= 3 (FineWeb-Edu's threshold), Spearman with the judge's score.",
        "wanjuan: binary heads at probability 0.5; f1 of the positive class (has advertising; "
        "is fluent).",
    ]
    return frame


def rater_tables(records: dict[str, dict]) -> dict[str, tuple[pd.DataFrame, list[str]]]:
    """Table stem -> (table, notes) for the raters present in `records` (rater -> metrics)."""
    tables: dict[str, tuple[pd.DataFrame, list[str]]] = {}
    if "qurater" in records:
        r = records["qurater"]
        tables["rater_qurater"] = (qurater_table(r), notes_of([r]) + [
            "Accuracy (%) on held-out pairs whose judgment is confident (|p - 0.5| >= the "
            "training margin), and on all held-out pairs."])
    versions = dataman_records(records)
    if versions:
        tables["rater_dataman"] = (dataman_versions_table(versions), notes_of(versions) + [
            "Accuracy (%) per criterion: 5-level and binary (< 3 vs >= 3); per domain: the "
            "share of documents of that gold domain classified right (DataMan Table 8), per "
            "trained version."])
        tables["rater_dataman_confusion"] = (dataman_confusion_table(versions),
                                             notes_of(versions) + [
            "Overall Score (DataMan Table 9, %): error rates of low documents are shares of "
            "the documents rated < 3 by the judge, those of high documents shares of the "
            "documents rated >= 3."])
        tables["rater_dataman_throughput"] = (dataman_throughput_table(versions),
                                              notes_of(versions) + [
            "Speeds of each version scoring its held-out documents in the training job "
            "(DataMan Table 10 shape; the generative versions through the evaluation backend). "
            "Memory: the accelerator's peak allocation, or the process's peak resident memory "
            "on a CPU. The annotating version's speed over the pool is in "
            "annotation_throughput."])
    if "prrc" in records:
        r = records["prrc"]
        tables["rater_prrc"] = (prrc_table(r), notes_of([r]) + [
            "Macro-F1 (%) over the score classes 0-5 per dimension (Meta-rater Table 9)."])
    classifiers = [records[r] for r in ("fineweb_edu", "wanjuan") if r in records]
    if classifiers:
        tables["rater_classifiers"] = (classifiers_table(classifiers), notes_of(classifiers))
    return tables
