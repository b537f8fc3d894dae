"""`selectlab report`: tables, figures, the HTML report, provenance and the archive."""

from __future__ import annotations

import json
from pathlib import Path

from selectlab.commands import add_action, json_arg

TABLES = ("main", "perplexity_by_source", "icl_by_task")
FIGURES = ("ppl_vs_icl", "loss_curves")


def tables(args) -> dict:
    from selectlab.report import tables as t

    p = args.params
    variants = list(p["descriptions"])
    perplexity, icl = t.read_eval_results(Path(args.eval_dir), variants)
    reasons = p.get("missing_reasons", {})
    frames = {
        "main": t.main_table(p["descriptions"], perplexity, icl, p["group_order"], p["baseline"],
                             missing_reasons=reasons),
        "perplexity_by_source": t.perplexity_by_source_table(p["descriptions"], perplexity,
                                                             missing_reasons=reasons),
        "icl_by_task": t.icl_by_task_table(p["descriptions"], icl, p["group_order"],
                                           missing_reasons=reasons),
    }
    out = Path(args.out_dir)
    for name, frame in frames.items():
        t.write_table(frame, out / f"{name}.csv", out / f"{name}.md", p.get("notes", []))
    return {"rows": len(frames["main"])}


def figures(args) -> dict:
    import pandas as pd

    from selectlab.report.figures import plot_loss_curves, plot_ppl_vs_icl

    p = args.params
    main = pd.read_csv(args.main_table)
    out = Path(args.out_dir)
    plot_ppl_vs_icl(main, out / "ppl_vs_icl.png")
    logs = {Path(path).parent.name: Path(path) for path in args.train_logs}
    descriptions = p["descriptions"]
    plot_loss_curves(logs, out / "loss_curves.png",
                     labels={n: descriptions[n].get("label", n) for n in logs},
                     families={n: descriptions[n]["family"] for n in logs})
    return {"figures": [str(out / f"{name}.png") for name in FIGURES]}


def html(args) -> dict:
    from selectlab.report.html import ReportSection, render_html_report, table_section

    tables_dir, figures_dir, captions = (Path(args.tables_dir), Path(args.figures_dir),
                                         Path(args.captions_dir))
    headings = {"main": "Main results", "perplexity_by_source": "Perplexity by source",
                "icl_by_task": "In-context learning by task",
                "ppl_vs_icl": "Perplexity vs in-context learning",
                "loss_curves": "Training loss"}
    caption_name = {"main": "main_table"}
    sections = [
        table_section(headings[name], tables_dir / f"{name}.csv", tables_dir / f"{name}.md",
                      captions / f"{caption_name.get(name, name)}.rst")
        for name in TABLES
    ] + [
        ReportSection(headings[name], caption_file=captions / f"{name}.rst",
                      figure_png=figures_dir / f"{name}.png")
        for name in FIGURES
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
    record = provenance_record(args.params, checksums, Path(args.repo_dir))
    write_json(args.out, record)
    return {"inputs": len(checksums), "commit": record["git"]["commit"]}


def archive(args) -> dict:
    from selectlab.report.archive import build_archive

    run_dir = Path(args.run_dir)
    members = {str(Path(path).relative_to(run_dir)): Path(path) for path in args.files}
    build_archive(Path(args.out), members)
    return {"members": len(members)}


def register(stages) -> None:
    parser = stages.add_parser("report", help="tables, figures, report, archive")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "tables", tables, "main, per-source and per-task tables")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--eval-dir", required=True)
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "figures", figures, "perplexity-vs-ICL and loss-curve figures")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--main-table", required=True)
    p.add_argument("--train-logs", nargs="+", required=True)
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "html", html, "one self-contained HTML page of tables and figures")
    p.add_argument("--tables-dir", required=True)
    p.add_argument("--figures-dir", required=True)
    p.add_argument("--captions-dir", required=True)
    p.add_argument("--title", required=True)
    p.add_argument("--out", required=True)
    p = add_action(actions, "environment", environment, "installed package versions")
    p.add_argument("--out", required=True)
    p = add_action(actions, "provenance", provenance, "git commit, config, input checksums")
    p.add_argument("--params", type=json_arg, required=True, help="the resolved config")
    p.add_argument("--reports", nargs="+", required=True, help="per-shard reader reports")
    p.add_argument("--repo-dir", default=".")
    p.add_argument("--out", required=True)
    p = add_action(actions, "archive", archive, "deterministic tarball with checksums")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--files", nargs="+", required=True)
    p.add_argument("--out", required=True)
