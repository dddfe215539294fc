"""A rerun re-attempts the results that failed for system reasons, and keeps the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from openjudge.jobs._datasets import SampleRecord
from openjudge.jobs._fingerprint import GraderFingerprint, JobFingerprint
from openjudge.jobs._records import ErrorEntry, ResultsHeader
from openjudge.jobs._replay import STORED_KEY
from openjudge.jobs._results import SYSTEM_ERROR_KINDS, ResultsWriter, SampleOutcome
from openjudge.jobs._resume import BoundResults, writer_name
from openjudge.results import GraderError, GraderResult, GraderScore

JOB = JobFingerprint(
    graders={
        "judge": GraderFingerprint(type="llm", grader_class="x.Judge"),
        "rule": GraderFingerprint(type="string_match", grader_class="x.Rule"),
    }
)


def _file(path: Path, outcomes: dict[str, dict[str, GraderResult]]) -> None:
    with ResultsWriter(path) as writer:
        writer.set_header(ResultsHeader(writer=writer_name(), job=JOB))
        for line, (sample_id, results) in enumerate(outcomes.items(), start=1):
            writer.write(SampleOutcome(sample_id, line, results))


def _score(name: str) -> GraderScore:
    return GraderScore(name=name, score=1.0)


def _error(name: str, kind: str) -> GraderError:
    return GraderError(name=name, kind=kind, message=f"{kind} happened")


def test_only_system_failures_are_graded_again(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    _file(
        path,
        {
            "ok": {"judge": _score("judge"), "rule": _score("rule")},
            "down": {"judge": _error("judge", "provider_error"), "rule": _score("rule")},
            "slow": {"judge": _error("judge", "timeout"), "rule": _error("rule", "internal")},
            "garbled": {"judge": _error("judge", "parse_error"), "rule": _score("rule")},
        },
    )
    with BoundResults(path, JOB) as bound:
        assert bound.migrating and bound.changes is None and bound.failed_samples == 2
        ok = bound.prepare(SampleRecord(1, {"answer": "a"}, "ok"))
        assert ok.copy is not None and ok.copy.id == "ok" and not ok.retried
        garbled = bound.prepare(SampleRecord(4, {"answer": "d"}, "garbled"))
        assert garbled.copy is not None  # a parse error would come out the same: kept
        assert isinstance(garbled.copy.results["judge"], ErrorEntry)
        down = bound.prepare(SampleRecord(2, {"answer": "b"}, "down"))
        assert (down.copy, down.to_grade, down.retried) == (None, frozenset({"judge"}), True)
        stored = down.record.data[STORED_KEY]
        assert isinstance(stored, dict) and set(stored) == {"rule"}  # replayed, not recomputed
        slow = bound.prepare(SampleRecord(3, {"answer": "c"}, "slow"))
        assert slow.to_grade == frozenset({"judge", "rule"})


def test_keep_errors_resumes_the_file_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    _file(path, {"down": {"judge": _error("judge", "provider_error"), "rule": _score("rule")}})
    with BoundResults(path, JOB, retry_failed=False) as bound:
        assert not bound.migrating and bound.is_done("down")


@pytest.mark.parametrize("kind", sorted(SYSTEM_ERROR_KINDS))
def test_every_system_kind_is_noticed_when_the_file_opens(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "results.jsonl"
    _file(
        path, {"a": {"judge": _error("judge", kind), "rule": _score("rule")}, "b": {"judge": _score("judge")}}
    )
    with ResultsWriter(path) as writer:
        assert writer.failed_ids == frozenset({"a"})
