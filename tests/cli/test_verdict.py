"""``openjudge run``'s exit code from a results file's summary, with routing: rows a grader
does not apply to are not its results, so they make it neither failed nor fine."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import JsonValue

from openjudge.cli._codes import EXIT_FAILED, EXIT_OK
from openjudge.cli._verdict import broken_graders, exit_code
from openjudge.jobs._summary import RunSummary, SummaryBuilder

SCORE: dict[str, JsonValue] = {"type": "score", "score": 1.0, "normalized_score": 1.0}
DOWN: dict[str, JsonValue] = {"type": "error", "kind": "provider_error", "message": "connection refused"}
ELSEWHERE: dict[str, JsonValue] = {"type": "not_applicable", "reason": "task is 'facts', not 'math'"}


def summary(*rows: dict[str, dict[str, JsonValue]]) -> RunSummary:
    builder = SummaryBuilder()
    for i, results in enumerate(rows):
        builder.add({"id": str(i), "results": dict(results)})
    return builder.build()


def test_a_grader_that_applied_to_no_row_has_not_failed(capsys: pytest.CaptureFixture[str]) -> None:
    done = summary(*({"math": ELSEWHERE, "facts": SCORE} for _ in range(3)))
    assert [(g.name, g.count, g.not_applicable) for g in done.graders] == [("math", 0, 3), ("facts", 3, 0)]
    assert broken_graders(done) == []
    assert exit_code(done, Path("out.jsonl"), None) == EXIT_OK
    assert capsys.readouterr().err == ""


def test_a_grader_that_failed_on_every_row_it_applies_to_fails_the_job(
    capsys: pytest.CaptureFixture[str],
) -> None:
    done = summary(
        {"math": DOWN, "facts": ELSEWHERE},
        {"math": DOWN, "facts": ELSEWHERE},
        {"math": ELSEWHERE, "facts": SCORE},
        {"math": ELSEWHERE, "facts": SCORE},
    )
    assert [g.name for g in broken_graders(done)] == ["math"]
    assert exit_code(done, Path("out.jsonl"), None) == EXIT_FAILED
    err = capsys.readouterr().err
    assert (
        "error: grader 'math' failed on every sample it graded (2 of 2); "
        "the first: provider_error: connection refused\n"
    ) in err
    # 2 errors among the 4 results that apply (the 4 not-applicable ones count neither way)
    assert "error: 2 of 4 grader results in out.jsonl are errors (50.0%)\n" in err


def test_partial_failures_among_the_rows_that_apply_pass_without_a_gate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    done = summary(
        {"math": DOWN, "facts": ELSEWHERE},
        {"math": SCORE, "facts": ELSEWHERE},
        {"math": ELSEWHERE, "facts": SCORE},
    )
    assert exit_code(done, Path("out.jsonl"), None) == EXIT_OK
    assert capsys.readouterr().out == (
        "1 of 3 grader results in out.jsonl are errors (33.3%); the first: math: provider_error: connection refused\n"
    )
    assert exit_code(done, Path("out.jsonl"), 0.25) == EXIT_FAILED
