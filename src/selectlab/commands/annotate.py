"""`selectlab annotate`: score a shard with one rater family; fit DSIR; convert the reference LM;
collect the throughput table."""

from __future__ import annotations

from selectlab.commands import add_action, json_arg


def run(args) -> dict:
    """Score every shard of `--shard-files` with one family (its model loaded once)."""
    from pathlib import Path

    from selectlab.annotate.registry import build_annotator, family_kind
    from selectlab.annotate.runner import annotate_shard
    from selectlab.shards import write_json

    params = args.params | args.throughput  # batch sizes change speed, not scores
    if family_kind(params["kind"]).uses_model:
        import torch

        torch.set_num_threads(args.threads)
    from selectlab.errors import StageError
    from selectlab.judge.backends import BackendDead

    annotator = build_annotator(params, args.fitted, gpus=args.gpus)
    sources = dict(args.shard_files) | pool_shard_sources(args.pool_shards, args.tokenizer)
    stats = []
    for shard, files in sorted(sources.items()):
        try:
            stats.append(annotate_shard(
                files, Path(args.meta_dir) / f"{shard}.parquet", annotator,
                Path(args.out_dir) / f"{shard}.parquet", family=args.family, shard=shard,
                batch_size=params["batch_size"], max_chars=args.max_doc_chars,
                max_failure_rate=params.get("max_failure_rate", 0.05), id_root=args.id_root))
        except BackendDead as error:
            raise StageError(f"annotate {args.family} {shard}: stopped: {error}; the sidecar "
                             "was not written, rerun the job") from error
    write_json(args.stats, [shard.to_dict() for shard in stats])
    return {"family": args.family,
            "shards": {shard.shard: {"documents": shard.documents,
                                     "skipped": shard.read_report["n_skipped"],
                                     "docs_per_s": round(shard.docs_per_s, 1)}
                       for shard in stats}}


def pool_shard_sources(pool_shards: dict[str, str], tokenizer_dir: str | None) -> dict:
    """Pool shard -> its UnitSource (texts decoded from its tokens with the run's tokenizer)."""
    if not pool_shards:
        return {}
    from selectlab.corpus.pools import UnitSource
    from selectlab.tokens import load_tokenizer

    if tokenizer_dir is None:
        raise ValueError("pool shards are read from their tokens: --tokenizer is required")
    tokenizer = load_tokenizer(tokenizer_dir)
    return {shard: UnitSource(tokens, tokenizer) for shard, tokens in pool_shards.items()}


def fit_dsir(args) -> dict:
    from pathlib import Path

    from selectlab.annotate.dsir import fit_dsir as fit
    from selectlab.annotate.dsir_sources import sampled_texts, target_texts
    from selectlab.shards import write_json

    p = args.params
    shards = [Path(path).name.removesuffix(".parquet") for path in args.meta]
    missing = [shard for shard in shards if shard not in args.shard_files]
    if missing:
        raise ValueError(f"--shard-files lacks the files of shards {missing}")
    targets = {name: target_texts(spec, args.target_split, p["max_doc_chars"])
               for name, spec in p["targets"].items()}
    raw = sampled_texts([args.shard_files[shard] for shard in shards], args.meta,
                        p["raw_sample_docs"], p["seed"], p["max_doc_chars"])
    model, counted = fit(targets, raw, p["buckets"])
    model.save(args.out_model)
    card = {"kind": "dsir", "params": p, "counted": counted, "raw_shards": shards}
    write_json(args.out_card, card)
    return counted


def prepare_reference_lm(args) -> dict:
    from selectlab.annotate.refppl import convert_smollm2

    return convert_smollm2(args.out_dir)


def throughput(args) -> dict:
    from selectlab.annotate.throughput import write_throughput

    table = write_throughput(args.stats, args.out_csv, args.out_md)
    return {"families": table["family"].tolist()}


def register(stages) -> None:
    parser = stages.add_parser("annotate", help="per-shard rater sidecars and their fitting")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "run", run, "write one family's sidecars for one or more shards")
    p.add_argument("--family", required=True, help="the family's name in the config")
    p.add_argument("--params", type=json_arg, required=True, help="the family's settings")
    p.add_argument("--throughput", type=json_arg, required=True,
                   help="batch_size (documents per row group), forward_batch_size")
    p.add_argument("--shard-files", type=json_arg, default={},
                   help="JSON: shard -> its raw files")
    p.add_argument("--pool-shards", type=json_arg, default={},
                   help="JSON: pool shard -> its token array (texts decoded with --tokenizer)")
    p.add_argument("--tokenizer", default=None, help="the run's tokenizer, for --pool-shards")
    p.add_argument("--meta-dir", required=True, help="the meta sidecars, {shard}.parquet")
    p.add_argument("--fitted", nargs="*", default=[], help="the family's fitted inputs")
    p.add_argument("--max-doc-chars", type=int, required=True)
    p.add_argument("--id-root", default=None,
                   help="the pool's root directory: ids of records without one are relative to it")
    p.add_argument("--gpus", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out-dir", required=True, help="where {shard}.parquet sidecars go")
    p.add_argument("--stats", required=True,
                   help="throughput and read counts of every shard of the job (JSON list)")
    p = add_action(actions, "fit-dsir", fit_dsir, "fit DSIR's target and raw n-gram counts")
    p.add_argument("--params", type=json_arg, required=True)
    p.add_argument("--meta", nargs="+", required=True, help="meta sidecars of the raw shards")
    p.add_argument("--shard-files", type=json_arg, required=True,
                   help="JSON: shard -> its raw files")
    p.add_argument("--target-split", help="the corpus's DSIR target split (pool: targets)")
    p.add_argument("--out-model", required=True)
    p.add_argument("--out-card", required=True)
    p = add_action(actions, "prepare-reference-lm", prepare_reference_lm,
                   "convert the offline SmolLM2 GGUF into a plain model directory")
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "throughput", throughput, "the annotation throughput table")
    p.add_argument("--stats", nargs="+", required=True)
    p.add_argument("--out-csv", required=True)
    p.add_argument("--out-md", required=True)

