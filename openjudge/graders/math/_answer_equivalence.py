"""Is the final answer of a math solution equivalent to the reference answer?"""

from __future__ import annotations

import math
import re
from typing import ClassVar, Literal, TypeAlias

from pydantic import JsonValue

from openjudge.graders._inputs import require_str
from openjudge.graders._workers import WorkerPool, WorkTimeout
from openjudge.graders.base_grader import BaseGrader, InvalidInputError, grader_boundary
from openjudge.graders.blame import check_response_text
from openjudge.graders.math._extract import boxed_count, extract_reference
from openjudge.graders.math._normalize import (
    canonical_number,
    normalize_answer,
    numbers_close,
    parse_number,
    split_elements,
    squash,
)
from openjudge.graders.math._reading import Candidate, read_response
from openjudge.graders.math._symbolic import sympy_available
from openjudge.graders.math._towers import exponent_tower
from openjudge.graders.math._verify import math_verify_available
from openjudge.results import GraderError, GraderScore, ResponseFailure, ScoreRange

__all__ = ["Extraction", "MathAnswerEquivalenceGrader", "Method"]

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
Extraction: TypeAlias = Literal["last", "strict"]
_MAX_ELEMENTS = 50
_SNIPPET = 200
_COMPARE = "openjudge.graders.math._verify:compare_answers"
_FALLBACK = "openjudge.graders.math._symbolic:compare_candidates"
_PRELOAD = (
    "openjudge.graders.math._verify",
    "openjudge.graders.math._symbolic",
    "sympy",
    "sympy.parsing.sympy_parser",
    "math_verify",
    "openjudge.graders.math._warm",
)
# A decimal point or an exponent makes a literal inexact; integers and fractions compare exactly.
_DECIMAL = re.compile(r"[0-9]\.|\.[0-9]|[0-9][eE][-+]?[0-9]")
_TOWER_CHECK_LIMIT = 10_000
"""Longest answer checked for exponent towers in the event loop (the check is O(n log n) but
not free); a longer one is left to the worker's budget, which a tower then spends."""


def _exact(text: str) -> bool:
    return _DECIMAL.search(text) is None


class MathAnswerEquivalenceGrader(BaseGrader):
    r"""1.0 if the response's final answer equals the reference answer, else 0.0.

    One answer per response: the extraction policy (:mod:`._reading`) reads the response's
    candidates for its final answer without looking at the reference; candidates that
    disagree score the bottom (``cause="conflicting_answers"``), and only the answer they
    agree on is compared with the reference. Where the answer is looked for
    (``extraction``), after the last ``</think>`` (a response that opens ``<think>`` without
    closing it has no answer):

    * ``"last"`` (default): the boxes (several different ones are one list answer) and the
      ``<answer>...</answer>`` blocks; a "final answer" statement after them supersedes
      them; without them, the text, read by math-verify in the worker (without math-verify,
      its last number);
    * ``"strict"``: only boxes and answer blocks, on every path; a response with neither
      scores 0 (method ``none``), as RL recipes that reward the format require.

    A reference is read as the text after ``####`` (GSM8K), else its last ``\boxed{}``,
    else all of it; an ``int``/``float`` reference is accepted too. Answers arrive either as
    full responses or already extracted (a dataset column, another grader's output): an
    extracted answer is parsed as one expression, LaTeX or plain syntax (``sqrt(3) - 1``,
    ``2**(1/4)``: :mod:`._plain`).

    Comparison, first decisive step wins (``metadata["method"]`` names it):

    1. ``string``: equal after :func:`~openjudge.graders.math._normalize.normalize_answer`
       with whitespace removed (pure words compare case-insensitively).
    2. ``numeric``: both read as numbers (integers, decimals, ``a/b``, ``\frac``, mixed
       numbers, percentages, thousands separators, scientific notation, a trailing unit
       word). Two exact literals (integers, fractions) must be equal exactly; only when a
       decimal point or exponent is involved do ``abs_tol``/``rel_tol`` apply, so
       ``1099511627000`` is not ``2^{40}``. ``50\%`` matches both 50 and 0.5.
    3. ``elementwise``: tuples, intervals, sets and lists whose elements all match by steps
       1-2 (an accept only; anything else goes on to step 4).
    4. ``symbolic``: math-verify (latex2sympy2_extended and sympy) parses both sides and
       compares them, with our rules on top: an infinite value equals only the same
       infinity, and exact numbers must agree to 45 digits (:mod:`._verify`). Without
       math-verify, a small LaTeX-to-sympy translator (:mod:`openjudge.graders.math._symbolic`) decides what it
       can. This step runs in a worker process (:class:`~openjudge.graders._workers.WorkerPool`),
       one call per sample, killed when that call's ``sympy_timeout_s`` of its own compute
       is spent (waiting for a worker is not counted, by the budget or by a runner's
       per-pair timeout).

    Steps 1-3 are linear in the length of the texts and run in the event loop, so numbers
    and fractions never wait for a worker.

    Blame (:class:`~openjudge.results.ResponseFailure`): what the response caused scores the
    bottom (or ``response_failure_score``) with ``metadata["blame"] == "response"`` and a
    ``cause``: ``exponent_tower`` (a numeric power of a power, refused before any parser
    sees it: :mod:`._towers`), ``conflicting_answers`` (its candidates disagree),
    ``unparseable`` (math-verify reads no answer in it),
    ``overflow`` (comparing it ran out of memory or recursion depth),
    ``timeout`` (the comparison overran the budget; the reference is checked for
    towers first, so the response's expression is what was slow). A bad reference (empty,
    a tower) is a ``GraderError(kind="invalid_input")``. A reference that is text math
    cannot read (``odd``, ``Monday``) is compared as a string only.

    Inputs:
        response: The model's solution text, or an already-extracted answer.
        reference: The reference answer (or a reference solution with ``\boxed{}``).

    Score: 0.0 or 1.0 in [0, 1]; higher is better.

    Args:
        abs_tol: Absolute tolerance for numbers with a decimal point (>= 0).
        rel_tol: Relative tolerance for numbers with a decimal point (>= 0).
        use_sympy: Run step 4 for answers that steps 1-3 do not decide.
        sympy_timeout_s: Time budget of step 4 for one sample (> 0): its own compute, from
            the moment a worker starts it, enforced by killing the worker process.
        sympy_workers: Worker processes for step 4 (per event loop); more samples wait
            their turn, first come first served.
        extraction: ``"last"`` or ``"strict"``, see above.
        name: Result name (default ``"math_answer_equivalence"``).
        description: One line on what is measured.
    """

    default_name: ClassVar[str] = "math_answer_equivalence"
    symbolic_function: ClassVar[str] = _COMPARE
    """The worker-side comparison, ``"module:function"`` taking (reference, candidates) and returning
    ``{"equal": bool | None, "cause": str}`` (see :func:`._verify.compare_answers`)."""
    fallback_function: ClassVar[str] = _FALLBACK
    """Used instead when math-verify is not installed: (reference, candidates, abs_tol, rel_tol)
    with the same reply (see :func:`._symbolic.compare_candidates`)."""
    default_score_range: ClassVar[ScoreRange | None] = ScoreRange(low=0.0, high=1.0)

    def __init__(
        self,
        *,
        abs_tol: float = 1e-9,
        rel_tol: float = 1e-9,
        use_sympy: bool = True,
        sympy_timeout_s: float = 5.0,
        sympy_workers: int = 2,
        extraction: Extraction = "last",
        name: str = "",
        description: str = "",
    ) -> None:
        for field, value in (("abs_tol", abs_tol), ("rel_tol", rel_tol)):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{field} must be a finite number >= 0, got {value!r}")
        if not (math.isfinite(sympy_timeout_s) and sympy_timeout_s > 0):
            raise ValueError(f"sympy_timeout_s must be a finite number > 0, got {sympy_timeout_s!r}")
        if extraction not in ("last", "strict"):
            raise ValueError(f"extraction must be 'last' or 'strict', got {extraction!r}")
        super().__init__(name=name, description=description)
        self.abs_tol = float(abs_tol)
        self.rel_tol = float(rel_tol)
        self.use_sympy = use_sympy
        self.sympy_timeout_s = float(sympy_timeout_s)
        self.extraction: Extraction = extraction
        self.workers = WorkerPool(max_workers=sympy_workers, preload=_PRELOAD, memory_mb=2048)

    def _quick(self, got: str, want: str) -> tuple[bool, Method] | None:
        """String and numeric steps; None if neither decides."""
        if squash(got) == squash(want):
            return True, "string"
        got_num, want_num = parse_number(got), parse_number(want)
        if got_num is not None and want_num is not None:
            if _exact(got) and _exact(want):
                return numbers_close(got_num, want_num, abs_tol=0.0, rel_tol=0.0), "numeric"
            return numbers_close(got_num, want_num, abs_tol=self.abs_tol, rel_tol=self.rel_tol), "numeric"
        return None

    def _elementwise(self, got: str, want: str) -> bool:
        """Whether every element matches by the quick steps (tuples in order, sets in any order).

        A text that reads as one number (``1,000``) is that number, never the pair ``(1, 0)``.
        """
        if parse_number(got) is not None or parse_number(want) is not None:
            return False
        got_parts, want_parts = split_elements(got), split_elements(want)
        if got_parts is None or want_parts is None:
            return False
        (g_open, g_items, g_close), (w_open, w_items, w_close) = got_parts, want_parts
        if (
            (g_open, g_close) != (w_open, w_close)
            or len(g_items) != len(w_items)
            or len(g_items) > _MAX_ELEMENTS
        ):
            return False
        if g_open in ("(", "["):
            return all((self._quick(g, w) or (False,))[0] for g, w in zip(g_items, w_items, strict=True))
        unused = list(w_items)
        for g in g_items:
            match = next((i for i, w in enumerate(unused) if (self._quick(g, w) or (False,))[0]), None)
            if match is None:
                return False
            del unused[match]
        return True

    def _agreement(self, candidates: tuple[Candidate, ...]) -> bool | None:
        """Whether the candidates agree, decided in the event loop; None: the worker decides."""
        if len(candidates) == 1:
            return True
        if any(c.kind != "answer" for c in candidates):
            return None
        first = normalize_answer(candidates[0].text)
        undecided = False
        for other in candidates[1:]:
            decided = self._quick(normalize_answer(other.text), first)
            if decided is not None and not decided[0]:
                return False
            undecided = undecided or decided is None
        return None if undecided else True

    def _quick_answer(self, candidate: Candidate, want: str) -> tuple[bool, Method] | None:
        """Steps 1-3 for the answer, in the event loop; None: the worker decides."""
        got, want_norm = normalize_answer(candidate.text), normalize_answer(want)
        # A whole response is decided here only when it is one number, or its text is the
        # reference's: otherwise math-verify's reading of it (in the worker) is its answer.
        if (
            candidate.kind == "text"
            and parse_number(got) is None
            and (_ANCHOR.search(got) or squash(got) != squash(want_norm))
        ):
            return None
        decided = self._quick(got, want_norm)
        if decided is not None and (decided[0] or candidate.kind != "answers"):
            return decided
        if self._elementwise(got, want_norm):
            return True, "elementwise"
        return None

    async def _symbolic(self, candidates: tuple[Candidate, ...], want: str) -> tuple[bool, Method]:
        """Step 4 in a worker: one call, whose budget is its own compute (queueing is not counted)."""
        if not self.use_sympy:
            return False, "string_sympy_disabled"
        forms: list[JsonValue] = [_worker_form(c) for c in candidates]
        args: list[JsonValue]
        if math_verify_available():
            function, args = self.symbolic_function, [want, forms]
        elif sympy_available():
            function, args = self.fallback_function, [want, forms, self.abs_tol, self.rel_tol]
        else:
            return False, "string_no_sympy"
        shown = candidates[0].text[:80]
        try:
            reply = await self.workers.call(function, args, timeout_s=self.sympy_timeout_s)
        except WorkTimeout as exc:
            raise ResponseFailure(
                "timeout",
                f"comparing {shown!r} with {want[:80]!r} exceeded the {self.sympy_timeout_s:g} s budget",
            ) from exc
        if not isinstance(reply, dict):
            return False, "string_sympy_undecided"
        equal, cause = reply.get("equal"), reply.get("cause")
        if isinstance(equal, bool):
            return equal, "symbolic"
        if cause == "conflicting_answers":
            raise ResponseFailure("conflicting_answers", _conflict_message(candidates))
        if cause == "response_unparseable":
            raise ResponseFailure("unparseable", f"no mathematical answer could be read in {shown!r}")
        if cause == "response_too_large":
            raise ResponseFailure("overflow", f"comparing {shown!r} ran out of memory or recursion depth")
        return False, "string_sympy_undecided"

    async def _decide(
        self, candidates: tuple[Candidate, ...], want: str, *, quick: bool
    ) -> tuple[bool, Method]:
        """Steps 1-4 (1-3 only when ``quick``: a reference that is one answer)."""
        agree = self._agreement(candidates)
        if agree is False:
            raise ResponseFailure("conflicting_answers", _conflict_message(candidates))
        if agree and quick:
            decided = self._quick_answer(candidates[0], want)
            if decided is not None:
                return decided
        return await self._symbolic(candidates, want)

    def _reference(self, reference: str | int | float) -> tuple[str, bool]:
        """The reference answer, and whether it is one answer (False: several boxes, read whole)."""
        if isinstance(reference, int | float) and not isinstance(reference, bool):
            if not math.isfinite(reference):
                raise InvalidInputError("input 'reference' must be a finite number")
            reference = str(reference)
        reference = require_str("reference", reference)
        single = boxed_count(reference) < 2 or "####" in reference
        want = extract_reference(reference).strip() if single else reference.strip()
        if not normalize_answer(want):
            raise InvalidInputError("input 'reference' has no answer in it")
        if (tower := exponent_tower(want)) is not None:
            raise InvalidInputError(
                f"input 'reference' holds an exponent tower ({tower}); write the number out"
            )
        return want, single

    @grader_boundary
    async def aevaluate(self, *, response: str, reference: str | int | float) -> GraderScore | GraderError:
        """Compare the final answer in ``response`` with ``reference``."""
        response = require_str("response", response)
        check_response_text("input 'response'", response)
        want, single = self._reference(reference)
        read_text = self.use_sympy and math_verify_available()
        candidates = read_response(response, extraction=self.extraction, read_text=read_text)
        first = candidates[0] if candidates else None
        metadata: dict[str, JsonValue] = {
            "extracted_from": first.source if first is not None else "none",
            "extracted_answer": ""
            if first is None
            else (
                first.text[-_SNIPPET:] if first.kind == "text" else normalize_answer(first.text)[:_SNIPPET]
            ),
            "reference_answer": normalize_answer(want)[:_SNIPPET],
        }
        if first is None:
            metadata["method"] = "none"
            return self._score(0.0, "no final answer found in the response", metadata)
        for text in (t for c in candidates for t in c.texts if len(t) <= _TOWER_CHECK_LIMIT):
            if (tower := exponent_tower(text)) is not None:
                raise ResponseFailure("exponent_tower", f"the answer holds an exponent tower ({tower})")
        equal, method = await self._decide(candidates, want, quick=single)
        metadata["method"] = method
        shown = str(metadata["extracted_answer"])[:80]
        reason = (
            f"answer {shown!r} {'equals' if equal else 'differs from'} reference {want[:80]!r} ({method})"
        )
        return self._score(1.0 if equal else 0.0, reason, metadata)

    def _score(self, score: float, reason: str, metadata: dict[str, JsonValue]) -> GraderScore:
        return GraderScore(
            name=self.name, score=score, reason=reason, metadata=metadata, score_range=self.score_range
        )


_ANCHOR = re.compile(r"(?i)answer")


def _worker_form(candidate: Candidate) -> dict[str, JsonValue]:
    """The candidate as the worker reads it: a number the event loop read is sent as that number.

    So that both sides read one answer the same way: ``5 cm`` is 5 and ``1,234`` is 1234 in
    the event loop, and in the worker too.
    """
    if candidate.kind != "answers" and "=" not in candidate.text:  # "x = 2" stays an equation there
        number = canonical_number(normalize_answer(candidate.text))
        if number is not None:
            return {"kind": "answer", "texts": [number]}
    return candidate.to_json()


def _conflict_message(candidates: tuple[Candidate, ...]) -> str:
    shown = " / ".join(f"{c.source} {c.text[:60]!r}" for c in candidates)
    return f"the response gives answers that disagree: {shown}"[:300]
