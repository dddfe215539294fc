"""The job engine: grade a dataset from a config into a resumable results file.

One driver for every back end. The driver streams the dataset
(:func:`~openjudge.jobs._datasets.iter_samples`: stable ids, bad records), binds the
results file to the job (:class:`~openjudge.jobs._resume.BoundResults`: resume, refuse or
migrate), records malformed records, skips finished samples, counts, draws the progress
line and turns Ctrl-C and SIGTERM into a clean stop. A :class:`GradingBackend` does only
the grading: it pulls samples from the driver and hands back each sample's outcome.

* :class:`LocalBackend` grades in this process with the config's :class:`GradingRunner`.
* :class:`openjudge.distributed.RayBackend` grades on Ray Data actors.

Both pull samples and deliver outcomes on the driver's event loop thread, so the results
file has a single writer, and a stop leaves it consistent for the next run to resume.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

import anyio

from openjudge.jobs._datasets import BadRecord, DatasetError, SampleRecord, iter_samples
from openjudge.jobs._fingerprint import JobChanges, job_fingerprint
from openjudge.jobs._records import ErrorEntry, NotApplicableEntry, OutcomeLine, ResultEntry
from openjudge.jobs._replay import replaying_runner
from openjudge.jobs._results import ResultsFileError, SampleOutcome
from openjudge.jobs._resume import BoundResults
from openjudge.results import GraderError, GraderScore, NotApplicable, RowResult
from openjudge.runner._progress import ProgressBar
from openjudge.runner.grading_runner import GradingRunner

if TYPE_CHECKING:
    from openjudge.config._build import BuiltJob
    from openjudge.config._spec import DataSpec, JobConfig

__all__ = ["Deliver", "GradingBackend", "LocalBackend", "RunStats", "aggregate_values", "run_job"]

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

Deliver = Callable[[SampleOutcome | OutcomeLine], None]
"""How a back end hands over one sample's outcome (on the driver's event loop thread)."""


class GradingBackend(Protocol):
    """Grades the samples a driver hands it; the driver owns everything else."""

    @property
    def workers(self) -> int:
        """Grading processes or actors used."""
        ...

    async def grade(self, samples: Iterator[SampleRecord], deliver: Deliver, *, replay: bool) -> None:
        """Grade every sample ``samples`` yields and ``deliver`` each outcome, in any order.

        ``samples`` must be iterated, and ``deliver`` called, on the event loop thread that
        called ``grade``. With ``replay``, a sample may carry stored results to re-use
        (:mod:`openjudge.jobs._replay`). Cancellation stops the grading; outcomes not
        delivered by then are graded again by the next run.
        """
        ...


def aggregate_values(aggregates: Mapping[str, RowResult]) -> dict[str, float | None]:
    """Aggregate name -> value (``None``: failed); one that does not apply to the sample is left out."""
    return {
        name: r.score if isinstance(r, GraderScore) else None
        for name, r in aggregates.items()
        if not isinstance(r, NotApplicable)
    }


class LocalBackend:
    """Grades in this process with a :class:`GradingRunner` (the config's runner)."""

    workers = 1

    def __init__(self, runner: GradingRunner) -> None:
        self.runner = runner

    async def grade(self, samples: Iterator[SampleRecord], deliver: Deliver, *, replay: bool) -> None:
        runner = replaying_runner(self.runner) if replay else self.runner
        pending: dict[int, SampleRecord] = {}

        def data() -> Iterator[dict[str, Any]]:
            for index, record in enumerate(samples):
                pending[index] = record
                yield record.data

        async with runner.astream(data()) as stream:
            async for item in stream:
                record = pending.pop(item.index)
                deliver(
                    SampleOutcome(record.id, record.line, item.results, aggregate_values(item.aggregates))
                )


@dataclass(slots=True)
class RunStats:
    """What one run did.

    Attributes:
        graded: Samples graded and written by this run.
        regraded: Of those, samples that were already in the file under a job that lacked
            or (with ``regrade``) changed some graders: only those graders were graded.
        retried: Of those, samples already in the file whose results had failed for system
            reasons: only the failed graders were graded again.
        skipped_done: Samples skipped because their results were already complete.
        bad_records: Malformed records written as invalid-input results.
        with_errors: Graded samples with at least one grader error.
        pairs: Grader results computed by this run (replayed and not-applicable ones excluded).
        failed_pairs: Of those, errors.
        first_error: ``"grader: kind: message"`` of the first error, if any.
        left_out: Results of the old file whose samples are no longer in the dataset
            (after a migration; they stay in the ``.bak`` file).
        changes: How the job differs from the one that wrote the file, if it did.
        interrupted: The run stopped on Ctrl-C or SIGTERM (rerun to resume).
        workers: Grading processes or actors.
        elapsed_s: Wall time of the run.
    """

    graded: int = 0
    regraded: int = 0
    retried: int = 0
    skipped_done: int = 0
    bad_records: int = 0
    with_errors: int = 0
    pairs: int = 0
    failed_pairs: int = 0
    first_error: str | None = None
    left_out: int = 0
    changes: JobChanges | None = None
    interrupted: bool = False
    workers: int = 1
    elapsed_s: float = 0.0

    @property
    def error_rate(self) -> float:
        """Errors among the grader results this run computed (0 if it computed none)."""
        return self.failed_pairs / self.pairs if self.pairs else 0.0


def count_records(path: Path, fmt: str) -> int | None:
    """Non-blank lines of a JSON Lines file (cheap, streamed); ``None`` for other formats."""
    if fmt not in ("auto", "jsonl") or path.suffix.lower() not in (".jsonl", ".ndjson", ".jsonlines"):
        return None
    count = 0
    content = False
    with path.open("rb") as f:
        while piece := f.readline(1 << 16):  # in bounded pieces: a line may be of any length
            content = content or not piece.isspace()
            if piece.endswith(b"\n"):
                count += content
                content = False
    return count + content


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


@contextlib.asynccontextmanager
async def _unwrap_data_errors() -> AsyncIterator[None]:
    """Re-raise a bad-dataset or bad-results-file error as itself, not inside task-group wrappers."""
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        if leaves and all(isinstance(e, DatasetError | ResultsFileError) for e in leaves):
            raise leaves[0] from None
        raise


@dataclass(frozen=True, slots=True)
class _Again:
    """A sample of the results file graded again: which graders, and why."""

    to_grade: frozenset[str]
    changed: bool
    retried: bool


class _Counter:
    """Counts outcomes as they are delivered."""

    def __init__(self, stats: RunStats, progress: ProgressBar | None) -> None:
        self.stats = stats
        self.progress = progress
        self.graded_for_real: dict[str, _Again] = {}
        """Samples from the results file being graded again, by id (counted once delivered)."""

    def outcome(self, outcome: SampleOutcome | OutcomeLine) -> None:
        stats = self.stats
        stats.graded += 1
        again = self.graded_for_real.pop(outcome.id, None)
        real = None if again is None else again.to_grade
        if again is not None:
            stats.regraded += again.changed
            stats.retried += again.retried
        failed = False
        results: Mapping[str, RowResult | ResultEntry] = outcome.results
        for name, result in results.items():
            if isinstance(result, NotApplicable | NotApplicableEntry):
                continue  # routed away: neither computed nor failed
            error = isinstance(result, GraderError | ErrorEntry)
            failed = failed or error
            if real is not None and name not in real:
                continue  # replayed from the file: not computed now
            stats.pairs += 1
            if error:
                stats.failed_pairs += 1
                if stats.first_error is None:
                    assert isinstance(result, GraderError | ErrorEntry)
                    stats.first_error = f"{name}: {result.kind}: {result.message}"
        stats.with_errors += failed
        if self.progress is not None:
            self.progress.advance(error=failed)

    def bad_record(self) -> None:
        self.stats.bad_records += 1
        if self.progress is not None:
            self.progress.advance(error=True)


async def run_job(
    config: JobConfig,
    job: BuiltJob,
    *,
    data_path: Path,
    out_path: Path,
    backend: GradingBackend | None = None,
    regrade: bool = False,
    retry_failed: bool = True,
    progress_stream: TextIO | None = None,
    handle_signals: bool = True,
) -> RunStats:
    """Grade every sample of ``data_path`` whose results are not complete in ``out_path``.

    Args:
        config: The job config.
        job: The job built from it (:func:`openjudge.config._build.build_job`).
        data_path: The dataset (JSON Lines, JSON array or CSV).
        out_path: The results file; resumed if it exists (see :mod:`openjudge.jobs._resume`).
        backend: Who grades; default :class:`LocalBackend` over ``job.runner``.
        regrade: Accept a results file written under changed graders: re-grade only them.
        retry_failed: Re-attempt the file's results that failed for system reasons (the
            judge unavailable, a timeout, a bug); the rest is kept.
        progress_stream: Draw a progress line here (e.g. ``sys.stderr``); ``None``: none.
        handle_signals: Stop cleanly on SIGINT and SIGTERM (main thread only).

    Returns:
        What the run did; ``interrupted`` is set on a signal, with the results file left
        consistent for a rerun to resume.

    Raises:
        JobMismatchError: The results file was written under another config (and
            ``regrade`` is off); the message says what changed.
        DatasetError: The dataset cannot be read (or has a bad record and
            ``data.on_error`` is ``fail``).
        ResultsFileError: The results file is damaged or in use by another run.
    """
    started = time.monotonic()
    grader = backend if backend is not None else LocalBackend(job.runner)
    stats = RunStats(workers=grader.workers)
    fingerprint = job_fingerprint(config, job)
    with BoundResults(out_path, fingerprint, regrade=regrade, retry_failed=retry_failed) as results:
        stats.changes = results.changes
        total = _samples_left(data_path, config.data.format, results)
        progress = (
            None if progress_stream is None else ProgressBar(total, label="samples", stream=progress_stream)
        )
        counter = _Counter(stats, progress)

        def deliver(outcome: SampleOutcome | OutcomeLine) -> None:
            results.write(outcome)
            counter.outcome(outcome)

        try:
            samples = _samples_to_grade(data_path, config.data, results, counter)
            await _grade_until_stopped(grader, samples, deliver, results.migrating, stats, handle_signals)
        finally:
            if progress is not None:
                progress.close()
        if not stats.interrupted:
            stats.left_out = results.complete()
    stats.elapsed_s = time.monotonic() - started
    return stats


def _samples_left(data_path: Path, fmt: str, results: BoundResults) -> int | None:
    """Samples this run will go through, for the progress line (``None``: not known cheaply)."""
    total = count_records(data_path, fmt)
    if total is None:
        return None
    if results.migrating and results.changes is None:  # a retry: complete samples are copied
        return max(0, total - results.previous_samples) + results.failed_samples
    return max(0, total - len(results))


def _samples_to_grade(
    data_path: Path, data: DataSpec, results: BoundResults, counter: _Counter
) -> Iterator[SampleRecord]:
    """The dataset's samples that still need grading; bad records and finished samples are
    written or skipped on the way (lazily, as the back end pulls)."""
    for record in iter_samples(
        data_path,
        format=data.format,
        on_error=data.on_error,
        id_key=data.id_field,
        max_record_bytes=data.max_record_bytes,
    ):
        if isinstance(record, BadRecord):
            if not results.is_done(record.id):
                results.write_bad(record)
                counter.bad_record()
            continue
        if results.is_done(record.id):
            counter.stats.skipped_done += 1
            continue
        pending = results.prepare(record)
        if pending.copy is not None:  # complete: carried over to the new file as it is
            results.write(pending.copy)
            counter.stats.skipped_done += 1
            continue
        if pending.to_grade is not None:
            counter.graded_for_real[record.id] = _Again(
                pending.to_grade, changed=results.changes is not None, retried=pending.retried
            )
        yield pending.record


async def _grade_until_stopped(
    grader: GradingBackend,
    samples: Iterator[SampleRecord],
    deliver: Deliver,
    replay: bool,
    stats: RunStats,
    handle_signals: bool,
) -> None:
    """Let the back end grade everything, or until SIGINT or SIGTERM (then ``stats.interrupted``).

    Signals are caught only on the main thread, and the handlers found are put back after.
    """
    signals = handle_signals and threading.current_thread() is threading.main_thread()
    previous = {sig: signal.getsignal(sig) for sig in _STOP_SIGNALS} if signals else {}
    try:
        async with _unwrap_data_errors(), anyio.create_task_group() as tg:
            if signals:

                async def stop_on_signal() -> None:
                    with anyio.open_signal_receiver(*_STOP_SIGNALS) as received:
                        async for _ in received:
                            stats.interrupted = True
                            tg.cancel_scope.cancel()
                            return

                tg.start_soon(stop_on_signal)
            await grader.grade(samples, deliver, replay=replay)
            tg.cancel_scope.cancel()
    finally:
        for sig, handler in previous.items():  # the event loop resets them to the defaults
            if handler is not None:
                signal.signal(sig, handler)
