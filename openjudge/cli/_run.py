"""``openjudge run``: parse the arguments, run the job engine, print what it did."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio

from openjudge.cli._codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from openjudge.config._build import BuiltJob, build_job
from openjudge.config._loader import ConfigError, load_config
from openjudge.config._spec import JobConfig
from openjudge.jobs._engine import GradingBackend, LocalBackend, RunStats, run_job
from openjudge.jobs._preflight import check_data
from openjudge.jobs._report import SampleSource, write_report
from openjudge.jobs._results import read_results
from openjudge.jobs._summary import Price, RunSummary, SummaryBuilder, render_table
from openjudge.providers._negotiation import structured_output_choice
from openjudge.runner._grader_config import BoundGrader

__all__ = ["add_run_arguments", "cmd_run", "data_path", "default_out", "plural", "prices"]

_DEFAULT_WORKERS = 2


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument("config", type=Path, help="job config (YAML)")
    run.add_argument("--data", type=Path, help="dataset (JSONL, JSON array or CSV); overrides data.path")
    run.add_argument(
        "--out",
        type=Path,
        help="results file (JSONL; resumed if it exists); default: results.jsonl beside the config "
        "file, so the same config resumes the same file from any directory",
    )
    run.add_argument("--report", type=Path, help="also write a self-contained HTML report here")
    run.add_argument(
        "--regrade",
        action="store_true",
        help="the results file was written under a changed config: re-grade only the changed graders "
        "on its samples (and drop removed graders' results); the old file is kept as OUT.bak",
    )
    run.add_argument(
        "--keep-errors",
        action="store_true",
        help="do not re-attempt the results file's system failures (provider_error, timeout, internal, "
        "budget_exceeded); by default a rerun grades those again and keeps everything else",
    )
    run.add_argument(
        "--max-error-rate",
        type=float,
        metavar="R",
        help="exit with code 3 when more than this fraction (0-1) of the grader results in the "
        "results file are errors (default: only when every one is)",
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
    from openjudge.distributed._ray_backend import RayBackend

    return RayBackend(
        config,
        source=str(args.config),
        base_dir=args.config.parent,
        workers=args.workers or _DEFAULT_WORKERS,
        use_cache=not args.no_cache,
    )


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 sample"``, ``"2 samples"``, ``"1,000 samples"``."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def default_out(config_path: Path) -> Path:
    """Where results go without ``--out``: ``results.jsonl`` beside the config file.

    Beside the config, not in the current directory: a config names one job, so the same
    config run from any directory resumes the same file instead of starting over.
    """
    return config_path.parent / "results.jsonl"


def _report_counts(stats: RunStats, out: Path) -> None:
    """What this run did, in counts that add up to the samples it went through."""
    again = stats.regraded if stats.changes is not None else stats.retried
    new = stats.graded - again
    parts = [f"{plural(new, 'new sample')} graded" if again else f"{plural(stats.graded, 'sample')} graded"]
    if stats.skipped_done:
        parts.append(f"{plural(stats.skipped_done, 'sample')} already complete in {out}")
    if stats.bad_records:
        parts.append(plural(stats.bad_records, "malformed record"))
    print(", ".join(parts))
    if stats.retried:
        print(
            f"re-attempted {plural(stats.retried, 'sample')} whose results in {out} had failed for system "
            "reasons (judge unavailable, timeout, internal); their other results were kept"
        )
    changes = stats.changes
    if changes is not None:
        done = [f"graded {', '.join(changes.added)} (added)"] if changes.added else []
        if changes.changed:
            done.append(f"re-graded {', '.join(changes.changed)} (changed)")
        if changes.removed:
            done.append(f"dropped the results of {', '.join(changes.removed)} (removed)")
        if changes.aggregators:
            done.append("recomputed the aggregates")
        print(
            f"the config changed since {out} was written: {'; '.join(done)} "
            f"on {plural(stats.regraded, 'sample')}"
        )
    if stats.left_out:
        print(
            f"{plural(stats.left_out, 'result')} of samples no longer in the dataset "
            f"{'was' if stats.left_out == 1 else 'were'} left out (kept in {out}.bak)"
        )


def _report_structured_output(job: BuiltJob) -> None:
    """Say which structured-output mode a judge whose mode was not set was found to take, when its
    server refused a stronger one (a server that takes ``json_schema`` is the quiet case)."""
    for name, provider in job.providers.items():
        choice = structured_output_choice(provider)
        if choice is not None and choice.found and choice.refused:
            print(f"provider {name!r} ({choice.where}): {choice.describe()}")


@dataclass(frozen=True, slots=True)
class FileErrors:
    """Errors among the grader results of the whole results file."""

    results: int
    errors: int
    first: str | None

    @classmethod
    def of(cls, summary: RunSummary) -> FileErrors:
        first = next(
            (
                f"{g.name}: {kind}: {message}"
                for g in summary.graders
                for kind, message in g.error_examples.items()
            ),
            None,
        )
        return cls(sum(g.count for g in summary.graders), sum(g.error_count for g in summary.graders), first)


def _verdict(file: FileErrors, stats: RunStats, out: Path, max_error_rate: float | None) -> int:
    """Exit code 3 when every grader result in the file is an error, or more than ``max_error_rate``.

    The whole file is judged, not only this run's calls: a rerun that re-used earlier
    errors must not pass a gate the first run failed.
    """
    if not file.errors:
        return EXIT_OK
    rate = file.errors / file.results
    first = stats.first_error or file.first
    share = f"{file.errors:,} of {file.results:,} grader results in {out} are errors ({rate:.1%})"
    if file.errors == file.results:
        print(f"error: every grader result failed: {share}; the first: {first}", file=sys.stderr)
        return EXIT_FAILED
    if max_error_rate is not None and rate > max_error_rate:
        print(
            f"error: {share}, above --max-error-rate {max_error_rate:g}; the first: {first}", file=sys.stderr
        )
        return EXIT_FAILED
    print(f"{share}; the first: {first}")
    return EXIT_OK


DATA_CHECK_RECORDS = 100
"""Records ``run`` maps to every grader before it starts (as ``validate --data`` does)."""


def _check_data_first(config: JobConfig, job: BuiltJob, data: Path, *, source: str) -> None:
    """Refuse to start when a grader can read none of the first records: it would only
    write ``invalid_input`` errors, and fixing the mapper afterwards would need ``--regrade``.

    Raises:
        ConfigError: One ``file:line: field:`` line per such grader.
    """
    check = check_data(config, job, data, source=source, records=DATA_CHECK_RECORDS)
    for line in check.absent_fields:  # maybe a misspelt field; maybe a field later records have
        print(f"warning: {line}", file=sys.stderr)
    if check.unreadable:
        raise ConfigError(
            [
                *check.unreadable,
                "nothing was graded: fix the mapper (or the data), then rerun; "
                f"'openjudge validate {source} --data {data}' checks it without grading",
            ]
        )


def cmd_run(args: argparse.Namespace) -> int:
    if args.workers is not None and args.engine != "ray":
        return _usage_error("--workers applies to --engine ray only; add --engine ray, or drop --workers")
    if args.workers is not None and args.workers < 1:
        return _usage_error(f"--workers must be at least 1, got {args.workers}")
    if args.max_error_rate is not None and not 0 <= args.max_error_rate <= 1:
        return _usage_error(f"--max-error-rate must be between 0 and 1, got {args.max_error_rate:g}")
    if args.engine == "ray":
        from openjudge.distributed._ray_backend import import_ray

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
    out: Path = args.out if args.out is not None else default_out(args.config)
    local = args.engine == "local"
    job = build_job(
        config,
        source=str(args.config),
        base_dir=args.config.parent,
        use_cache=local and not args.no_cache,
        own_process=True,  # this command's process: the runner may tune its garbage collector
    )
    _check_data_first(config, job, data, source=str(args.config))
    stats = anyio.run(
        partial(
            run_job,
            config,
            job,
            data_path=data,
            out_path=out,
            backend=_backend(args, config, job),
            regrade=args.regrade,
            retry_failed=not args.keep_errors,
            progress_stream=None if args.no_progress else sys.stderr,
        )
    )
    priced = prices(config, job)
    builder = SummaryBuilder(prices=priced)
    for record in read_results(out):
        builder.add(record)
    summary = builder.build()
    print(render_table(summary))
    _report_counts(stats, out)
    if job.cache is not None:
        if job.cache.hits:  # a line about a cache that saved nothing is noise
            asked = job.cache.hits + job.cache.misses
            print(
                f"judge cache: {plural(job.cache.hits, 'judge call')} of {asked:,} answered "
                f"from {job.cache.path}"
            )
        job.cache.close()
    _report_structured_output(job)
    if args.report is not None:
        source = SampleSource(
            data,
            format=config.data.format,
            id_field=config.data.id_field,
            inputs={name: BoundGrader(name, cfg).inputs for name, cfg in job.runner.grader_configs.items()},
            max_record_bytes=config.data.max_record_bytes,
        )
        title = f"openjudge: {args.config.name}"
        write_report(out, args.report, title=title, prices=priced, samples=source)
    print(f"results: {out}" + ("" if args.report is None else f"; report: {args.report}"))
    if stats.interrupted:
        print(f"interrupted: rerun the same command to resume from {out}", file=sys.stderr)
        return EXIT_INTERRUPTED
    return _verdict(FileErrors.of(summary), stats, out, args.max_error_rate)
