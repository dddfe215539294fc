r"""Which final answer a response gives: the extraction policy, as candidates that must agree.

A response earns credit for at most one final answer. :func:`read_response` lists what the
policy reads as the response's final answer, independently of the reference; when it reads
more than one candidate, they must agree (compared with the grader's own equivalence) or
the response has *conflicting answers* and scores the bottom. Only the first candidate is
then compared with the reference, so a response is accepted for one answer's equivalents
and nothing else.

The policy, on the text after the last ``</think>`` (a response that opens ``<think>``
without closing it has no answer):

1. *Markers.* Every ``\boxed{}`` outside other boxes is read: one content, or several
   equal ones, is the answer; several different contents are one *list* answer (the set of
   their values: ``\boxed{1}, \boxed{2}``). The same for ``<answer>...</answer>`` blocks
   outside boxes (a block that holds a box adds nothing: its box is read). When a response
   has both boxes and answer blocks, each is a candidate. With ``extraction="last"``, a
   "final answer" statement after the last marker supersedes the markers: the text is read
   as in 2, where math-verify prefers that statement (the last answer a response gives is
   its answer).
2. *No markers*, ``extraction="last"``: the text (its last :data:`TEXT_WINDOW` characters)
   is one candidate, read by math-verify's extraction in the worker, which checks that an
   anchored reading ("the answer is 5") agrees with the last expression of the text
   (:mod:`._verify`). Without math-verify (or with ``use_sympy=False``) the last number of
   the text is the answer.
3. *No markers*, ``extraction="strict"``: no answer.

Every step is linear in the response.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, TypeAlias

from pydantic import JsonValue

from openjudge.graders.math._extract import (
    answer_tags,
    boxed_spans,
    extract_final_answer,
    outside_boxes,
)
from openjudge.graders.math._normalize import normalize_answer, squash

__all__ = ["TEXT_WINDOW", "Candidate", "CandidateKind", "CandidateSource", "final_part", "read_response"]

CandidateKind: TypeAlias = Literal["answer", "answers", "text"]
CandidateSource: TypeAlias = Literal["boxed", "answer_tag", "last_number", "text"]
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_BOX_MARK = "\x00"
_FINAL_ANSWER = re.compile(r"(?i)final\s+answer")
_MAX_NORMALISED = 64
TEXT_WINDOW = 16_000
"""How much of a response without markers is read: its last 16,000 characters. math-verify's
extraction is super-linear on some texts (runs of digits and spaces); the window keeps an honest
long response within the budget, and the answer of an unmarked response is at its end."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One reading of a response's final answer.

    Attributes:
        kind: ``answer`` (one answer), ``answers`` (several markers read as one list
            answer) or ``text`` (a whole response, read by math-verify's extraction).
        texts: The answer text (one, or one per marker for ``answers``).
        source: Where it was found (``metadata["extracted_from"]``).
    """

    kind: CandidateKind
    texts: tuple[str, ...]
    source: CandidateSource

    @property
    def text(self) -> str:
        """The candidate as one text (a list answer's parts joined by ``", "``)."""
        return ", ".join(self.texts)

    def to_json(self) -> dict[str, JsonValue]:
        """The form the worker function takes."""
        return {"kind": self.kind, "texts": list(self.texts)}


def final_part(response: str) -> str | None:
    """The text after the last ``</think>``; None while the response is still thinking."""
    close = response.rfind(_THINK_CLOSE)
    if close != -1:
        return response[close + len(_THINK_CLOSE) :]
    if _THINK_OPEN in response:
        return None
    return response


def _tail(text: str) -> str:
    """The last :data:`TEXT_WINDOW` characters of a text, from a line start where one is in reach."""
    if len(text) <= TEXT_WINDOW:
        return text
    start = len(text) - TEXT_WINDOW
    line = text.find("\n", start, start + TEXT_WINDOW // 4)
    return text[line + 1 if line != -1 else start :]


def _distinct(texts: list[str]) -> list[str]:
    r"""The texts with a non-empty answer, without repeats, in order.

    Repeats are found on the stripped text (a set: linear), then, when at most
    :data:`_MAX_NORMALISED` remain, on the normalised text (``\dfrac12`` repeats ``\frac{1}{2}``).
    """
    unique = [t for t in dict.fromkeys(text.strip() for text in texts) if t]
    if len(unique) > _MAX_NORMALISED:
        return unique  # a list of that many parts matches no reference, whatever repeats it holds
    seen: set[str] = set()
    out: list[str] = []
    for text in unique:
        key = squash(normalize_answer(text))
        if key and key not in seen:
            seen.add(key)
            out.append(text)
    return out


def _marker(texts: list[str], source: CandidateSource) -> Candidate | None:
    distinct = _distinct(texts)
    if not distinct:
        return None
    return Candidate("answer" if len(distinct) == 1 else "answers", tuple(distinct), source)


def read_response(
    response: str, *, extraction: Literal["last", "strict"], read_text: bool
) -> tuple[Candidate, ...]:
    """The candidates for the response's final answer (empty: no answer), see the module docstring.

    Args:
        response: The response text.
        extraction: ``"last"`` or ``"strict"``.
        read_text: Whether a response without markers is read whole in the worker (math-verify
            installed and used); otherwise its last number is its answer.
    """
    final = final_part(response)
    if final is None:
        return ()
    spans = boxed_spans(final)
    boxed = [final[start:end] for _, start, end, _ in spans]
    # A tag inside a box is part of the box's answer; a tag holding a box adds nothing to it.
    tagged = answer_tags(outside_boxes(final, _BOX_MARK, spans))
    boxes = _marker(boxed, "boxed")
    tags = _marker([t for t in tagged if _BOX_MARK not in t], "answer_tag")
    if boxed or tagged:  # markers that are all empty (``\boxed{}``) are no answer, not prose
        if extraction == "last" and _FINAL_ANSWER.search(final, _last_marker_end(final, spans)):
            # "... \boxed{200} ... \boxed{255} ... Final Answer: The final answer is $10455$."
            # The last answer the response gives is its answer: the statement after the boxes
            # (read in the whole text, whose math delimiters pair up; math-verify prefers it).
            return _unmarked(final, read_text)
        return tuple(c for c in (boxes, tags) if c is not None)
    if extraction == "strict" or not final.strip():
        return ()
    return _unmarked(final, read_text)


def _unmarked(text: str, read_text: bool) -> tuple[Candidate, ...]:
    """The candidate of a text without markers: read whole in the worker, or its last number."""
    if not text.strip():
        return ()
    if read_text:
        return (Candidate("text", (_tail(text.strip()),), "text"),)
    last = extract_final_answer(text, fallback_to_last_number=True)
    return (Candidate("answer", (last.text,), "last_number"),) if last.source == "last_number" else ()


def _last_marker_end(text: str, spans: list[tuple[int, int, int, int]]) -> int:
    """Where the last box (of ``spans``) or answer block ends."""
    box_end = spans[-1][3] if spans else 0
    tag_end = text.rfind("</answer>")
    return max(box_end, tag_end + len("</answer>") if tag_end != -1 else 0)
