"""`selectlab analysis`: sample the annotated corpus, draw the analysis figures, and write
DataMan's corpus tables."""

from __future__ import annotations

import json
from pathlib import Path

from selectlab.commands import add_action, add_pool_argument, json_arg


def sample(args) -> dict:
    import pyarrow.parquet as pq

    from selectlab.analysis.sample import pool_sidecars, sample_table, sidecars_by_family
    from selectlab.shards import atomic_path, write_json

    meta, sidecar_paths = pool_sidecars(args.attributes_dir, args.pool, args.families)
    sidecars = sidecars_by_family(meta, sidecar_paths)
    table, summary = sample_table(meta, sidecars, args.params["sample_rows"],
                                  args.params["seed"])
    with atomic_path(args.out) as tmp:
        pq.write_table(table, tmp)
    write_json(args.summary, summary)
    return {"documents": summary["documents"], "sampled": summary["sampled"],
            "columns": table.num_columns}


def nll_note(refppl: dict) -> str:
    return (f"NLL: the reference LM's ({refppl['model']}) mean negative log-likelihood per "
            f"token, over each document's first {refppl['max_tokens']} tokens.")


def figures(args) -> dict:
    import pyarrow.parquet as pq

    from selectlab.analysis.outputs import FigureJob, write_figures
    from selectlab.analysis.sample import to_frame

    p = args.params
    job = FigureJob(families=list(p["families"]), rater_families=p["rater_families"],
                    dataman=p["dataman"], refppl=p["refppl"], notes=p["notes"],
                    nll_note=nll_note(p["refppl_settings"]) if p["refppl"] else "",
                    figures_dir=Path(args.figures_dir), matrices_dir=Path(args.matrices_dir),
                    tables_dir=Path(args.tables_dir) if args.tables_dir else None,
                    qurater=p.get("qurater"), family_pools=p.get("family_pools"))
    if job.dataman and job.refppl and job.tables_dir is None:
        raise ValueError("the DataMan-vs-NLL table needs --tables-dir")
    # analysis/sample_{pool}.parquet (selectlab.layout.analysis_sample)
    frames = {Path(path).stem.removeprefix("sample_"): to_frame(pq.read_table(path))
              for path in args.samples}
    written = write_figures(frames, job)
    return {"figures": [str(path) for path in written]}


def dataman_tables(args) -> dict:
    from selectlab.analysis import dataman_tables as dt
    from selectlab.analysis.sample import pool_sidecars
    from selectlab.report.table_files import write_table

    metas, sidecars = pool_sidecars(args.attributes_dir, args.pool, [args.family])
    counts, sums, reasons = [], [], []
    for meta, sidecar in zip(metas, sidecars, strict=True):
        frame = dt.read_dataman_shard(meta, sidecar)
        counts.append(dt.shard_counts(frame))
        sums.append(dt.shard_domain_sums(frame))
        reasons.append(dt.missing_reasons(frame))
    corpus = dt.corpus_table(dt.add_counts(counts))
    total = int(corpus["documents"].iloc[-1])
    notes = [*args.notes, *dt.reasons_note(dt.add_indexed(reasons), total),
             "Tokens are the run tokenizer's (meta n_tokens); shares are within each group."]
    write_table(corpus, Path(args.out_corpus_csv), Path(args.out_corpus_md), notes)
    means = dt.domain_means_table(dt.add_indexed(sums))
    write_table(means, Path(args.out_means_csv), Path(args.out_means_md),
                [*args.notes, *dt.reasons_note(dt.add_indexed(reasons), total)])
    return {"documents": total, "domains": len(means)}


def judge_labels(args) -> dict:
    import pandas as pd

    from selectlab.analysis import judge_labels as jl
    from selectlab.analysis import plan
    from selectlab.analysis.figures import plot_heatmap
    from selectlab.report.table_files import write_table
    from selectlab.shards import atomic_path

    figures, matrices = Path(args.figures_dir), Path(args.matrices_dir)
    matrices.mkdir(parents=True, exist_ok=True)
    written = []

    def heatmap(matrix, name: str, title: str) -> None:
        with atomic_path(matrices / f"{name}.csv") as tmp:
            matrix.to_csv(tmp)
        plot_heatmap(matrix, figures / f"{name}.png", title=title,
                     colorbar_label="Pearson correlation", notes=args.notes)
        written.append(name)

    if args.qurating:
        labels = pd.read_parquet(args.qurating)
        pairs = len(labels[["doc_a", "doc_b"]].drop_duplicates())
        heatmap(jl.qurating_label_pearson(labels), plan.QURATING_LABEL_PEARSON,
                f"The judge's four criteria, Pearson over {pairs:,} pairs")
    if args.dataman and not args.tables_dir:
        raise ValueError("--dataman writes DataMan's fine-tuning table: give --tables-dir")
    if args.dataman:
        labels = pd.read_parquet(args.dataman)
        heatmap(jl.dataman_label_pearson(labels), plan.DATAMAN_LABEL_PEARSON,
                f"DataMan's 14 ratings, Pearson over {len(labels):,} fine-tuning documents")
        write_table(jl.dataman_finetune_table(labels),
                    Path(args.tables_dir) / f"{plan.DATAMAN_FINETUNE}.csv",
                    Path(args.tables_dir) / f"{plan.DATAMAN_FINETUNE}.md",
                    [*args.notes, "Documents the judge rated in full (the raters' training "
                     "and held-out set), as DataMan Table 6."])
        written.append(plan.DATAMAN_FINETUNE)
    return {"written": written}


def _notes(text: str) -> list[str]:
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("--notes must be a JSON list of strings")
    return value


def add_pool_arguments(parser) -> None:
    """A pool's sidecars, found from its ready file (selectlab.analysis.sample.pool_sidecars)."""
    parser.add_argument("--attributes-dir", required=True)
    add_pool_argument(parser)


def register(stages) -> None:
    parser = stages.add_parser("analysis", help="score distributions, correlations, DataMan "
                               "corpus tables")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "sample", sample, "one table of sampled documents with every score")
    p.add_argument("--params", type=json_arg, required=True, help="{sample_rows, seed}")
    add_pool_arguments(p)
    p.add_argument("--families", nargs="+", required=True, help="the score families")
    p.add_argument("--out", required=True)
    p.add_argument("--summary", required=True)
    p = add_action(actions, "figures", figures, "distribution, heatmap and NLL figures")
    p.add_argument("--params", type=json_arg, required=True, help="the analysis plan and notes")
    p.add_argument("--samples", nargs="+", required=True,
                   help="analysis/sample_{pool}.parquet of every sampled pool")
    p.add_argument("--figures-dir", required=True)
    p.add_argument("--tables-dir", help="where the DataMan-vs-NLL table goes (when drawn)")
    p.add_argument("--matrices-dir", required=True)
    p = add_action(actions, "dataman-tables", dataman_tables,
                   "documents by domain, score and source; mean rating per domain")
    add_pool_arguments(p)
    p.add_argument("--family", required=True, help="the DataMan family")
    p.add_argument("--notes", type=_notes, default=[], help="JSON list of caveats")
    p.add_argument("--out-corpus-csv", required=True)
    p.add_argument("--out-corpus-md", required=True)
    p.add_argument("--out-means-csv", required=True)
    p.add_argument("--out-means-md", required=True)
    p = add_action(actions, "judge-labels", judge_labels,
                   "QuRating Fig. 5, DataMan Table 6 and Fig. 5 from the judge's labels")
    p.add_argument("--qurating", help="judgments/qurating/labels.parquet")
    p.add_argument("--dataman", help="judgments/dataman/labels.parquet")
    p.add_argument("--notes", type=_notes, default=[], help="JSON list of caveats")
    p.add_argument("--figures-dir", required=True)
    p.add_argument("--tables-dir", help="where DataMan's fine-tuning table goes (--dataman)")
    p.add_argument("--matrices-dir", required=True)
