"""Reading a dataset and reporting on results use bounded memory, not memory proportional to the file.

Both files are larger than the memory limit asserted, so loading either whole would fail.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from openjudge.jobs._datasets import SampleRecord, iter_samples
from openjudge.jobs._report import write_report

# Kept small because tracemalloc slows Python several times over; the files are still
# larger than the limit, so loading either whole would fail. bench/cli.py measures RSS
# on 100,000 samples.
_LINES = 25_000
_LIMIT = 6 * 1024 * 1024


@contextmanager
def _peak() -> Iterator[Callable[[], int]]:
    tracemalloc.start()
    try:
        yield lambda: tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_iter_samples_streams_a_large_jsonl_file(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    padding = "lorem ipsum " * 40
    with path.open("w", encoding="utf-8") as f:
        for i in range(_LINES):
            f.write(json.dumps({"question": f"q{i} {padding}", "answer": padding}) + "\n")
    assert path.stat().st_size > 1.5 * _LIMIT

    count = 0
    with _peak() as peak:
        for record in iter_samples(path):
            assert isinstance(record, SampleRecord)
            count += 1
        used = peak()
    assert count == _LINES
    assert used < _LIMIT, f"peak {used / 2**20:.1f} MiB"


@pytest.mark.slow
def test_write_report_streams_a_large_results_file(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    reason = "The response is mostly right but misses a step. " * 12
    with path.open("w", encoding="utf-8") as f:
        for i in range(_LINES):
            score = 1 + i % 5
            quality = (
                {"type": "error", "kind": "timeout", "message": "timed out", "latency_s": 30.0}
                if i % 50 == 0
                else {
                    "type": "score",
                    "score": score,
                    "normalized_score": (score - 1) / 4,
                    "reason": reason,
                    "score_range": {"low": 1, "high": 5},
                    "latency_s": 0.5 + (i % 100) / 100,
                    "usage": {"prompt_tokens": 500, "completion_tokens": 40, "requests": 1},
                }
            )
            exact = {"type": "score", "score": i % 2, "normalized_score": i % 2, "reason": reason}
            line = {"id": f"s{i}", "line": i + 1, "results": {"quality": quality, "exact": exact}}
            f.write(json.dumps(line) + "\n")
    assert path.stat().st_size > 1.5 * _LIMIT

    report = tmp_path / "report.html"
    with _peak() as peak:
        write_report(path, report, title="big")
        used = peak()
    assert used < _LIMIT, f"peak {used / 2**20:.1f} MiB"
    html = report.read_text(encoding="utf-8")
    assert html.count('class="card chart histogram"') == 2
    assert html.count('class="lowest-row"') == 20
