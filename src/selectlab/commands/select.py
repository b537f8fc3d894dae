"""`selectlab select`: run one selection variant; pack a selection into training sequences;
fit Meta-rater's weights from its proxies."""

from __future__ import annotations

from pathlib import Path

from selectlab.commands import add_action, json_arg


def run(args) -> dict:
    from selectlab.selection.run import SelectionSpec, select_variant

    spec = SelectionSpec(**args.params)
    shards = [Path(path).name.removesuffix(".parquet") for path in args.meta]
    manifest = select_variant(spec, args.attributes_dir, shards, args.out_dir, args.upstream)
    return {key: manifest[key] for key in ("selected_tokens", "selected_documents",
                                           "budget_tokens", "short_strata", "upsampled")}


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


def metarater_fit(args) -> dict:
    from selectlab.selection.metarater import FitSettings, fit_from_proxy_files
    from selectlab.shards import write_json

    settings = FitSettings.from_dict(args.params)
    result = fit_from_proxy_files(settings, args.manifests, args.perplexity)
    write_json(args.out, result)
    return {"proxies": result["proxies_used"], "weights": result["weights"],
            "heldout_spearman": result["regressor"]["heldout_spearman"]}


def register(stages) -> None:
    parser = stages.add_parser("select", help="selection variants, packing, Meta-rater fits")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "run", run, "select documents for one variant under a token budget")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--attributes-dir", required=True)
    p.add_argument("--meta", nargs="+", required=True, help="meta sidecars, one per shard")
    p.add_argument("--upstream", default=None,
                   help="fitted Meta-rater weights, or the selection a curriculum reorders")
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "pack", pack, "pack a selection into fixed-length sequences")
    p.add_argument("--selection", required=True)
    p.add_argument("--tokens-dir", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--out", required=True)
    p = add_action(actions, "metarater-fit", metarater_fit,
                   "fit Meta-rater's regressor on proxy results and search the best weights")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--manifests", nargs="+", required=True, help="proxies' selection manifests")
    p.add_argument("--perplexity", nargs="+", required=True,
                   help="proxies' perplexity.json, in the same order")
    p.add_argument("--out", required=True)
