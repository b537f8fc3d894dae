"""`selectlab corpus`: build the embedded corpus, cut SlimPajama held-out splits, reports."""

from __future__ import annotations

from pathlib import Path

from selectlab.commands import add_action, aligned_outputs, json_arg


def build(args) -> dict:
    from selectlab.corpus.build import build_embedded_corpus

    p = args.params
    return build_embedded_corpus(p["embedded"], p["set_names"], p["num_shards"],
                                 Path(args.out_dir))


def heldout(args) -> dict:
    from selectlab.corpus.slimpajama import write_heldout

    return write_heldout(args.params, args.tokenizer, args.out)


def download(args) -> dict:
    from selectlab.corpus.slimpajama import download_files

    p = args.params
    files = download_files(p["dataset"], args.split, p["chunks"], p["files_per_chunk"],
                           args.out_dir)
    return {"files": [str(f) for f in files]}


def read_report(args) -> dict:
    import json

    import pandas as pd

    from selectlab.corpus.pool_ids import check_unique
    from selectlab.shards import REASONS, atomic_path

    documents = check_unique(args.meta) if args.meta else None
    rows = []
    for path in args.reports:
        report = json.loads(Path(path).read_text())
        rows.append({"shard": Path(path).stem, "lines": report["lines"],
                     "documents": report["documents"], "tokens": report["tokens"]}
                    | {reason: report["skipped"][reason] for reason in REASONS}
                    | {"damaged_files": len(report.get("damaged_files", []))})
    table = pd.DataFrame(rows)
    with atomic_path(args.out) as tmp:
        table.to_csv(tmp, index=False)
    return {"shards": len(rows), "documents": documents,
            "skipped": int(table[list(REASONS)].sum().sum()),
            "damaged_files": int(table["damaged_files"].sum())}


def cut_pool(args) -> dict:
    from selectlab.corpus.pools import PoolSpec, cut_pool_shard
    from selectlab.tokens import load_tokenizer

    spec = PoolSpec(**args.params)
    eos = load_tokenizer(args.tokenizer).eos_token_id
    shards = aligned_outputs(dict(zip(args.tokens, args.meta, strict=True)), args.out_tokens,
                             args.out_meta)
    return {tokens: cut_pool_shard(tokens, meta, spec, eos, out_tokens, out_meta)
            for (tokens, meta), (out_tokens, out_meta) in shards}


def pool_report(args) -> dict:
    from selectlab.corpus.pools import write_pool_report

    return write_pool_report(args.meta, args.out)


def register(stages) -> None:
    parser = stages.add_parser("corpus", help="raw shards and held-out splits")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "build", build, "build the embedded offline corpus")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "heldout", heldout,
                   "a SlimPajama held-out split: its documents up to a token budget")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--tokenizer", required=True, help="the run's tokenizer: it counts the tokens")
    p.add_argument("--out", required=True)
    p = add_action(actions, "download", download, "download SlimPajama files (online, opt-in)")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--split", default="train")
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "read-report", read_report,
                   "collect per-shard reader reports; check ids are unique in the pool")
    p.add_argument("--reports", nargs="+", required=True)
    p.add_argument("--meta", nargs="*", default=[],
                   help="every shard's meta sidecar: their ids must be unique together")
    p.add_argument("--out", required=True)
    p = add_action(actions, "cut-pool", cut_pool,
                   "cut tokenized shards into a pool's units (sequences or a document subset)")
    p.add_argument("--params", type=json_arg, required=True, help="the pool's settings")
    p.add_argument("--tokens", nargs="+", required=True, help="the shards' tokens")
    p.add_argument("--meta", nargs="+", required=True, help="their meta sidecars, in order")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--out-tokens", nargs="+", required=True, help="one per shard, in order")
    p.add_argument("--out-meta", nargs="+", required=True, help="one per shard, in order")
    p = add_action(actions, "pool-report", pool_report,
                   "one pool's settings and its units and tokens per pool shard and source")
    p.add_argument("--meta", nargs="+", required=True, help="the pool's shards' meta sidecars")
    p.add_argument("--out", required=True)
