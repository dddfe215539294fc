"""``openjudge run``: parse the arguments, run the job engine, print what it did."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

import anyio

from openjudge.cli._codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from openjudge.config.build import BuiltJob, build_job
from openjudge.config.loader import ConfigError, load_config
from openjudge.config.schema import JobConfig
from openjudge.jobs.engine import GradingBackend, LocalBackend, RunStats, run_job
from openjudge.jobs.report import SampleSource, write_report
from openjudge.jobs.results import read_results
from openjudge.jobs.summary import Price, SummaryBuilder, render_table
from openjudge.runner.grader_config import BoundGrader

__all__ = ["add_run_arguments", "cmd_run", "data_path", "prices"]

_DEFAULT_WORKERS = 2


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument("config", type=Path, help="job config (YAML)")
    run.add_argument("--data", type=Path, help="dataset (JSONL, JSON array or CSV); overrides data.path")
    run.add_argument(
        "--out", type=Path, default=Path("results.jsonl"), help="results file (JSONL; resumed if it exists)"
    )
    run.add_argument("--report", type=Path, help="also write a self-contained HTML report here")
    run.add_argument(
        "--regrade",
        action="store_true",
        help="the results file was written under a changed config: re-grade only the changed graders "
        "on its samples (and drop removed graders' results); the old file is kept as OUT.bak",
    )
    run.add_argument(
        "--max-error-rate",
        type=float,
        metavar="R",
        help="exit with code 3 when more than this fraction (0-1) of the grader calls fail "
        "(default: only when every call fails)",
    )
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
        metavar="N",
        help=f"with --engine ray: grading actors; each provider's limits are split across them "
        f"(default {_DEFAULT_WORKERS})",
    )


def data_path(config: JobConfig, config_path: Path, override: Path | None) -> Path:
    """The dataset to grade: ``--data``, else ``data.path`` relative to the config file."""
    if override is not None:
        return override
    if config.data.path is None:
        where = config.located(str(config_path))
        raise ConfigError([where.at(("data",), "no dataset: give --data FILE or set data.path")])
    path = Path(config.data.path)
    return path if path.is_absolute() else config_path.parent / path


def prices(config: JobConfig, job: BuiltJob) -> dict[str, Price]:
    """Each priced grader's provider price."""
    out: dict[str, Price] = {}
    for grader, provider in job.grader_providers.items():
        price = config.providers[provider].price
        if price:
            out[grader] = Price(
                prompt_per_1k=price.get("prompt_per_1k", 0.0),
                completion_per_1k=price.get("completion_per_1k", 0.0),
            )
    return out


def _usage_error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _backend(args: argparse.Namespace, config: JobConfig, job: BuiltJob) -> GradingBackend:
    if args.engine == "local":
        return LocalBackend(job.runner)
    from openjudge.distributed import RayBackend

    return RayBackend(
        config,
        source=str(args.config),
        base_dir=args.config.parent,
        workers=args.workers or _DEFAULT_WORKERS,
        use_cache=not args.no_cache,
    )


def _report_changes(stats: RunStats, out: Path) -> None:
    changes = stats.changes
    if changes is None:
        return
    done = [f"graded {', '.join(changes.added)} (added)"] if changes.added else []
    if changes.changed:
        done.append(f"re-graded {', '.join(changes.changed)} (changed)")
    if changes.removed:
        done.append(f"dropped the results of {', '.join(changes.removed)} (removed)")
    if changes.aggregators:
        done.append("recomputed the aggregates")
    print(f"the config changed since {out} was written: {'; '.join(done)} on {stats.regraded} samples")
    if stats.left_out:
        print(
            f"{stats.left_out} results of samples no longer in the dataset were left out (kept in {out}.bak)"
        )


def _verdict(stats: RunStats, max_error_rate: float | None) -> int:
    """Exit code 3 when every grader call failed, or more than ``max_error_rate`` of them."""
    if not stats.failed_pairs:
        return EXIT_OK
    rate = stats.error_rate
    share = f"{stats.failed_pairs:,} of {stats.pairs:,} grader results are errors ({rate:.1%})"
    if stats.failed_pairs == stats.pairs:
        print(f"error: every grader call failed: {share}; the first: {stats.first_error}", file=sys.stderr)
        return EXIT_FAILED
    if max_error_rate is not None and rate > max_error_rate:
        print(
            f"error: {share}, above --max-error-rate {max_error_rate:g}; the first: {stats.first_error}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    print(f"first error: {stats.first_error}")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    if args.workers is not None and args.engine != "ray":
        return _usage_error("--workers applies to --engine ray only; add --engine ray, or drop --workers")
    if args.workers is not None and args.workers < 1:
        return _usage_error(f"--workers must be at least 1, got {args.workers}")
    if args.max_error_rate is not None and not 0 <= args.max_error_rate <= 1:
        return _usage_error(f"--max-error-rate must be between 0 and 1, got {args.max_error_rate:g}")
    if args.engine == "ray":
        from openjudge.distributed import import_ray

        try:
            import_ray()
        except ImportError as exc:
            return _usage_error(str(exc))
    config = load_config(args.config)
    if args.fail_on_bad_records:
        config = config.model_copy(update={"data": config.data.model_copy(update={"on_error": "fail"})})
    data = data_path(config, args.config, args.data)
    if not data.is_file():
        raise ConfigError([f"{data}: dataset file not found"])
    local = args.engine == "local"
    job = build_job(
        config, source=str(args.config), base_dir=args.config.parent, use_cache=local and not args.no_cache
    )
    stats = anyio.run(
        partial(
            run_job,
            config,
            job,
            data_path=data,
            out_path=args.out,
            backend=_backend(args, config, job),
            regrade=args.regrade,
            progress_stream=None if args.no_progress else sys.stderr,
        )
    )
    priced = prices(config, job)
    builder = SummaryBuilder(prices=priced)
    for record in read_results(args.out):
        builder.add(record)
    print(render_table(builder.build()))
    print(
        f"{stats.graded} graded, {stats.skipped_done} already in {args.out}, "
        f"{stats.bad_records} malformed records, {stats.with_errors} with grader errors"
    )
    _report_changes(stats, args.out)
    if job.cache is not None:
        print(f"judge cache: {job.cache.hits} hits, {job.cache.misses} misses ({job.cache.path})")
        job.cache.close()
    if args.report is not None:
        source = SampleSource(
            data,
            format=config.data.format,
            id_field=config.data.id_field,
            inputs={name: BoundGrader(name, cfg).inputs for name, cfg in job.runner.grader_configs.items()},
        )
        title = f"openjudge: {args.config.name}"
        write_report(args.out, args.report, title=title, prices=priced, samples=source)
        print(f"report: {args.report}")
    if stats.interrupted:
        print(f"interrupted: rerun the same command to resume from {args.out}", file=sys.stderr)
        return EXIT_INTERRUPTED
    return _verdict(stats, args.max_error_rate)
