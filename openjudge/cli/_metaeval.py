"""``openjudge meta-eval``: how far to trust a judge config, measured on labelled data.

Registered in :data:`openjudge.cli._main.COMMANDS` (:func:`add_arguments`, :func:`run_command`); this module imports nothing
heavy until the command runs (numpy comes with the statistics).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["HELP", "add_arguments", "needs_numpy", "run_command"]

EXIT_OK, EXIT_USAGE = 0, 2

DESCRIPTION = """Run a judge config's graders on labelled data and report, per grader: agreement with
the labels (pairwise accuracy; Spearman, Kendall, exact and within-1 agreement for scores),
position bias (flip rate when the order is swapped, first-position win rate), length bias,
self-consistency over --repeats, failures, tokens, cost and time per 1,000 judgements.
Every figure comes with a bootstrap 95% interval over the labelled items. With --compare,
a second config judges the same data and the differences get paired-bootstrap intervals.

With --recorded FILE instead of a config, judgements already made are scored and no judge
is called: a benchmark's stored judge outputs (--format judgebench or llmbar; the report
adds the benchmark's own headline figures), an earlier meta-eval's --judgements file, or
an 'openjudge run' results file together with the labelled file it graded (--data).
Repeat --recorded to put several judges of the same items side by side."""


def needs_numpy(exc: ImportError) -> str:
    """The message for a failed import of the statistics: name the extra when numpy is missing."""
    if exc.name == "numpy" or (exc.name or "").startswith("numpy."):
        return f"openjudge meta-eval needs numpy: pip install 'openjudge-graders[metaeval]' ({exc})"
    return str(exc)


HELP = "measure a judge config against labelled data (agreement, biases, consistency, cost)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``meta-eval`` subcommand's arguments on its parser."""
    from openjudge.metaeval._loaders import FORMATS, RECORDED_FORMATS

    parser.description = DESCRIPTION
    parser.add_argument(
        "config",
        type=Path,
        nargs="?",
        help="judge config (YAML), as for 'openjudge run'; not with --recorded",
    )
    parser.add_argument("--data", type=Path, help="labelled data (JSONL, JSON array or CSV)")
    parser.add_argument(
        "--recorded",
        type=Path,
        action="append",
        metavar="FILE",
        help="score judgements already made instead of running a config (repeatable; see --format)",
    )
    parser.add_argument(
        "--format",
        choices=sorted(set(FORMATS) | set(RECORDED_FORMATS), key=lambda f: (f != "auto", f)),
        default="auto",
        help="format of --data, or with --recorded of the recorded files: judgebench, llmbar, "
        "judgements, results (default: told from the first record; see docs/meta-eval.md)",
    )
    parser.add_argument("--compare", type=Path, metavar="CONFIG", help="a second config to compare against")
    parser.add_argument(
        "--grader", action="append", metavar="NAME", help="evaluate only this grader (repeatable)"
    )
    parser.add_argument("--repeats", type=int, default=1, metavar="K", help="judgements per item (default 1)")
    parser.add_argument(
        "--no-swap", action="store_true", help="judge pairs in the stored order only (no position bias)"
    )
    parser.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="resamples (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="resampling seed (default 0)")
    parser.add_argument("--limit", type=int, metavar="N", help="use only the first N labelled items")
    parser.add_argument(
        "--skip-bad", action="store_true", help="leave out unusable records instead of failing"
    )
    parser.add_argument(
        "--label-scale",
        type=float,
        nargs=2,
        metavar=("LOW", "HIGH"),
        help="scored responses: the labels' scale (default: the lowest and highest label)",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the report (and comparison) as JSON")
    parser.add_argument(
        "--judgements",
        type=Path,
        metavar="FILE",
        help="write every judgement (JSON Lines) to re-score later with --recorded FILE "
        "(with --compare, the first config's)",
    )
    parser.add_argument("--report", type=Path, metavar="FILE", help="write a self-contained HTML report")
    parser.add_argument(
        "--cache",
        action="store_true",
        help="let temperature-0 judges use the judge cache (cached replies make cost and time figures low)",
    )
    parser.add_argument("--no-progress", action="store_true", help="do not draw progress lines")


def _usage_error(args: argparse.Namespace) -> str | None:
    from openjudge.metaeval._loaders import RECORDED_FORMATS

    for flag, value, low in (("--repeats", args.repeats, 1), ("--bootstrap", args.bootstrap, 1)):
        if value < low:
            return f"{flag} must be at least {low}, got {value}"
    if args.limit is not None and args.limit < 1:
        return f"--limit must be at least 1, got {args.limit}"
    if args.label_scale is not None and not args.label_scale[0] < args.label_scale[1]:
        return f"--label-scale needs LOW < HIGH, got {args.label_scale[0]:g} {args.label_scale[1]:g}"
    if args.recorded:
        if args.config is not None:
            return "give a config or --recorded FILE, not both (recorded judgements need no judge)"
        for flag, used in (("--compare", args.compare), ("--grader", args.grader), ("--cache", args.cache)):
            if used:
                return f"{flag} needs a config: recorded judgements are scored as they are"
        if args.repeats != 1 or args.no_swap:
            return "--repeats and --no-swap need a config: recorded judgements are scored as they are"
        if args.format not in RECORDED_FORMATS:
            known = ", ".join(RECORDED_FORMATS)
            return f"--format {args.format} describes labelled data; a --recorded file is one of {known}"
        return None
    if args.config is None:
        return "give a judge config, or --recorded FILE to score judgements already made"
    if args.data is None:
        return "--data is required with a config (the labelled items to judge)"
    if args.format in ("judgements", "results"):
        return f"--format {args.format} describes a --recorded file, not --data"
    return None


def _recorded(args: argparse.Namespace) -> Any:
    """The recorded files as one run (their judges side by side)."""
    from openjudge.metaeval._loaders import LabelledDataError, load_labelled
    from openjudge.metaeval._rescore import load_recorded, merge_runs

    data = load_labelled(args.data, skip_bad=args.skip_bad) if args.data is not None else None
    runs = [
        load_recorded(path, format=args.format, data=data, skip_bad=args.skip_bad, limit=args.limit)
        for path in args.recorded
    ]
    try:
        return merge_runs(runs)
    except ValueError as exc:  # reported by the entry point as a bad input, exit 1
        raise LabelledDataError([str(exc)], path=args.recorded[-1]) from None


def run_command(args: argparse.Namespace) -> int:
    """Run ``openjudge meta-eval`` with parsed arguments; returns the exit code.

    Invalid configs and data raise :class:`~openjudge.config.ConfigError` or
    :class:`~openjudge.jobs.DatasetError`, which the ``openjudge`` entry point reports.
    """
    problem = _usage_error(args)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        import anyio

        from openjudge.metaeval._compare import compare_runs
        from openjudge.metaeval._configured import collect_config
        from openjudge.metaeval._console import render_comparison, render_report
        from openjudge.metaeval._html import write_html
        from openjudge.metaeval._judgements import write_judgements
        from openjudge.metaeval._loaders import load_labelled
        from openjudge.metaeval._metrics import summarize
    except ImportError as exc:
        print(f"error: {needs_numpy(exc)}", file=sys.stderr)
        return EXIT_USAGE

    label_scale = tuple(args.label_scale) if args.label_scale is not None else None
    if args.recorded:
        runs = [_recorded(args)]
    else:
        data = load_labelled(args.data, format=args.format, skip_bad=args.skip_bad, limit=args.limit)
        configs = [args.config] if args.compare is None else [args.config, args.compare]

        async def collect_all() -> list[Any]:
            return [
                await collect_config(
                    path,
                    data,
                    graders=args.grader,
                    repeats=args.repeats,
                    swap=not args.no_swap,
                    use_cache=args.cache,
                    show_progress=not args.no_progress,
                )
                for path in configs
            ]

        runs = anyio.run(collect_all)
    try:
        reports = [
            summarize(run, bootstrap=args.bootstrap, seed=args.seed, label_scale=label_scale) for run in runs
        ]
    except ValueError as exc:  # a --label-scale the labels do not fit
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for report in reports:
        print(render_report(report))
    comparison = None
    if len(runs) == 2:
        comparison = compare_runs(runs[0], runs[1], bootstrap=args.bootstrap, seed=args.seed)
        print(render_comparison(comparison))
    if args.judgements is not None:
        write_judgements(args.judgements, runs[0])
        print(f"judgements: {args.judgements}")
    if args.json is not None:
        payload: dict[str, Any] = {"reports": [r.model_dump(mode="json") for r in reports]}
        if comparison is not None:
            payload["comparison"] = comparison.model_dump(mode="json")
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2), encoding="utf-8")
        print(f"json: {args.json}")
    if args.report is not None:
        write_html(args.report, reports, comparison)
        print(f"report: {args.report}")
    return EXIT_OK
