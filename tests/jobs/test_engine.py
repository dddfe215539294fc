"""The job engine: one driver, back ends behind one interface, resuming bound to the job."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from openjudge.config._build import BuiltJob, build_job
from openjudge.config._loader import parse_config
from openjudge.config._spec import JobConfig
from openjudge.jobs._datasets import SampleRecord
from openjudge.jobs._engine import Deliver, GradingBackend, LocalBackend, RunStats, run_job
from openjudge.jobs._records import OutcomeLine
from openjudge.jobs._results import ResultsWriter, SampleOutcome, read_header, read_results
from openjudge.jobs._resume import JobMismatchError

pytestmark = pytest.mark.anyio

EXACT = "  exact: {type: string_match, mapper: {response: answer, reference: expected}}\n"
FORMAT = "  format: {type: reasoning_format, mapper: {response: answer}}\n"
AGGREGATE = "aggregators:\n  - {type: min, name: worst}\n"


def job(graders: str, extra: str = "") -> tuple[JobConfig, BuiltJob]:
    config = parse_config("graders:\n" + graders + extra)
    return config, build_job(config, use_cache=False)


def write_data(path: Path, ids: range, *, bad_after: int | None = None) -> Path:
    lines = []
    for i in ids:
        answer = f"<think>t</think><answer>{i}</answer>"
        lines.append(json.dumps({"id": f"s{i}", "answer": answer, "expected": answer}))
        if i == bad_after:
            lines.append("{broken")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rows(path: Path) -> dict[str, dict[str, Any]]:
    return {str(r["id"]): dict(r) for r in read_results(path)}


class LineBackend:
    """A back end that hands over results-file lines (as the Ray back end does), a batch at a time."""

    workers = 3

    def __init__(self, inner: LocalBackend) -> None:
        self.inner = inner

    async def grade(self, samples: Iterator[SampleRecord], deliver: Deliver, *, replay: bool) -> None:
        batch: list[OutcomeLine] = []

        def collect(outcome: SampleOutcome | OutcomeLine) -> None:
            batch.append(outcome.to_line() if isinstance(outcome, SampleOutcome) else outcome)

        await self.inner.grade(samples, collect, replay=replay)
        for line in reversed(batch):
            deliver(line)


async def test_two_back_ends_behind_one_interface_write_the_same_results(tmp_path: Path) -> None:
    config, built = job(EXACT + FORMAT, AGGREGATE)
    data = write_data(tmp_path / "data.jsonl", range(20), bad_after=4)
    backends: list[GradingBackend] = [LocalBackend(built.runner), LineBackend(LocalBackend(built.runner))]
    stats: list[RunStats] = []
    for name, backend in zip(("local", "lines"), backends, strict=True):
        stats.append(
            await run_job(config, built, data_path=data, out_path=tmp_path / f"{name}.jsonl", backend=backend)
        )
    local, lines = stats
    assert (local.graded, local.bad_records, local.pairs, local.failed_pairs, local.workers) == (
        20,
        1,
        40,
        0,
        1,
    )
    assert (lines.graded, lines.bad_records, lines.pairs, lines.workers) == (20, 1, 40, 3)
    assert rows(tmp_path / "local.jsonl") == rows(tmp_path / "lines.jsonl")
    assert rows(tmp_path / "local.jsonl")["invalid-line-6"]["results"]["exact"]["kind"] == "invalid_input"


async def test_counts_errors_of_this_run_and_keeps_the_first(tmp_path: Path) -> None:
    config, built = job(EXACT)
    data = tmp_path / "data.jsonl"
    data.write_text('{"answer": "a", "expected": "a"}\n{"answer": "b"}\n{"answer": "c"}\n', encoding="utf-8")
    stats = await run_job(config, built, data_path=data, out_path=tmp_path / "out.jsonl")
    assert (stats.pairs, stats.failed_pairs, stats.with_errors) == (3, 2, 2)
    assert stats.error_rate == pytest.approx(2 / 3)
    assert stats.first_error is not None and stats.first_error.startswith(
        "exact: invalid_input: grader 'exact': sample has no field 'expected'"
    )


async def test_a_grader_added_is_graded_on_the_samples_in_the_file(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data.jsonl", range(10), bad_after=2)
    out = tmp_path / "out.jsonl"
    config, built = job(EXACT)
    await run_job(config, built, data_path=data, out_path=out)
    before = rows(out)

    config, built = job(EXACT + FORMAT, AGGREGATE)
    stats = await run_job(config, built, data_path=data, out_path=out)
    assert stats.changes is not None and stats.changes.added == ("format",)
    assert (stats.graded, stats.regraded, stats.bad_records, stats.pairs) == (10, 10, 1, 10)  # format only
    after = rows(out)
    assert after.keys() == before.keys()
    for sample_id, row in after.items():
        results = row["results"]
        assert isinstance(results, dict) and set(results) == {"exact", "format"}
        assert results["exact"] == before[sample_id]["results"]["exact"]
        if not sample_id.startswith("invalid"):
            assert row["aggregates"] == {"worst": 1.0}  # recomputed over old and new results
    assert out.read_text(encoding="utf-8").count('{"openjudge":') == 1  # one header, the first line
    header = read_header(out)
    assert header is not None and set(header.job.graders) == {"exact", "format"}
    assert rows(tmp_path / "out.jsonl.bak") == before
    assert not (tmp_path / "out.jsonl.regrade").exists()

    again = await run_job(config, built, data_path=data, out_path=out)
    assert (again.graded, again.skipped_done, again.changes) == (0, 10, None)


async def test_a_changed_grader_is_refused_unless_regrade(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data.jsonl", range(6))
    out = tmp_path / "out.jsonl"
    config, built = job(EXACT + FORMAT)
    await run_job(config, built, data_path=data, out_path=out)
    before = out.read_bytes()

    changed = EXACT.replace("string_match,", "string_match, params: {case_sensitive: false},")
    config, built = job(changed + FORMAT)
    with pytest.raises(JobMismatchError) as caught:
        await run_job(config, built, data_path=data, out_path=out)
    assert "graders.exact: params.case_sensitive: (unset) -> false" in str(caught.value)
    assert out.read_bytes() == before  # untouched

    stats = await run_job(config, built, data_path=data, out_path=out, regrade=True)
    assert stats.changes is not None and set(stats.changes.changed) == {"exact"}
    assert (stats.graded, stats.pairs) == (6, 6)  # only exact was graded again


async def test_a_file_without_header_is_not_resumed_blindly(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data.jsonl", range(3))
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps({"id": "s0", "results": {}, "aggregates": {}}) + "\n", encoding="utf-8")
    config, built = job(EXACT)
    with pytest.raises(JobMismatchError, match="holds 1 results but no job header"):
        await run_job(config, built, data_path=data, out_path=out)
    stats = await run_job(config, built, data_path=data, out_path=out, regrade=True)
    assert (stats.graded, stats.regraded) == (3, 1)
    assert all(isinstance(r["results"], dict) and "exact" in r["results"] for r in rows(out).values())


async def test_an_interrupted_migration_goes_on_where_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_data(tmp_path / "data.jsonl", range(40))
    out = tmp_path / "out.jsonl"
    config, built = job(EXACT)
    await run_job(config, built, data_path=data, out_path=out)
    before = out.read_bytes()

    config, built = job(EXACT + FORMAT)
    write = ResultsWriter.write
    calls = [0]

    def write_then_interrupt(self: ResultsWriter, outcome: SampleOutcome | OutcomeLine) -> None:
        if calls[0] == 10:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C in the middle of the migration
        write(self, outcome)
        calls[0] += 1

    monkeypatch.setattr(ResultsWriter, "write", write_then_interrupt)
    first = await run_job(config, built, data_path=data, out_path=out)
    monkeypatch.setattr(ResultsWriter, "write", write)
    assert first.interrupted and 10 < first.graded < 40
    assert out.read_bytes() == before  # the old file stays as it was until the end
    staged = rows(tmp_path / "out.jsonl.regrade")
    assert len(staged) == first.graded

    second = await run_job(config, built, data_path=data, out_path=out)
    assert not second.interrupted
    assert (second.skipped_done, second.graded) == (first.graded, 40 - first.graded)
    final = rows(out)
    assert sorted(final) == sorted(f"s{i}" for i in range(40))
    assert all(set(r["results"]) == {"exact", "format"} for r in final.values())
    assert not (tmp_path / "out.jsonl.regrade").exists()


async def test_results_of_samples_no_longer_in_the_dataset_stay_in_the_backup(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    config, built = job(EXACT)
    await run_job(config, built, data_path=write_data(tmp_path / "all.jsonl", range(8)), out_path=out)
    config, built = job(EXACT + FORMAT)
    stats = await run_job(
        config, built, data_path=write_data(tmp_path / "some.jsonl", range(5)), out_path=out
    )
    assert (stats.graded, stats.left_out) == (5, 3)
    assert sorted(rows(out)) == [f"s{i}" for i in range(5)]
    assert sorted(rows(tmp_path / "out.jsonl.bak")) == [f"s{i}" for i in range(8)]


def test_a_sync_caller_runs_it_with_anyio(tmp_path: Path) -> None:
    config, built = job(EXACT)
    data = write_data(tmp_path / "data.jsonl", range(3))

    async def main() -> RunStats:
        return await run_job(
            config, built, data_path=data, out_path=tmp_path / "out.jsonl", handle_signals=False
        )

    assert anyio.run(main).graded == 3
