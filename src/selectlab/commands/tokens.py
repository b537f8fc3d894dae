"""`selectlab tokens`: train or copy the tokenizer, tokenize a shard into tokens + meta sidecar."""

from __future__ import annotations

from selectlab.commands import add_action, aligned_outputs, json_arg


def train(args) -> dict:
    from selectlab.tokens import sample_texts, train_bpe_tokenizer

    texts = sample_texts(args.inputs, args.sample_chars, args.max_doc_chars)
    tokenizer = train_bpe_tokenizer(texts, args.vocab_size, args.out_dir)
    return {"vocab_size": len(tokenizer), "eos_token_id": tokenizer.eos_token_id}


def copy(args) -> dict:
    from selectlab.tokens import copy_pretrained_tokenizer

    copy_pretrained_tokenizer(args.source, args.out_dir)
    return {"copied": args.source}


def encode(args) -> dict:
    """Tokenize each shard of --shard-files (one, or a batch of corpus.shards_per_job) into its
    own tokens, meta sidecar, read report and quarantine file (the lists align with it)."""
    from selectlab.tokens import tokenize_shard

    shards = aligned_outputs(args.shard_files, args.out_tokens, args.out_meta, args.report,
                             args.quarantine)
    results = {}
    for (shard, inputs), (out_tokens, out_meta, report_path, quarantine) in shards:
        report = tokenize_shard(inputs, args.tokenizer, shard, out_tokens, out_meta,
                                report_path, quarantine, max_chars=args.max_doc_chars,
                                id_root=args.id_root, on_damaged_file=args.on_damaged_file)
        results[shard] = {"documents": report.documents, "skipped": report.skipped,
                          "damaged_files": report.damaged_files}
    return results


def register(stages) -> None:
    parser = stages.add_parser("tokens", help="tokenizer and per-shard tokenization")
    actions = parser.add_subparsers(dest="action", required=True)
    p = add_action(actions, "train", train, "train a byte-level BPE tokenizer on shards")
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--vocab-size", type=int, required=True)
    p.add_argument("--sample-chars", type=int, required=True)
    p.add_argument("--max-doc-chars", type=int, required=True)
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "copy", copy, "copy a pretrained tokenizer directory into the run")
    p.add_argument("--source", required=True)
    p.add_argument("--out-dir", required=True)
    p = add_action(actions, "encode", encode,
                   "tokenize shards; write each one's tokens, meta sidecar and read report")
    p.add_argument("--shard-files", type=json_arg, required=True,
                   help="JSON: each shard's raw files, {shard: [file, ...]}")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--max-doc-chars", type=int, required=True)
    p.add_argument("--id-root", default=None,
                   help="the pool's root directory: ids of records without one are relative to it")
    p.add_argument("--on-damaged-file", choices=["stop", "quarantine"], default="stop",
                   help="a truncated or corrupt file stops the job, or is counted and skipped")
    p.add_argument("--out-tokens", nargs="+", required=True, help="one per shard")
    p.add_argument("--out-meta", nargs="+", required=True, help="one per shard")
    p.add_argument("--report", nargs="+", required=True, help="one per shard")
    p.add_argument("--quarantine", nargs="+", required=True, help="one per shard")
