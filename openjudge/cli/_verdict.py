"""How ``openjudge run`` exits once grading is done: 0, or 3 when the grading failed.

The whole results file is judged, not only this run's calls: a rerun that re-used earlier
errors must not pass a gate the first run failed. Grading failed (exit 3) when

* a grader failed on every sample it graded (a custom grader that raises, a dead judge
  URL, a wrong key): its scores are no measurement, however well the other graders did;
  this includes a file whose every result is an error;
* more than ``--max-error-rate`` of all grader results are errors (partial failures).

Response failures are scores (the response's fault, at the bottom of the range), never
errors. Rows a grader does not apply to are not its results, so they count neither way.
"""

from __future__ import annotations

import sys
from pathlib import Path

from openjudge.cli._codes import EXIT_FAILED, EXIT_OK
from openjudge.jobs._summary import GraderSummary, RunSummary

__all__ = ["broken_graders", "exit_code"]


def broken_graders(summary: RunSummary) -> list[GraderSummary]:
    """Graders with results in the file, every one an error."""
    return [g for g in summary.graders if g.count and g.error_count == g.count]


def _first_error(g: GraderSummary) -> str:
    kind, message = next(iter(g.error_examples.items()), ("error", ""))
    return f"{kind}: {message}" if message else kind


def exit_code(summary: RunSummary, out: Path, max_error_rate: float | None) -> int:
    """Print why grading failed (stderr) or how many errors it left (stdout); the exit code."""
    results = sum(g.count for g in summary.graders)
    errors = sum(g.error_count for g in summary.graders)
    if not errors:
        return EXIT_OK
    rate = errors / results
    share = f"{errors:,} of {results:,} grader results in {out} are errors ({rate:.1%})"
    first = next(f"{g.name}: {_first_error(g)}" for g in summary.graders if g.error_count)
    if errors == results:
        print(f"error: every grader result failed: {share}; the first: {first}", file=sys.stderr)
        return EXIT_FAILED
    broken = broken_graders(summary)
    for g in broken:
        print(
            f"error: grader {g.name!r} failed on every sample it graded ({g.count:,} of {g.count:,}); "
            f"the first: {_first_error(g)}",
            file=sys.stderr,
        )
    if broken:
        print(f"error: {share}", file=sys.stderr)
        return EXIT_FAILED
    if max_error_rate is not None and rate > max_error_rate:
        print(
            f"error: {share}, above --max-error-rate {max_error_rate:g}; the first: {first}", file=sys.stderr
        )
        return EXIT_FAILED
    print(f"{share}; the first: {first}")
    return EXIT_OK
