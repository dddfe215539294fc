"""Is the final answer of a math solution equivalent to the reference answer?"""

from __future__ import annotations

import math
from typing import ClassVar, Literal, TypeAlias

import anyio
from pydantic import JsonValue

from openjudge.graders.base_grader import BaseGrader, InvalidInputError, grader_boundary
from openjudge.graders.inputs import require_str
from openjudge.graders.math.extract import extract_final_answer, extract_reference
from openjudge.graders.math.normalize import (
    normalize_answer,
    numbers_close,
    parse_number,
    split_elements,
    squash,
)
from openjudge.graders.math.symbolic import sympy_available
from openjudge.graders.workers import WorkerPool, WorkTimeout
from openjudge.results import GraderError, GraderScore, ScoreRange

__all__ = ["MathAnswerEquivalenceGrader", "Method"]

Method: TypeAlias = Literal[
    "string",
    "numeric",
    "elementwise",
    "symbolic",
    "string_no_sympy",
    "string_sympy_undecided",
    "string_sympy_disabled",
    "none",
]
_MAX_ELEMENTS = 50
_SNIPPET = 200
_COMPARE = "openjudge.graders.math.symbolic:compare"
_PRELOAD = ("openjudge.graders.math.symbolic", "sympy", "sympy.parsing.sympy_parser")


class MathAnswerEquivalenceGrader(BaseGrader):
    r"""1.0 if the response's final answer equals the reference answer, else 0.0.

    Extraction (response): the last ``\boxed{...}`` with balanced braces, else the last
    ``<answer>...</answer>`` block, else (with ``fallback_to_last_number``) the last
    number in the text. Reference: the text after ``####`` (GSM8K), else its last
    ``\boxed{}``, else the whole reference; a numeric reference (``int``/``float``) is
    accepted too.

    Comparison, first decisive step wins (``metadata["method"]`` names it):

    1. ``string``: equal after :func:`~openjudge.graders.math.normalize.normalize_answer`
       with whitespace removed (pure words compare case-insensitively).
    2. ``numeric``: both read as numbers (integers, decimals, ``a/b``, ``\frac``,
       ``\dfrac``, mixed numbers, percentages, thousands separators, scientific
       notation, a trailing unit word) and equal within
       ``max(abs_tol, rel_tol * magnitude)``. ``50\%`` matches both 50 and 0.5.
    3. ``elementwise``: tuples, intervals, sets and lists with the same brackets and
       length, compared element by element with these same steps (``(…)`` and ``[…]``
       in order; ``\{…\}`` and bare comma lists in any order).
    4. ``symbolic``: sympy decides (``\sqrt{2}/2`` = ``1/\sqrt{2}``, ``(x+1)^2`` =
       ``x^2+2x+1``) if sympy is importable; see :mod:`openjudge.graders.math.symbolic`.
       It runs in a worker process (:class:`~openjudge.graders.workers.WorkerPool`) that
       is killed when the sample's ``sympy_timeout_s`` budget, shared by all its symbolic
       comparisons, is spent; the result is then ``GraderError(kind="timeout")``, never
       a score. Without sympy the verdict is the string comparison's (0) and the method
       is ``string_no_sympy``; if sympy cannot parse an answer (or the translator refuses
       it, e.g. a tower of exponents) it is ``string_sympy_undecided``; with
       ``use_sympy=False`` it is ``string_sympy_disabled``.

    No answer in the response scores 0.0 with method ``none``. Steps 1-3 are linear in
    the length of the texts and run in the event loop.

    Inputs:
        response: The model's solution text.
        reference: The reference answer (or a reference solution with ``\boxed{}``).

    Score: 0.0 or 1.0 in [0, 1]; higher is better.

    Args:
        abs_tol: Absolute tolerance for numeric comparison (>= 0).
        rel_tol: Relative tolerance for numeric comparison (>= 0).
        use_sympy: Try sympy for answers that are not plain numbers.
        sympy_timeout_s: Time budget of the symbolic comparisons of one sample (> 0),
            enforced by killing the worker process.
        sympy_workers: Worker processes for symbolic comparisons (per event loop).
        fallback_to_last_number: Use the last number in the response when it has no
            box and no answer tag.
        name: Result name (default ``"math_answer_equivalence"``).
        description: One line on what is measured.
    """

    default_name: ClassVar[str] = "math_answer_equivalence"
    symbolic_function: ClassVar[str] = _COMPARE
    """The worker-side comparison, ``"module:function"`` taking (got, want, abs_tol, rel_tol)."""
    default_score_range: ClassVar[ScoreRange | None] = ScoreRange(low=0.0, high=1.0)

    def __init__(
        self,
        *,
        abs_tol: float = 1e-9,
        rel_tol: float = 1e-9,
        use_sympy: bool = True,
        sympy_timeout_s: float = 5.0,
        sympy_workers: int = 2,
        fallback_to_last_number: bool = True,
        name: str = "",
        description: str = "",
    ) -> None:
        for field, value in (("abs_tol", abs_tol), ("rel_tol", rel_tol)):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{field} must be a finite number >= 0, got {value!r}")
        if not (math.isfinite(sympy_timeout_s) and sympy_timeout_s > 0):
            raise ValueError(f"sympy_timeout_s must be a finite number > 0, got {sympy_timeout_s!r}")
        super().__init__(name=name, description=description)
        self.abs_tol = float(abs_tol)
        self.rel_tol = float(rel_tol)
        self.use_sympy = use_sympy
        self.sympy_timeout_s = float(sympy_timeout_s)
        self.fallback_to_last_number = fallback_to_last_number
        self.workers = WorkerPool(max_workers=sympy_workers, preload=_PRELOAD, memory_mb=2048)

    def _quick(self, got: str, want: str) -> tuple[bool, Method] | None:
        """String and numeric steps; None if neither decides."""
        if squash(got) == squash(want):
            return True, "string"
        got_num, want_num = parse_number(got), parse_number(want)
        if got_num is not None and want_num is not None:
            return numbers_close(got_num, want_num, abs_tol=self.abs_tol, rel_tol=self.rel_tol), "numeric"
        return None

    async def _symbolic(self, got: str, want: str, deadline: float) -> tuple[bool, Method]:
        if not self.use_sympy:
            return False, "string_sympy_disabled"
        if not sympy_available():
            return False, "string_no_sympy"
        remaining = deadline - anyio.current_time()
        if remaining <= 0:
            raise WorkTimeout("the symbolic comparisons used up their budget")
        verdict = await self.workers.call(
            self.symbolic_function, [got, want, self.abs_tol, self.rel_tol], timeout_s=remaining
        )
        if not isinstance(verdict, bool):
            return False, "string_sympy_undecided"
        return verdict, "symbolic"

    async def _elementwise(self, got: str, want: str, deadline: float) -> bool | None:
        got_parts, want_parts = split_elements(got), split_elements(want)
        if got_parts is None or want_parts is None:
            return None
        (g_open, g_items, g_close), (w_open, w_items, w_close) = got_parts, want_parts
        if (
            (g_open, g_close) != (w_open, w_close)
            or len(g_items) != len(w_items)
            or len(g_items) > _MAX_ELEMENTS
        ):
            return False
        if g_open in ("(", "["):
            for g, w in zip(g_items, w_items, strict=True):
                if not (await self._compare(g, w, deadline))[0]:
                    return False
            return True
        unused = list(w_items)
        for g in g_items:
            for i, w in enumerate(unused):
                if (await self._compare(g, w, deadline))[0]:
                    del unused[i]
                    break
            else:
                return False
        return True

    async def _compare(self, got: str, want: str, deadline: float) -> tuple[bool, Method]:
        quick = self._quick(got, want)
        if quick is not None:
            return quick
        elementwise = await self._elementwise(got, want, deadline)
        if elementwise is not None:
            return elementwise, "elementwise"
        return await self._symbolic(got, want, deadline)

    @grader_boundary
    async def aevaluate(self, *, response: str, reference: str | int | float) -> GraderScore | GraderError:
        """Compare the final answer in ``response`` with ``reference``."""
        response = require_str("response", response)
        if isinstance(reference, int | float) and not isinstance(reference, bool):
            if not math.isfinite(reference):
                raise InvalidInputError("input 'reference' must be a finite number")
            reference = str(reference)
        reference = require_str("reference", reference)
        want = normalize_answer(extract_reference(reference))
        if not want:
            raise InvalidInputError("input 'reference' has no answer in it")
        found = extract_final_answer(response, fallback_to_last_number=self.fallback_to_last_number)
        got = normalize_answer(found.text)
        metadata: dict[str, JsonValue] = {
            "extracted_from": found.source,
            "extracted_answer": got[:_SNIPPET],
            "reference_answer": want[:_SNIPPET],
        }
        if not got:
            metadata["method"] = "none"
            return GraderScore(
                name=self.name,
                score=0.0,
                reason="no final answer found in the response",
                metadata=metadata,
                score_range=self.score_range,
            )
        deadline = anyio.current_time() + self.sympy_timeout_s
        try:
            equal, method = await self._compare(got, want, deadline)
        except WorkTimeout:
            return GraderError(
                name=self.name,
                kind="timeout",
                message=f"symbolic comparison of {got[:80]!r} with {want[:80]!r} exceeded its "
                f"{self.sympy_timeout_s:g} s budget",
                error_type="WorkTimeout",
            )
        metadata["method"] = method
        return GraderScore(
            name=self.name,
            score=1.0 if equal else 0.0,
            reason=f"answer {got[:80]!r} {'equals' if equal else 'differs from'} reference {want[:80]!r} "
            f"({method})",
            metadata=metadata,
            score_range=self.score_range,
        )
