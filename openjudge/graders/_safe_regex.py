"""Regular expressions from configs and datasets, matched against model output in bounded time.

Python's ``re`` backtracks: ``^(a+)+$`` against 34 ``a`` and a ``!`` runs for hours,
inside one C call that holds the GIL, so no timeout or Ctrl-C gets through.
:class:`SafeRegex` compiles a pattern with RE2 (google-re2), whose matching is linear
in the text, whenever RE2 accepts it. RE2 has no look-around or back-references; a
pattern that needs them is compiled with ``re`` (so a broken pattern is still reported
at once) and matched only in a :class:`~openjudge.graders._workers.WorkerPool` process
that is killed when its time is up.

RE2 differs from ``re`` in a few corners, all in the direction of JSON Schema's
ECMA-262 dialect: ``$`` matches only at the very end (not before a final newline), and
``\\d``, ``\\w``, ``\\s``, ``\\b`` are ASCII-only. Lone surrogates in the text are matched
as U+FFFD.
"""

from __future__ import annotations

import re
from typing import Any, Literal, TypeAlias

from pydantic import JsonValue

from openjudge.graders._workers import WorkerPool

__all__ = ["MatchMode", "SafeRegex", "backtracking_match"]

MatchMode: TypeAlias = Literal["search", "match", "fullmatch"]
_BACKTRACKING = "openjudge.graders._safe_regex:backtracking_match"


def _re2() -> Any | None:
    try:
        # google-re2 ships no type hints; without it, every pattern goes to a worker.
        import re2  # type: ignore[import-untyped]
    except ImportError:
        return None
    return re2


def _utf8_safe(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def backtracking_match(pattern: str, ignore_case: bool, text: str, mode: str) -> bool:
    """``re`` matching, for worker processes only (it has no time limit of its own)."""
    compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    matcher = {"search": compiled.search, "match": compiled.match, "fullmatch": compiled.fullmatch}[mode]
    return matcher(text) is not None


class SafeRegex:
    """A pattern matched in linear time (RE2), or in a killable worker when RE2 cannot run it.

    Args:
        pattern: The regular expression (Python syntax).
        ignore_case: Match case-insensitively.

    Raises:
        re.error: The pattern is invalid.
    """

    def __init__(self, pattern: str, *, ignore_case: bool = False) -> None:
        self.pattern = pattern
        self.ignore_case = ignore_case
        self._linear: Any | None = None
        re2 = _re2()
        if re2 is not None:
            options = re2.Options()
            options.log_errors = False
            options.case_sensitive = not ignore_case
            try:
                self._linear = re2.compile(pattern, options)
            except re2.error:
                self._linear = None
        if self._linear is None:
            re.compile(pattern, re.IGNORECASE if ignore_case else 0)  # report a broken pattern now

    @property
    def linear(self) -> bool:
        """Whether RE2 runs this pattern (in the calling thread, in linear time)."""
        return self._linear is not None

    def matches(self, text: str, mode: MatchMode = "search") -> bool:
        """Match with RE2. Only for :attr:`linear` patterns.

        Raises:
            ValueError: The pattern needs backtracking; use :meth:`amatches`.
        """
        if self._linear is None:
            raise ValueError(f"pattern {self.pattern!r} needs backtracking; match it with amatches()")
        text = _utf8_safe(text)
        if mode == "search":
            return self._linear.search(text) is not None
        if mode == "match":
            return self._linear.match(text) is not None
        return self._linear.fullmatch(text) is not None

    async def amatches(
        self, text: str, mode: MatchMode = "search", *, workers: WorkerPool, timeout_s: float
    ) -> bool:
        """Match: RE2 in place when :attr:`linear`, else ``re`` in ``workers`` within ``timeout_s``.

        Raises:
            WorkTimeout: The backtracking match overran ``timeout_s`` (its worker was killed).
        """
        if self._linear is not None:
            return self.matches(text, mode)
        args: list[JsonValue] = [self.pattern, self.ignore_case, text, mode]
        return bool(await workers.call(_BACKTRACKING, args, timeout_s=timeout_s))
