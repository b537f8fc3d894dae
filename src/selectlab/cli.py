"""`selectlab <stage> ...`: the one command every workflow rule runs, also usable by hand.

Each stage registers its subcommands from `selectlab.commands.<stage>`; heavy libraries are
imported inside the command functions so that `selectlab --help` stays instant.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from selectlab.commands import (
    analysis,
    annotate,
    corpus,
    cost,
    evaluate,
    instruct,
    judge,
    mates,
    pretrain,
    raters,
    report,
    select,
    tokens,
)

STAGES = [corpus, tokens, judge, raters, annotate, analysis, select, mates, pretrain, evaluate,
          instruct, report, cost]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="selectlab", description=__doc__)
    stages = parser.add_subparsers(dest="stage", required=True, metavar="STAGE")
    for stage in STAGES:
        stage.register(stages)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = build_parser().parse_args(argv)
    try:
        result = args.func(args)
    except (ValueError, FileNotFoundError) as error:
        # Input and config problems are reported as one clear line, not a traceback.
        print(f"selectlab {args.stage}: error: {error}", file=sys.stderr)
        return 2
    if result is not None:
        print(json.dumps(result, indent=2, sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
