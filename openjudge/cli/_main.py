"""The ``openjudge`` command: the subcommands, the parser and :func:`main`.

A subcommand is an entry of :data:`COMMANDS`: a name, a help line, a function that adds
its arguments to its parser and a function that runs it and returns the exit code.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import openjudge
from openjudge.cli import _import_openai as import_openai
from openjudge.cli import _metaeval as metaeval_cli
from openjudge.cli._codes import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, EXIT_SIGPIPE
from openjudge.cli._run import add_run_arguments, cmd_run
from openjudge.cli._validate import add_estimate_arguments, add_validate_arguments, cmd_estimate, cmd_validate
from openjudge.config._loader import ConfigError
from openjudge.config._spec import config_json_schema
from openjudge.graders._registry import BUILTIN_GRADERS
from openjudge.jobs._datasets import DatasetError
from openjudge.jobs._results import ResultsFileError
from openjudge.jobs._resume import DISTRIBUTION

__all__ = ["COMMANDS", "Command", "main"]

EPILOG = """exit codes:
  0    finished (grader errors are recorded as results)
  1    invalid config, dataset or results file (the message names file, line and field)
  2    bad command-line usage
  3    grading failed: every grader result in the results file is an error, or more than
       --max-error-rate of them (a rerun re-attempts system failures first)
  130  interrupted; rerun the same command to resume where it stopped
"""


_WITH_EXIT_CODES = frozenset({"run"})
"""Subcommands whose ``--help`` repeats the exit codes: only ``run`` uses all of them (the
others exit 0, 1 or 2, as ``openjudge --help`` lists)."""


def _cmd_graders(args: argparse.Namespace) -> int:
    infos = list(BUILTIN_GRADERS.values())
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "name": i.name,
                        "kind": i.kind,
                        "class": i.class_path,
                        "summary": i.summary,
                        "required_inputs": list(i.required_inputs),
                        "optional_inputs": list(i.optional_inputs),
                        "score_range": None
                        if i.score_range is None
                        else [i.score_range.low, i.score_range.high],
                        "higher_is_better": i.higher_is_better,
                    }
                    for i in infos
                ],
                indent=2,
            )
        )
        return EXIT_OK
    rows = [("name", "kind", "inputs", "range", "better")]
    for i in infos:
        inputs = (
            ", ".join([*i.required_inputs, *(f"[{o}]" for o in i.optional_inputs)])
            or "(template placeholders)"
        )
        rng = "-" if i.score_range is None else f"[{i.score_range.low:g}, {i.score_range.high:g}]"
        better = "-" if i.higher_is_better is None else ("higher" if i.higher_is_better else "lower")
        rows.append((i.name, i.kind, inputs, rng, better))
    widths = [max(len(r[c]) for r in rows) for c in range(5)]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    return EXIT_OK


def _add_graders_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(config_json_schema(), indent=2, sort_keys=True))
    return EXIT_OK


@dataclass(frozen=True, slots=True)
class Command:
    """A subcommand: ``add_arguments(parser)`` declares its arguments, ``run(args)`` returns the exit code."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: list[Command] = [
    Command("run", "grade a dataset from a config", add_run_arguments, cmd_run),
    Command(
        "validate",
        "check a config (and its data) without grading anything",
        add_validate_arguments,
        cmd_validate,
    ),
    Command(
        "estimate", "estimate judge tokens and cost before spending", add_estimate_arguments, cmd_estimate
    ),
    Command(
        "graders",
        "list the built-in graders with their inputs and score ranges",
        _add_graders_arguments,
        _cmd_graders,
    ),
    Command(
        "schema", "print the JSON Schema of job config files (for editors)", lambda parser: None, _cmd_schema
    ),
    Command("meta-eval", metaeval_cli.HELP, metaeval_cli.add_arguments, metaeval_cli.run_command),
    Command(
        "import-openai-graders", import_openai.HELP, import_openai.add_arguments, import_openai.run_command
    ),
]
"""The subcommands, in the order ``--help`` lists them."""


def version_text() -> str:
    return (
        f"openjudge {openjudge.__version__} (distribution {DISTRIBUTION}; "
        f"Python {platform.python_version()}, {Path(openjudge.__file__).parent})"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="openjudge",
        description="Grade datasets with rule-based and LLM-as-a-judge graders.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        child = sub.add_parser(
            command.name,
            help=command.help,
            epilog=EPILOG if command.name in _WITH_EXIT_CODES else None,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(child)
        child.set_defaults(handler=command.run)
    return parser


def _silence_stdout() -> None:
    """After a closed pipe (``openjudge schema | head``): stop writing to it, quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _encodable_stdout() -> None:
    """Print a lone surrogate from a dataset or a response as ``\\udXXX`` (the rule of
    :mod:`openjudge._text`; stderr already does) instead of failing on it."""
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``openjudge`` console script."""
    _encodable_stdout()
    args = _parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        code = handler(args)
        sys.stdout.flush()
        return code
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    except (DatasetError, ResultsFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_SIGPIPE
