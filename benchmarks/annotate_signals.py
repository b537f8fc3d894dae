"""Speed of the rule-based annotators against two references, on the same documents, in one
process.

    .venv/bin/python benchmarks/annotate_signals.py [--docs 1500] [--repeats 3]

Documents: an even mix of real offline text (English Wikipedia leads, GSM8K problems, Python
standard-library source), cut to at most 3,000 characters like the embedded corpus.

1. Quality signals: `selectlab.annotate.signals.compute_signals` (all 11 signals) against
   datatrove's GopherQualityFilter and C4QualityFilter (`.filter(doc)` per document).
   Target: our signals at least as fast per document as the Gopher filter (ratio <= 1).
2. DSIR: `selectlab.annotate.dsir` featurisation and log importance weights against the
   `data-selection` package's `get_ngram_counts` (+ a dot product with the same weight vector),
   both with lower-cased word/punctuation tokens, uni- and bigrams and 10,000 buckets.
   Target: ours at least 5x faster (ratio <= 0.2).

Ratios are ours / theirs in seconds (lower is faster for us); every timing is the best of
`--repeats` passes, each pass with a fresh n-gram hasher so our token-hash memo starts cold.
"""

from __future__ import annotations

import argparse
import os
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
BUCKETS = 10_000
MAX_CHARS = 3_000


def benchmark_documents(n_docs: int) -> list[str]:
    from selectlab.annotate.dsir_sources import gsm8k_texts
    from selectlab.corpus.wiki import load_wikipedia_leads

    per_kind = n_docs // 3
    wiki = [f"{title}\n{extract}" for title, extract in load_wikipedia_leads("en-us")[:per_kind]]
    math = list(gsm8k_texts())[:per_kind]
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    modules = sorted(p for p in stdlib.rglob("*.py") if "test" not in p.parts)[:per_kind]
    code = [p.read_text(errors="replace") for p in modules]
    return [text[:MAX_CHARS] for text in wiki + math + code]


def best_seconds(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def time_signals(texts: list[str], repeats: int) -> dict[str, float]:
    from datatrove.data import Document
    from datatrove.pipeline.filters import C4QualityFilter, GopherQualityFilter

    from selectlab.annotate.signals import compute_signals

    documents = [Document(text=text, id=str(i)) for i, text in enumerate(texts)]
    gopher, c4 = GopherQualityFilter(), C4QualityFilter()
    for warm in documents[:5]:  # loads the word tokenizer (spaCy) outside the timing
        gopher.filter(warm)
        c4.filter(warm)
    return {
        "ours": best_seconds(lambda: [compute_signals(t) for t in texts], repeats),
        "gopher": best_seconds(lambda: [gopher.filter(d) for d in documents], repeats),
        "c4": best_seconds(lambda: [c4.filter(d) for d in documents], repeats),
    }


def time_dsir(texts: list[str], repeats: int, batch_size: int = 256) -> dict[str, float]:
    from data_selection.hashed_ngram_dsir import get_ngram_counts

    from selectlab.annotate.dsir import NgramHasher, log_importance_weights

    weights = np.random.default_rng(0).normal(size=BUCKETS)
    batches = [texts[i:i + batch_size] for i in range(0, len(texts), batch_size)]

    def ours_features():
        hasher = NgramHasher(BUCKETS)
        return [hasher.featurize(batch) for batch in batches]

    def ours_weights():
        hasher = NgramHasher(BUCKETS)
        return np.concatenate([log_importance_weights(hasher, weights[None], batch)[0]
                               for batch in batches])

    def theirs_features():
        return [get_ngram_counts(text, n=2, num_buckets=BUCKETS) for text in texts]

    def theirs_weights():
        return np.array([weights @ get_ngram_counts(text, n=2, num_buckets=BUCKETS)
                         for text in texts])

    return {
        "ours_features": best_seconds(ours_features, repeats),
        "theirs_features": best_seconds(theirs_features, repeats),
        "ours_weights": best_seconds(ours_weights, repeats),
        "theirs_weights": best_seconds(theirs_weights, repeats),
        "same_feature_counts": same_feature_counts(texts),
    }


def same_feature_counts(texts: list[str]) -> float:
    """Fraction of documents with as many n-gram features in both featurisations: the check
    that both tokenise and form n-grams alike (only the hash, hence the buckets, differs)."""
    from data_selection.hashed_ngram_dsir import get_ngram_counts

    from selectlab.annotate.dsir import NgramHasher

    _, docs = NgramHasher(BUCKETS).featurize(texts)
    ours = np.bincount(docs, minlength=len(texts))
    theirs = np.array([get_ngram_counts(t, n=2, num_buckets=BUCKETS).sum() for t in texts])
    return float(np.mean(ours == theirs))


def report_line(name: str, ours: float, theirs: float, n_docs: int, target: float) -> str:
    ratio = ours / theirs
    verdict = "met" if ratio <= target else "NOT met"
    return (f"{name:<38} ours {1e6 * ours / n_docs:8.1f} us/doc  theirs "
            f"{1e6 * theirs / n_docs:8.1f} us/doc  ratio {ratio:5.3f} "
            f"(target <= {target}: {verdict})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1500)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    texts = benchmark_documents(args.docs)
    n = len(texts)
    print(f"{n} documents, {sum(map(len, texts)) / n:.0f} characters on average")
    signals = time_signals(texts, args.repeats)
    print(report_line("signals vs datatrove Gopher filter", signals["ours"], signals["gopher"],
                      n, 1.0))
    print(report_line("signals vs datatrove C4 filter", signals["ours"], signals["c4"], n,
                      1.0))
    dsir = time_dsir(texts, args.repeats)
    print(report_line("DSIR featurisation vs data-selection", dsir["ours_features"],
                      dsir["theirs_features"], n, 0.2))
    print(report_line("DSIR log weights vs data-selection", dsir["ours_weights"],
                      dsir["theirs_weights"], n, 0.2))
    print(f"documents with the same number of n-gram features in both featurisations: "
          f"{dsir['same_feature_counts']:.1%}")


if __name__ == "__main__":
    main()
