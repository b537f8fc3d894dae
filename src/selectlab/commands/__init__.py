"""Subcommands of the `selectlab` program, one module per workflow stage."""

from __future__ import annotations

import argparse
import json


def json_arg(text: str) -> dict:
    """Parse a `--params` value: the job's resolved config section as JSON."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"--params is not valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("--params must be a JSON object")
    return value


def add_action(actions, name: str, func, help_text: str) -> argparse.ArgumentParser:
    parser = actions.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(func=func)
    return parser


def add_configfile_argument(parser: argparse.ArgumentParser) -> None:
    """`--configfile A [B ...]`: the files a `snakemake --configfile` run would merge."""
    parser.add_argument("--configfile", nargs="+", required=True,
                        help="config files, later ones merged into earlier (as Snakemake does)")


def add_pool_argument(parser: argparse.ArgumentParser) -> None:
    """`--pool`: which shards a selection pool holds, in order (selectlab.selection.pool)."""
    parser.add_argument("--pool", required=True, help="the pool's read report (CSV) or pool "
                        "report (JSON): its shards, in order")


def aligned_outputs(shards: dict, *outputs: list[str]) -> list[tuple]:
    """Each (shard, its value) of a job's shards with its path in each output list, checked to
    line up (a batch job names every shard's outputs, in the shards' order)."""
    for paths in outputs:
        if len(paths) != len(shards):
            raise SystemExit(f"{len(shards)} shards but {len(paths)} output paths: "
                             f"{paths[:3]}...")
    return list(zip(shards.items(), zip(*outputs, strict=True), strict=True))
