"""`selectlab <stage> ...`: the one command every workflow rule runs, also usable by hand.

Each stage registers its subcommands from `selectlab.commands.<stage>`; heavy libraries are
imported inside the command functions so that `selectlab --help` stays instant.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import traceback

from selectlab.commands import (
    analysis,
    annotate,
    config,
    corpus,
    cost,
    evaluate,
    instruct,
    judge,
    mates,
    papers,
    plan,
    pretrain,
    raters,
    report,
    select,
    tokens,
)

STAGES = [corpus, tokens, judge, raters, annotate, analysis, select, mates, pretrain, evaluate,
          papers, instruct, report, cost, config, plan]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="selectlab", description=__doc__)
    stages = parser.add_subparsers(dest="stage", required=True, metavar="STAGE")
    for stage in STAGES:
        stage.register(stages)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command. Without `argv` this is the `selectlab` program itself, a workflow job:
    it binds to the workflow that started it (selectlab.lifecycle); called with `argv` (tests,
    other Python code) it leaves the calling process's signals alone."""
    from selectlab.errors import StageError
    from selectlab.redact import ScrubFilter, scrub

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(ScrubFilter())
    args = build_parser().parse_args(argv)
    if argv is None:
        from selectlab.lifecycle import bind_to_supervisor

        bind_to_supervisor(f"selectlab {args.stage}")
    try:
        result = args.func(args)
    except StageError as error:
        # A job that cannot produce a correct output says why, in words; the workflow stops.
        print(scrub(f"selectlab {args.stage}: failed: {error}"), file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError) as error:
        # Input and config problems are reported as one clear line, not a traceback.
        print(scrub(f"selectlab {args.stage}: error: {error}"), file=sys.stderr)
        return 2
    except Exception:  # noqa: BLE001 - printed (secrets scrubbed) and reported as a failure
        print(scrub(traceback.format_exc()), file=sys.stderr)
        return 1
    if result is not None:
        print(scrub(json.dumps(result, indent=2, sort_keys=True, default=str)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
