"""`selectlab select`: run one selection variant; rank scores over the pool; pack a selection into
training sequences; fit Meta-rater's weights from its proxies."""

from __future__ import annotations

from selectlab.commands import add_action, add_pool_argument, json_arg


def run(args) -> dict:
    from selectlab.corpus.pools import listed_shards
    from selectlab.selection.run import SelectionSpec, run_selection

    spec = SelectionSpec(**args.params)
    manifest, taken = run_selection(spec, args.attributes_dir, listed_shards(args.pool),
                                    args.out_dir, args.upstream, args.memory_mb)
    summary = {key: manifest[key] for key in ("selected_tokens", "selected_documents",
                                              "budget_tokens", "short_strata", "upsampled")}
    if taken is not None:  # how the take went under the memory ceiling
        summary |= {"passes": taken.walks, "candidates_held": taken.collected}
    return summary


def rank(args) -> dict:
    from selectlab.corpus.pools import listed_shards
    from selectlab.selection.memory import plan_memory
    from selectlab.selection.pool import meta_rows
    from selectlab.selection.ranks import rank_family

    shards = listed_shards(args.pool)
    rows = [meta_rows(args.attributes_dir, shard) for shard in shards]
    limits = plan_memory(args.memory_mb, sum(rows), max(rows, default=0))
    # A batch of values costs about 14 bytes (the value, the sort, one shard's lookups).
    summary = rank_family(args.attributes_dir, args.family, args.columns, shards,
                          capacity=max(limits.take.solve_units * 8, 1), spill=limits.spill)
    return {"family": args.family, "columns": summary["columns"]}


def pack(args) -> dict:
    from dataclasses import asdict

    import pandas as pd

    from selectlab.pack import pack_selection
    from selectlab.tokens import load_tokenizer, token_dtype

    tokenizer = load_tokenizer(args.tokenizer)
    selection = pd.read_parquet(args.selection)
    stats = pack_selection(selection, args.tokens_dir, args.seq_len, tokenizer.eos_token_id,
                           args.out, token_dtype(len(tokenizer)),
                           eos_after_each=not args.units_hold_eos)
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
    add_pool_argument(p)
    p.add_argument("--upstream", default=None,
                   help="fitted Meta-rater weights, or the selection a curriculum reorders")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--memory-mb", type=float, default=None,
                   help="ceiling on the job's resident memory (selection.memory_mb)")
    p = add_action(actions, "rank", rank,
                   "percentile ranks of a family's scores over the pool, as rank sidecars")
    p.add_argument("--family", required=True)
    p.add_argument("--columns", nargs="+", required=True)
    p.add_argument("--attributes-dir", required=True)
    add_pool_argument(p)
    p.add_argument("--memory-mb", type=float, required=True)
    p = add_action(actions, "pack", pack, "pack a selection into fixed-length sequences")
    p.add_argument("--selection", required=True)
    p.add_argument("--tokens-dir", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--units-hold-eos", action="store_true",
                   help="the units are sequences that hold their documents' EOS: add none")
    p.add_argument("--out", required=True)
    p = add_action(actions, "metarater-fit", metarater_fit,
                   "fit Meta-rater's regressor on proxy results and search the best weights")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--manifests", nargs="+", required=True, help="proxies' selection manifests")
    p.add_argument("--perplexity", nargs="+", required=True,
                   help="proxies' perplexity.json, in the same order")
    p.add_argument("--out", required=True)
