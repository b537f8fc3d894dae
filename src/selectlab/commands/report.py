"""`selectlab report`: tables, figures, the HTML report, provenance and the archive."""

from __future__ import annotations

import json
from pathlib import Path

from selectlab.commands import add_action, json_arg
from selectlab.report.plan import FIGURES, METARATER_FIGURES, TABLES, config_order


def tables(args) -> dict:
    from selectlab.report import tables as t
    from selectlab.report.table_files import write_table
    from selectlab.report.training_tokens import read_training_tokens

    p = args.params | {"descriptions": config_order(args.params["descriptions"])}
    variants = list(p["descriptions"])
    perplexity, icl = t.read_eval_results(Path(args.eval_dir), variants)
    reasons = p.get("missing_reasons", {})
    tokens = read_training_tokens(args.manifests, args.train_logs)
    frames = {
        "main": t.main_table(p["descriptions"], perplexity, icl, p["group_order"], p["baseline"],
                             missing_reasons=reasons, tokens=tokens),
        "perplexity_by_source": t.perplexity_by_source_table(p["descriptions"], perplexity,
                                                             missing_reasons=reasons),
        "icl_by_task": t.icl_by_task_table(p["descriptions"], icl, p["group_order"],
                                           missing_reasons=reasons),
        "selection_overlap": selection_overlap(p["descriptions"], args.selections),
    }
    out = Path(args.out_dir)
    for name, frame in frames.items():
        write_table(frame, out / f"{name}.csv", out / f"{name}.md", p.get("notes", []))
    return {"rows": len(frames["main"])}


def selection_overlap(descriptions: dict, selections: list[str]):
    from selectlab.report.selection_figures import overlap_table
    from selectlab.selection.overlap import overlap_matrix, read_selection_keys

    paths = {Path(path).parent.name: path for path in selections}
    return overlap_table(overlap_matrix(read_selection_keys(paths)), descriptions)


def metarater_figures(args, main, out: Path) -> list[str]:
    """Meta-rater's four figures, when the configuration has a search."""
    from selectlab.report import selection_figures as sf

    if not args.fits:
        return []
    fits = {}
    for path in args.fits:
        fit = json.loads(Path(path).read_text())
        fits[fit["search"]] = fit
    sf.plot_metarater_fit(fits, out / "metarater_fit.png")
    sf.plot_metarater_weights(fits, out / "metarater_weights.png")
    points = sf.proxy_count_points(main, [tuple(v) for v in args.metarater["variants"]])
    sf.plot_downstream_vs_proxies(points, out / "metarater_proxies.png")
    sf.plot_weight_pca(fits, out / "metarater_pca.png")
    return list(METARATER_FIGURES)


def figures(args) -> dict:
    import pandas as pd

    from selectlab.report.figures import plot_loss_curves, plot_ppl_vs_icl

    p = args.params | {"descriptions": config_order(args.params["descriptions"])}
    main = pd.read_csv(args.main_table)
    out = Path(args.out_dir)
    plot_ppl_vs_icl(main, out / "ppl_vs_icl.png")
    logs = {Path(path).parent.name: Path(path) for path in args.train_logs}
    descriptions = p["descriptions"]
    plot_loss_curves(logs, out / "loss_curves.png",
                     labels={n: descriptions[n].get("label", n) for n in logs},
                     families={n: descriptions[n]["family"] for n in logs})
    from selectlab.report.selection_figures import plot_selection_overlap, read_overlap_table

    plot_selection_overlap(read_overlap_table(args.overlap), out / "selection_overlap.png")
    names = [*FIGURES, *metarater_figures(args, main, out)]
    return {"figures": [str(out / f"{name}.png") for name in names]}


def html(args) -> dict:
    from selectlab.report.html import ReportSection, render_html_report, table_section
    from selectlab.report.plan import figure_caption, heading, table_caption

    tables_dir, figures_dir, captions = (Path(args.tables_dir), Path(args.figures_dir),
                                         Path(args.captions_dir))
    sections = [
        table_section(heading(name), tables_dir / f"{name}.csv", tables_dir / f"{name}.md",
                      captions / f"{table_caption(name)}.rst")
        for name in (args.tables or TABLES)
    ] + [
        ReportSection(heading(name), caption_file=captions / f"{figure_caption(name)}.rst",
                      figure_png=figures_dir / f"{name}.png")
        for name in (args.figures or FIGURES)
    ]
    render_html_report(args.title, sections, Path(args.out))
    return {"sections": len(sections)}


def environment(args) -> dict:
    from selectlab.report.archive import environment_record
    from selectlab.shards import atomic_path

    with atomic_path(args.out) as tmp:
        tmp.write_text(environment_record())
    return {"environment": args.out}


def provenance(args) -> dict:
    from selectlab.report.archive import provenance_record
    from selectlab.shards import write_json

    checksums: dict[str, str] = {}
    for path in args.reports:
        checksums.update(json.loads(Path(path).read_text())["inputs_sha256"])
    corpus_inputs = None
    if args.corpus_build:
        corpus_inputs = json.loads(Path(args.corpus_build).read_text()).get("inputs", {})
    record = provenance_record(args.params, checksums, Path(args.repo_dir), corpus_inputs)
    write_json(args.out, record)
    return {"inputs": len(checksums), "commit": record["git"]["commit"]}


def archive(args) -> dict:
    from selectlab.report.archive import build_archive, stripped_of_measurements

    run_dir = Path(args.run_dir)
    members: dict[str, Path | bytes] = {}
    for path in map(Path, dict.fromkeys(args.files)):
        stripped = stripped_of_measurements(path)  # no timings: two runs archive the same bytes
        members[str(path.relative_to(run_dir))] = path if stripped is None else stripped
    build_archive(Path(args.out), members)
    return {"members": len(members)}


def register(stages) -> None:
    parser = stages.add_parser("report", help="tables, figures, report, archive")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "tables", tables, "main, per-source and per-task tables")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--eval-dir", required=True)
    p.add_argument("--selections", nargs="+", required=True,
                   help="selection.parquet of every variant (overlap table)")
    p.add_argument("--manifests", nargs="+", required=True,
                   help="selections/{variant}/manifest.json of every variant (tokens selected)")
    p.add_argument("--train-logs", nargs="+", required=True,
                   help="models/{variant}/train_log.csv of every variant (tokens trained)")
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "figures", figures, "perplexity-vs-ICL and loss-curve figures")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--main-table", required=True)
    p.add_argument("--train-logs", nargs="+", required=True)
    p.add_argument("--overlap", required=True, help="tables/selection_overlap.csv")
    p.add_argument("--fits", nargs="*", default=[], help="Meta-rater weights.json per search")
    p.add_argument("--metarater", type=json_arg, default={"variants": []},
                   help="(search, proxies, label) of every Meta-rater variant")
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "html", html, "one self-contained HTML page of tables and figures")
    p.add_argument("--tables-dir", required=True)
    p.add_argument("--figures-dir", required=True)
    p.add_argument("--captions-dir", required=True)
    p.add_argument("--title", required=True)
    p.add_argument("--tables", nargs="*", default=None, help="table names, in report order")
    p.add_argument("--figures", nargs="*", default=None, help="figure names, in report order")
    p.add_argument("--out", required=True)
    p = add_action(actions, "environment", environment, "installed package versions")
    p.add_argument("--out", required=True)
    p = add_action(actions, "provenance", provenance, "git commit, config, input checksums")
    p.add_argument("--params", type=json_arg, required=True, help="the resolved config")
    p.add_argument("--reports", nargs="+", required=True, help="per-shard reader reports")
    p.add_argument("--corpus-build", default=None,
                   help="the embedded corpus's build_stats.json (its inputs are recorded)")
    p.add_argument("--repo-dir", default=".")
    p.add_argument("--out", required=True)
    p = add_action(actions, "archive", archive, "deterministic tarball with checksums")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--files", nargs="+", required=True)
    p.add_argument("--out", required=True)
