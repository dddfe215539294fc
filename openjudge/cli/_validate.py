"""``openjudge validate`` and ``openjudge estimate``: look at a job without grading anything."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from openjudge.cli._codes import EXIT_INVALID, EXIT_OK
from openjudge.cli._estimate import estimate_job, render_estimate
from openjudge.cli._run import data_path, plural
from openjudge.config._build import build_job
from openjudge.config._loader import load_config
from openjudge.jobs._preflight import check_data

__all__ = ["add_estimate_arguments", "add_validate_arguments", "cmd_estimate", "cmd_validate"]


def add_validate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", type=Path, help="job config (YAML)")
    parser.add_argument(
        "--data",
        type=Path,
        help="also map the first records of this dataset to every grader's inputs "
        "(default: data.path, if the file exists)",
    )
    parser.add_argument(
        "--records", type=int, default=100, metavar="N", help="records of the dataset to check (default 100)"
    )


def cmd_validate(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    source = str(args.config)
    job = build_job(config, source=source, base_dir=args.config.parent, use_cache=False)
    summary = f"{plural(len(config.graders), 'grader')}, {plural(len(config.providers), 'provider')}"
    data: Path | None = args.data
    if data is None and config.data.path is not None:
        candidate = data_path(config, args.config, None)
        data = candidate if candidate.is_file() else None
    if data is None:
        print(f"{args.config}: ok ({summary}; no dataset checked: give --data FILE)")
        return EXIT_OK
    check = check_data(config, job, data, source=source, records=args.records)
    if check.problems:
        for problem in check.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_INVALID
    first = "the first record" if check.records == 1 else f"the first {check.records} records"
    if not check.routed:
        print(f"{args.config}: ok ({summary}; {first} of {data} fit every grader)")
        return EXIT_OK
    applies = ", ".join(f"{name} {check.applies.get(name, 0):,}" for name in config.graders)
    print(
        f"{args.config}: ok ({summary}; {first} of {data} fit every grader that applies to them; "
        f"records per grader: {applies})"
    )
    return EXIT_OK


def add_estimate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", type=Path, help="job config (YAML)")
    parser.add_argument("--data", type=Path, help="dataset; overrides data.path")


def cmd_estimate(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    job = build_job(config, source=str(args.config), base_dir=args.config.parent, use_cache=False)
    print(render_estimate(estimate_job(config, job, data_path(config, args.config, args.data))))
    return EXIT_OK
