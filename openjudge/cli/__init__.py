"""The ``openjudge`` command line.

Exit codes: 0 done (grader errors are results, not failures); 1 invalid config or
dataset; 2 bad command-line usage; 130 interrupted (rerun the same command to resume).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from openjudge.config.build import build_job
from openjudge.config.loader import ConfigError, load_config
from openjudge.config.schema import JobConfig, config_json_schema
from openjudge.graders.registry import BUILTIN_GRADERS, describe
from openjudge.jobs.datasets import DatasetError
from openjudge.jobs.report import write_report
from openjudge.jobs.results import ResultsFileError, read_results
from openjudge.jobs.summary import Price, SummaryBuilder, render_table
from openjudge.metaeval import cli as metaeval_cli

__all__ = ["main"]

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

EPILOG = """exit codes:
  0    finished (grader errors are recorded as results, not failures)
  1    invalid config, dataset or results file (the message names file, line and field)
  2    bad command-line usage
  130  interrupted; rerun the same command to resume where it stopped
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="openjudge",
        description="Grade datasets with rule-based and LLM-as-a-judge graders.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="grade a dataset from a config",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("config", type=Path, help="job config (YAML)")
    run.add_argument("--data", type=Path, help="dataset (JSONL, JSON array or CSV); overrides data.path")
    run.add_argument(
        "--out", type=Path, default=Path("results.jsonl"), help="results file (JSONL; resumed if it exists)"
    )
    run.add_argument("--report", type=Path, help="also write a self-contained HTML report here")
    run.add_argument(
        "--fail-on-bad-records",
        action="store_true",
        help="stop at the first malformed record instead of recording it",
    )
    run.add_argument("--no-progress", action="store_true", help="do not draw the progress line")
    run.add_argument("--no-cache", action="store_true", help="do not read or write the judge-reply cache")
    run.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: this process (default); ray: a Ray cluster through Ray Data (docs/ray.md)",
    )
    run.add_argument(
        "--workers",
        type=int,
        default=2,
        metavar="N",
        help="ray engine: grading actors; each provider's limits are split across them (default 2)",
    )

    validate = sub.add_parser("validate", help="check a config without grading anything")
    validate.add_argument("config", type=Path)

    estimate = sub.add_parser("estimate", help="estimate judge tokens and cost before spending")
    estimate.add_argument("config", type=Path)
    estimate.add_argument("--data", type=Path, help="dataset; overrides data.path")

    graders = sub.add_parser("graders", help="list the built-in graders with their inputs and score ranges")
    graders.add_argument("--json", action="store_true", help="machine-readable output")

    sub.add_parser("schema", help="print the JSON Schema of job config files (for editors)")
    metaeval_cli.add_parser(sub)
    return parser


def _data_path(config: JobConfig, config_path: Path, override: Path | None) -> Path:
    if override is not None:
        return override
    if config.data.path is None:
        raise ConfigError([f"{config_path}: data.path: no dataset; give --data FILE or set data.path"])
    path = Path(config.data.path)
    return path if path.is_absolute() else config_path.parent / path


def _prices(config: JobConfig, grader_providers: dict[str, str]) -> dict[str, Price]:
    prices: dict[str, Price] = {}
    for grader, provider in grader_providers.items():
        price = config.providers[provider].price
        if price:
            prices[grader] = Price(
                prompt_per_1k=price.get("prompt_per_1k", 0.0),
                completion_per_1k=price.get("completion_per_1k", 0.0),
            )
    return prices


def _cmd_run(args: argparse.Namespace) -> int:
    from openjudge.cli.run_job import RunStats, run_job

    if args.workers < 1:
        print(f"error: --workers must be at least 1, got {args.workers}", file=sys.stderr)
        return EXIT_USAGE
    config = load_config(args.config)
    if args.fail_on_bad_records:
        config = config.model_copy(update={"data": config.data.model_copy(update={"on_error": "fail"})})
    data = _data_path(config, args.config, args.data)
    if not data.is_file():
        raise ConfigError([f"{data}: dataset file not found"])
    local = args.engine == "local"
    job = build_job(
        config, source=str(args.config), base_dir=args.config.parent, use_cache=local and not args.no_cache
    )
    progress = None if args.no_progress else sys.stderr
    stats: RunStats | RayRunStats
    if local:
        stats = anyio.run(
            lambda: run_job(config, job, data_path=data, out_path=args.out, progress_stream=progress)
        )
    else:
        from openjudge.distributed import RayRunStats, grade_on_ray, import_ray

        try:
            import_ray()
        except ImportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        stats = grade_on_ray(
            config,
            data,
            args.out,
            workers=args.workers,
            base_dir=args.config.parent,
            use_cache=not args.no_cache,
            progress_stream=progress,
        )
    prices = _prices(config, dict(job.grader_providers))
    builder = SummaryBuilder(prices=prices)
    for record in read_results(args.out):
        builder.add(record)
    print(render_table(builder.build()))
    print(
        f"\n{stats.graded} graded, {stats.skipped_done} already in {args.out}, "
        f"{stats.bad_records} malformed records, {stats.with_errors} with grader errors"
    )
    if job.cache is not None:
        print(f"judge cache: {job.cache.hits} hits, {job.cache.misses} misses ({job.cache.path})")
        job.cache.close()
    if args.report is not None:
        write_report(args.out, args.report, title=f"openjudge: {args.config.name}", prices=prices)
        print(f"report: {args.report}")
    if stats.interrupted:
        print(f"interrupted: rerun the same command to resume from {args.out}", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    build_job(config, source=str(args.config), use_cache=False)
    print(f"{args.config}: ok ({len(config.graders)} graders, {len(config.providers)} providers)")
    return EXIT_OK


def _cmd_estimate(args: argparse.Namespace) -> int:
    from openjudge.cli.estimate import estimate_job, render_estimate

    config = load_config(args.config)
    job = build_job(config, source=str(args.config), use_cache=False)
    print(render_estimate(estimate_job(config, job, _data_path(config, args.config, args.data))))
    return EXIT_OK


def _cmd_graders(args: argparse.Namespace) -> int:
    infos = [describe(entry) for entry in BUILTIN_GRADERS.values()]
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


def _cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(config_json_schema(), indent=2, sort_keys=True))
    return EXIT_OK


COMMANDS = {
    "run": _cmd_run,
    "validate": _cmd_validate,
    "estimate": _cmd_estimate,
    "graders": _cmd_graders,
    "schema": _cmd_schema,
    "meta-eval": metaeval_cli.run_command,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``openjudge`` console script."""
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (ConfigError, DatasetError, ResultsFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
