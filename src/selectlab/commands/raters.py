"""`selectlab raters`: train one rater from its judge labels (or wrap a public classifier), and
write the rater tables."""

from __future__ import annotations

import json
from pathlib import Path

from selectlab.commands import add_action, json_arg


def _notes(text: str) -> list[str]:
    value = json.loads(text)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("--judge-notes must be a JSON list of strings")
    return value


def train(args) -> dict:
    import torch

    from selectlab.raters.resolve import CARD_FILE, config_hash
    from selectlab.raters.spec import base_rater
    from selectlab.shards import atomic_path

    torch.set_num_threads(args.threads)
    # The hash covers what the rater learns; batch sizes for speed are added after it.
    common = {"config_hash": config_hash(args.params | {"rater": args.rater})}
    params = args.params | args.throughput
    rater = base_rater(args.rater)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    if params.get("pretrained"):
        from selectlab.raters.pretrained import wrap_pretrained

        record = wrap_pretrained(rater, params, out_dir, **common)
    else:
        if args.labels is None:
            raise ValueError(f"rater {args.rater} is trained from judge labels: give --labels")
        _check_labels(args.labels)
        common |= {"gpus": args.gpus, "judge_notes": args.judge_notes, "name": args.rater}
        if rater == "dataman" and params.get("objective") == "generative":
            from selectlab.raters.dataman_generative import train_generative

            record = train_generative(args.labels, params, out_dir, **common)
        elif params.get("separate"):
            from selectlab.raters.separate import train_separate_raters

            record = train_separate_raters(rater, args.labels, params, out_dir,
                                           tokenizer_dir=args.tokenizer, **common)
        else:
            from selectlab.raters.build import train_head_rater

            record = train_head_rater(rater, args.labels, params, out_dir,
                                      tokenizer_dir=args.tokenizer, **common)
    with atomic_path(args.metrics) as tmp:
        Path(tmp).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return {"rater": args.rater, "card": str(out_dir / CARD_FILE), "metrics": record["metrics"]}


def _check_labels(path: str) -> None:
    from selectlab.inputs import require_parquet_rows

    protocol = Path(path).parent.name  # judgments/<protocol>/labels.parquet
    require_parquet_rows(path, f"judge ({protocol}; log: logs/judge/{protocol}.log)")


def tables(args) -> dict:
    from selectlab.raters.tables import rater_tables
    from selectlab.report.table_files import write_table

    records = {}
    for path in args.metrics:
        record = json.loads(Path(path).read_text())
        records[record.get("name", record["rater"])] = record
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, (frame, notes) in rater_tables(records).items():
        write_table(frame, out / f"{stem}.csv", out / f"{stem}.md", notes)
        written.append(stem)
    missing = sorted(set(args.expect) - set(written))
    if missing:
        raise ValueError(f"no metrics for the tables {missing}")
    return {"tables": written}


def register(stages) -> None:
    parser = stages.add_parser("raters", help="train QuRater, DataMan, PRRC and classifier raters")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "train", train, "train one rater (or wrap a public classifier)")
    p.add_argument("--rater", required=True,
                   help="qurater (or qurater_<setup>), dataman (or dataman_<version>), prrc, "
                        "fineweb_edu, wanjuan")
    p.add_argument("--params", type=json_arg, required=True, help="resolved raters.<rater>")
    p.add_argument("--throughput", type=json_arg, default={},
                   help="forward_batch_size (speed only, kept out of the params)")
    p.add_argument("--labels", default=None, help="judgments/<protocol>/labels.parquet")
    p.add_argument("--tokenizer", default=None, help="the run's tokenizer (random encoders)")
    p.add_argument("--judge-notes", type=_notes, default=[], help="JSON list of caveats")
    p.add_argument("--gpus", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", required=True, help="the rater directory (raters/<rater>)")
    p.add_argument("--metrics", required=True, help="where metrics.json goes")
    p = add_action(actions, "tables", tables, "rater tables from metrics.json files")
    p.add_argument("--metrics", nargs="+", required=True)
    p.add_argument("--expect", nargs="*", default=[], help="table stems that must be written")
    p.add_argument("--out-dir", required=True)
