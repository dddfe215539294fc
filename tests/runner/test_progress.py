"""The progress line: errors are items with a grader error; not-applicable results are counted apart."""

from __future__ import annotations

import io

from openjudge.runner._progress import ProgressBar


def test_not_applicable_results_are_not_errors() -> None:
    stream = io.StringIO()
    bar = ProgressBar(4, label="samples", stream=stream, log_every_s=1e9)
    bar.advance()
    bar.advance(not_applicable=2)  # a mixed dataset: two graders did not apply to this row
    bar.advance(error=True, not_applicable=1)
    line = bar.line(bar._start + 1.0)
    assert line.startswith("samples: 3/4 (75%) errors=1 n/a=3 3.0/s eta ")
    assert (bar.errors, bar.not_applicable) == (1, 3)


def test_the_line_names_no_n_a_until_there_is_one() -> None:
    bar = ProgressBar(None, label="grading", stream=io.StringIO(), log_every_s=1e9)
    bar.advance(error=True)
    assert bar.line(bar._start + 2.0) == "grading: 1 errors=1 0.5/s"
