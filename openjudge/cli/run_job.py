"""The main job: grade a dataset from a config, streaming results to a resumable file."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio

from openjudge.config.build import BuiltJob
from openjudge.config.schema import JobConfig
from openjudge.graders.schema import GraderError, GraderResult, GraderScore
from openjudge.jobs.datasets import BadRecord, DatasetError, SampleRecord, iter_samples
from openjudge.jobs.results import ResultsFileError, ResultsWriter, SampleOutcome
from openjudge.runner.progress import ProgressBar

__all__ = ["RunStats", "run_job"]


@dataclass(slots=True)
class RunStats:
    """What one invocation did."""

    graded: int = 0
    skipped_done: int = 0
    bad_records: int = 0
    with_errors: int = 0
    interrupted: bool = False


def _count_records(path: Path, fmt: str) -> int | None:
    """Non-blank lines of a JSONL file (cheap, streamed); ``None`` for other formats."""
    if fmt not in ("auto", "jsonl") or path.suffix.lower() not in (".jsonl", ".ndjson"):
        return None
    count = 0
    with path.open("rb") as f:
        for line in f:
            if line.strip():
                count += 1
    return count


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


def _aggregate_values(aggregates: Mapping[str, GraderResult]) -> dict[str, float | None]:
    return {name: r.score if isinstance(r, GraderScore) else None for name, r in aggregates.items()}


async def run_job(
    config: JobConfig,
    job: BuiltJob,
    *,
    data_path: Path,
    out_path: Path,
    progress_stream: TextIO | None,
) -> RunStats:
    """Grade every sample of ``data_path`` not already in ``out_path``.

    Bad records become invalid-input results for every grader; Ctrl-C (or SIGTERM)
    stops cleanly, leaving the results file consistent for a rerun to resume.
    """
    stats = RunStats()
    grader_names = list(job.runner.grader_configs)
    total = _count_records(data_path, config.data.format)
    with ResultsWriter(out_path) as writer:
        done = writer.completed_ids()
        if total is not None:
            total = max(0, total - len(done))
        progress = (
            ProgressBar(total, label="samples", stream=progress_stream)
            if progress_stream is not None
            else None
        )
        pending: dict[int, SampleRecord] = {}

        def samples() -> Iterator[dict[str, Any]]:
            index = 0
            for record in iter_samples(
                data_path,
                format=config.data.format,
                on_error=config.data.on_error,
                id_key=config.data.id_field,
            ):
                if isinstance(record, BadRecord):
                    bad_id = f"invalid-line-{record.line}"
                    if bad_id in done:
                        continue
                    error = GraderError(name="dataset", kind="invalid_input", message=record.message)
                    writer.write(SampleOutcome(bad_id, record.line, dict.fromkeys(grader_names, error)))
                    stats.bad_records += 1
                    if progress is not None:
                        progress.advance(error=True)
                    continue
                if record.id in done:
                    stats.skipped_done += 1
                    continue
                pending[index] = record
                index += 1
                yield record.data

        async def grade() -> None:
            async with job.runner.astream(samples()) as stream:
                async for item in stream:
                    record = pending.pop(item.index)
                    outcome = SampleOutcome(
                        record.id, record.line, item.results, _aggregate_values(item.aggregates)
                    )
                    writer.write(outcome)
                    stats.graded += 1
                    failed = any(isinstance(r, GraderError) for r in item.results.values())
                    stats.with_errors += failed
                    if progress is not None:
                        progress.advance(error=failed)

        try:
            async with _unwrap_data_errors(), anyio.create_task_group() as tg:

                async def stop_on_signal() -> None:
                    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                        async for _ in signals:
                            stats.interrupted = True
                            tg.cancel_scope.cancel()
                            return

                tg.start_soon(stop_on_signal)
                await grade()
                tg.cancel_scope.cancel()
        finally:
            if progress is not None:
                progress.close()
    return stats
