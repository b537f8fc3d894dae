"""`selectlab select`: run one selection variant; pack a selection into training sequences."""

from __future__ import annotations

from pathlib import Path

from selectlab.commands import add_action, json_arg


def run(args) -> dict:
    from selectlab.selection.run import SelectionSpec, select_variant

    spec = SelectionSpec(**args.params)
    shards = [Path(path).name.removesuffix(".parquet") for path in args.meta]
    manifest = select_variant(spec, args.attributes_dir, shards, args.out_dir)
    return {key: manifest[key] for key in ("selected_tokens", "selected_documents",
                                           "budget_tokens", "short_strata")}


def pack(args) -> dict:
    from dataclasses import asdict

    import pandas as pd

    from selectlab.pack import pack_selection
    from selectlab.tokens import load_tokenizer, token_dtype

    tokenizer = load_tokenizer(args.tokenizer)
    selection = pd.read_parquet(args.selection)
    stats = pack_selection(selection, args.tokens_dir, args.seq_len, tokenizer.eos_token_id,
                           args.out, token_dtype(len(tokenizer)))
    return asdict(stats)


def register(stages) -> None:
    parser = stages.add_parser("select", help="selection variants and packing")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "run", run, "select documents for one variant under a token budget")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--attributes-dir", required=True)
    p.add_argument("--meta", nargs="+", required=True, help="meta sidecars, one per shard")
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "pack", pack, "pack a selection into fixed-length sequences")
    p.add_argument("--selection", required=True)
    p.add_argument("--tokens-dir", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--out", required=True)
