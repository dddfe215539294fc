from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from openjudge.jobs._fingerprint import GraderFingerprint, JobFingerprint
from openjudge.jobs._records import HeaderLine, OutcomeLine, ResultsHeader, ScoreEntry
from openjudge.jobs._results import (
    ResultsFileError,
    ResultsWriter,
    SampleOutcome,
    index_results,
    read_header,
    read_outcomes,
    read_results,
    result_to_json,
)
from openjudge.results import GraderError, GraderRank, GraderScore, ScoreRange, TokenUsage

OutcomeFactory = Callable[[int], SampleOutcome]


def _ids(path: Path) -> list[str]:
    return [str(record["id"]) for record in read_results(path)]


# ---------------------------------------------------------------- the line format


def test_result_to_json_score() -> None:
    result = GraderScore(
        name="quality",
        score=4.0,
        reason="good",
        metadata={"votes": [4, 4, 5]},
        score_range=ScoreRange(low=1, high=5),
        latency_s=1.25,
        queue_s=0.5,
        usage=TokenUsage(prompt_tokens=10, completion_tokens=2, requests=1),
    )
    assert result_to_json(result) == {
        "type": "score",
        "score": 4.0,
        "normalized_score": 0.75,
        "reason": "good",
        "metadata": {"votes": [4, 4, 5]},
        "score_range": {"low": 1.0, "high": 5.0, "higher_is_better": True},
        "latency_s": 1.25,
        "queue_s": 0.5,
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "requests": 1},
    }


def test_result_to_json_rank_and_error() -> None:
    assert result_to_json(GraderRank(name="r", rank=[2, 1], reason="b wins")) == {
        "type": "rank",
        "rank": [2, 1],
        "reason": "b wins",
        "metadata": {},
        "latency_s": None,
        "queue_s": None,
        "usage": None,
    }
    error = GraderError(
        name="q", kind="timeout", message="no answer in 30 s", error_type="TimeoutError", latency_s=30.0
    )
    assert result_to_json(error) == {
        "type": "error",
        "kind": "timeout",
        "message": "no answer in 30 s",
        "error_type": "TimeoutError",
        "latency_s": 30.0,
        "queue_s": None,
        "metadata": {},
        "usage": None,
    }


def test_unranged_score_normalizes_to_itself() -> None:
    assert result_to_json(GraderScore(name="x", score=7.5))["normalized_score"] == 7.5


def test_outcome_sums_usage_and_writes_nan_as_null() -> None:
    usage = TokenUsage(prompt_tokens=10, completion_tokens=1, requests=1)
    outcome = SampleOutcome(
        id="s1",
        line=3,
        results={
            "a": GraderScore(name="a", score=1.0, usage=usage),
            "b": GraderError(name="b", kind="parse_error", message="bad", usage=usage + usage),
            "c": GraderScore(name="c", score=0.0),
        },
        aggregates={"mean": math.nan, "min": 0.0},
    )
    data = outcome.to_json()
    assert data["usage"] == {"prompt_tokens": 30, "completion_tokens": 3, "requests": 3}
    assert data["aggregates"] == {"mean": None, "min": 0.0}
    assert (data["id"], data["line"]) == ("s1", 3)
    assert list(data) == ["id", "line", "results", "aggregates", "usage"]


# ---------------------------------------------------------------- writing and reading


def test_round_trip(tmp_path: Path, outcome_factory: OutcomeFactory) -> None:
    path = tmp_path / "out" / "results.jsonl"  # the folder is created
    outcomes = [outcome_factory(i) for i in range(20)]
    with ResultsWriter(path) as writer:
        assert writer.completed_ids() == set()
        for outcome in outcomes:
            writer.write(outcome)
        assert writer.completed_ids() == {o.id for o in outcomes}
    assert list(read_results(path)) == [o.to_json() for o in outcomes]
    assert list(read_outcomes(path)) == [o.to_line() for o in outcomes]
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    assert text.count("\n") == 20


def test_read_outcomes_validates_entries(tmp_path: Path, outcome_factory: OutcomeFactory) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(outcome_factory(0))
    (line,) = read_outcomes(path)
    entry = line.results["quality"]
    assert isinstance(entry, ScoreEntry)
    assert (entry.score, entry.normalized_score, entry.reason) == (1.0, 0.0, "reason 0")


def test_writing_a_completed_id_again_raises(tmp_path: Path, outcome_factory: OutcomeFactory) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(outcome_factory(1))
        with pytest.raises(ValueError, match="'s0001' is already in"):
            writer.write(outcome_factory(1))
    with ResultsWriter(path) as writer, pytest.raises(ValueError, match="already in"):
        writer.write(outcome_factory(1))
    assert _ids(path) == ["s0001"]


def test_writer_requires_open(tmp_path: Path, outcome_factory: OutcomeFactory) -> None:
    writer = ResultsWriter(tmp_path / "results.jsonl")
    with pytest.raises(RuntimeError, match="not open"):
        writer.write(outcome_factory(0))
    with pytest.raises(RuntimeError, match="not open"):
        writer.completed_ids()
    writer.close()  # closing a writer that was never opened is harmless


def test_writer_accepts_outcome_lines(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(OutcomeLine(id="x"))
    assert list(read_results(path)) == [
        {
            "id": "x",
            "line": None,
            "results": {},
            "aggregates": {},
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0},
        }
    ]


# ---------------------------------------------------------------- resuming


def _run(path: Path, outcomes: list[SampleOutcome], *, stop_after: int | None = None) -> int:
    """Grade like the CLI: skip completed ids, write the rest. Returns how many were written."""
    written = 0
    with ResultsWriter(path) as writer:
        done = writer.completed_ids()
        for outcome in outcomes:
            if outcome.id in done:
                continue
            if stop_after is not None and written == stop_after:
                break
            writer.write(outcome)
            written += 1
    return written


def test_resume_after_crash_with_torn_line(tmp_path: Path, outcome_factory: OutcomeFactory) -> None:
    path = tmp_path / "results.jsonl"
    outcomes = [outcome_factory(i) for i in range(80)]
    assert _run(path, outcomes, stop_after=50) == 50
    good_size = path.stat().st_size
    torn = (json.dumps(outcomes[50].to_json()) + "\n").encode()
    with path.open("ab") as f:  # the crash: half a line, no newline
        f.write(torn[: len(torn) // 2])
    assert path.stat().st_size > good_size

    with ResultsWriter(path) as writer:
        assert writer.completed_ids() == {o.id for o in outcomes[:50]}
        assert writer.truncated_bytes == len(torn) // 2
        assert path.stat().st_size == good_size  # the torn line is gone
        writer.write(outcomes[50])  # appending works
    assert _ids(path)[-1] == outcomes[50].id

    assert _run(path, outcomes) == 29  # the rerun does only what is missing
    ids = _ids(path)
    assert ids == [o.id for o in outcomes]  # no duplicates, no gaps, in order
    assert list(read_results(path)) == [o.to_json() for o in outcomes]


def test_torn_line_that_is_valid_json_is_still_cut(tmp_path: Path, outcome_factory: OutcomeFactory) -> None:
    path = tmp_path / "results.jsonl"
    _run(path, [outcome_factory(0)])
    with path.open("ab") as f:
        f.write(json.dumps(outcome_factory(1).to_json()).encode())  # complete but no newline
    with ResultsWriter(path) as writer:
        assert writer.completed_ids() == {"s0000"}
    assert _ids(path) == ["s0000"]


def test_garbage_tail_after_power_loss_is_cut(tmp_path: Path, outcome_factory: OutcomeFactory) -> None:
    path = tmp_path / "results.jsonl"
    _run(path, [outcome_factory(0), outcome_factory(1)])
    size = path.stat().st_size
    with path.open("ab") as f:
        f.write(b"\x00" * 300 + b"\n" + b"\x00" * 50)
    with ResultsWriter(path) as writer:
        assert writer.completed_ids() == {"s0000", "s0001"}
        assert writer.truncated_bytes == 351
    assert path.stat().st_size == size


def test_damage_before_good_lines_is_not_cut(tmp_path: Path, outcome_factory: OutcomeFactory) -> None:
    path = tmp_path / "results.jsonl"
    _run(path, [outcome_factory(0)])
    with path.open("ab") as f:
        f.write(b"{broken\n" + json.dumps(outcome_factory(1).to_json()).encode() + b"\n")
    before = path.read_bytes()
    with pytest.raises(ResultsFileError, match="line 2 is not a results record but later lines are"):
        ResultsWriter(path).open()
    assert path.read_bytes() == before
    with pytest.raises(ResultsFileError, match="line 2 is not a valid results record"):
        list(read_results(path))


def test_readers_skip_a_torn_last_line(tmp_path: Path, outcome_factory: OutcomeFactory) -> None:
    path = tmp_path / "results.jsonl"
    _run(path, [outcome_factory(0)])
    with path.open("ab") as f:
        f.write(b'\n{"id": "s0001", "resu')
    assert _ids(path) == ["s0000"]
    assert [line.id for line in read_outcomes(path)] == ["s0000"]


def test_a_second_writer_on_the_same_file_fails_fast(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path), pytest.raises(ResultsFileError, match="being written by another run"):
        ResultsWriter(path).open()
    with ResultsWriter(path) as writer:  # the lock is released on close
        assert writer.completed_ids() == set()


# ---------------------------------------------------------------- durability


def test_fsync_by_count_and_on_close(
    tmp_path: Path, outcome_factory: OutcomeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "results.jsonl"
    path.touch()  # an existing file: no directory sync
    calls: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    with ResultsWriter(path, fsync_every=10, fsync_interval_s=None) as writer:
        for i in range(25):
            writer.write(outcome_factory(i))
        assert len(calls) == 2
    assert len(calls) == 3


def test_fsync_by_time(
    tmp_path: Path, outcome_factory: OutcomeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "results.jsonl"
    path.touch()
    calls: list[int] = []
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(fd))
    with ResultsWriter(path, fsync_every=None, fsync_interval_s=0.0) as writer:
        for i in range(3):
            writer.write(outcome_factory(i))
        assert len(calls) == 3
    with pytest.raises(ValueError, match="fsync_every"):
        ResultsWriter(path, fsync_every=0)


def test_failed_write_leaves_no_partial_line(
    tmp_path: Path, outcome_factory: OutcomeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "results.jsonl"
    real_write = os.write

    def half_then_fail(fd: int, data: memoryview) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        monkeypatch.setattr(os, "write", real_write)
        raise OSError(28, "No space left on device")

    with ResultsWriter(path) as writer:
        writer.write(outcome_factory(0))
        monkeypatch.setattr(os, "write", half_then_fail)
        with pytest.raises(OSError, match="No space left"):
            writer.write(outcome_factory(1))
        assert writer.completed_ids() == {"s0000"}
        writer.write(outcome_factory(1))  # the retry succeeds and the file stays consistent
    assert _ids(path) == ["s0000", "s0001"]


# ---------------------------------------------------------------- the header


def _header(graders: tuple[str, ...] = ("q",)) -> ResultsHeader:
    fingerprint = JobFingerprint(
        graders={name: GraderFingerprint(type="reasoning_format", grader_class="x.Y") for name in graders}
    )
    return ResultsHeader(writer="openjudge-graders test", job=fingerprint)


def test_the_header_is_the_first_line_and_readers_skip_it(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        assert writer.header is None and len(writer) == 0
        writer.set_header(_header())
        writer.write(SampleOutcome(id="a", line=1, results={"q": GraderScore(name="q", score=1.0)}))
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert json.loads(first) == {"openjudge": json.loads(_header().model_dump_json())}
    assert read_header(path) == _header()
    assert [r["id"] for r in read_results(path)] == ["a"]
    assert [o.id for o in read_outcomes(path)] == ["a"]
    with ResultsWriter(path) as writer:
        assert writer.header == _header() and writer.completed_ids() == {"a"}
        offset, length = index_results(path)["a"]
        assert writer.read_line(offset, length).id == "a"
        with pytest.raises(ResultsFileError, match="already holds results"):
            writer.set_header(_header(("other",)))


def test_a_torn_header_is_cut_and_a_header_later_in_the_file_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(HeaderLine(openjudge=_header()).model_dump_json()[:30], encoding="utf-8")
    with ResultsWriter(path) as writer:
        assert writer.header is None and writer.truncated_bytes == 30
    header = HeaderLine(openjudge=_header()).model_dump_json()
    path.write_text(
        header + "\n" + json.dumps({"id": "a"}) + "\n" + header + "\n" + json.dumps({"id": "b"}) + "\n"
    )
    with pytest.raises(ResultsFileError, match="line 3 is not a results record"), ResultsWriter(path):
        pass


# ---------------------------------------------------------------- texts UTF-8 cannot hold


def test_lone_surrogates_in_texts_are_written_as_six_characters(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    score = GraderScore(
        name="quality",
        score=1.0,
        reason="quotes the response: x\ud800y",
        metadata={"key \udc00": ["\udfff", 1.5, float("inf")]},
    )
    error = GraderError(name="judge", kind="parse_error", message="bad reply \ud83d")
    with ResultsWriter(path) as writer:
        writer.write(SampleOutcome("s1", 1, {"quality": score, "judge": error}))
        writer.write(SampleOutcome("s2", 2, {"quality": GraderScore(name="quality", score=0.5)}))
        only_a_key = GraderScore(name="quality", score=0.0, metadata={"k\ud800": "\ufffd"})
        writer.write(SampleOutcome("s3", 3, {"quality": only_a_key}))  # pydantic would write U+FFFD
    raw = path.read_bytes()
    raw.decode("utf-8")  # strict: the file is UTF-8
    (first, second, third) = list(read_outcomes(path))  # pydantic's strict JSON reader reads it
    entry = first.results["quality"]
    assert isinstance(entry, ScoreEntry)
    assert entry.reason == "quotes the response: x\\ud800y"  # the six characters \ud800
    assert entry.metadata == {"key \\udc00": ["\\udfff", 1.5, None]}  # non-finite as null, as always
    assert first.results["judge"].message == "bad reply \\ud83d"  # type: ignore[union-attr]  # an ErrorEntry
    assert second.id == "s2"
    assert third.results["quality"].metadata == {"k\\ud800": "\ufffd"}  # a real U+FFFD stays


def test_an_id_with_a_lone_surrogate_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    with ResultsWriter(path) as writer:
        with pytest.raises(ValueError, match="holds a lone surrogate"):
            writer.write(SampleOutcome("a\udc00", 1, {"q": GraderScore(name="q", score=1.0)}))
        assert len(writer) == 0
    assert path.read_bytes() == b""
