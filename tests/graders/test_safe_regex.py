"""SafeRegex: RE2 in linear time where it can, a killable worker where it cannot."""

from __future__ import annotations

import re
import time

import pytest

from openjudge.graders._safe_regex import SafeRegex, backtracking_match
from openjudge.graders._workers import WorkerPool, WorkTimeout

pytestmark = pytest.mark.anyio

CATASTROPHIC = [r"^(a+)+$", r"(a|aa)+b", r"^(\w+\s?)*$", r"(x+x+)+y", r"^(a|a?)+$"]


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_patterns_run_in_linear_time(pattern: str) -> None:
    regex = SafeRegex(pattern)
    assert regex.linear
    start = time.process_time()
    for size in (34, 10_000, 1_000_000):
        regex.matches("a" * size + "!")
    assert time.process_time() - start < 5.0  # backtracking ``re`` needs hours for the first alone


@pytest.mark.parametrize(
    ("pattern", "text", "mode", "expected"),
    [
        ("b+", "abbbc", "search", True),
        ("b+", "abbbc", "match", False),
        ("a.c", "abc", "fullmatch", True),
        ("(?i)ABC", "xabcx", "search", True),
        ("é+", "ééé", "fullmatch", True),
        ("x", "a\ud800x", "search", True),  # a lone surrogate is matched as U+FFFD, not a crash
        ("^a$", "a\n", "search", False),  # RE2: $ only at the very end (as in ECMA-262)
    ],
)
def test_matching(pattern: str, text: str, mode: str, expected: bool) -> None:
    assert SafeRegex(pattern).matches(text, mode) is expected  # type: ignore[arg-type]  # the literal modes


def test_case_and_invalid_patterns() -> None:
    assert SafeRegex("abc", ignore_case=True).matches("ABC")
    with pytest.raises(re.error):
        SafeRegex("(unclosed")
    with pytest.raises(re.error):
        SafeRegex(r"(?<=a)(")


def test_backtracking_patterns_are_kept_off_the_caller() -> None:
    regex = SafeRegex(r"(?<=a)b")
    assert not regex.linear
    with pytest.raises(ValueError, match="needs backtracking"):
        regex.matches("ab")
    assert backtracking_match(r"(?<=a)b", False, "ab", "search")


async def test_backtracking_patterns_run_in_a_killable_worker() -> None:
    workers = WorkerPool(max_workers=1, preload=("openjudge.graders._safe_regex",))
    regex = SafeRegex(r"(\w)\1")
    assert await regex.amatches("abba", workers=workers, timeout_s=30)
    hostile = SafeRegex(r"^(a+)+\1$")
    await workers.call(
        "openjudge.graders._safe_regex:backtracking_match", ["a", False, "a", "search"], timeout_s=60
    )
    start = time.monotonic()
    with pytest.raises(WorkTimeout):
        await hostile.amatches("a" * 40 + "!", workers=workers, timeout_s=1.0)
    assert time.monotonic() - start < 1.0 + 2.0
    workers.close()
