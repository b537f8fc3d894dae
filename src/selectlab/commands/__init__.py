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
