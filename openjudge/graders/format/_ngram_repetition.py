"""Penalise repeated n-grams (degenerate, looping generations)."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import ClassVar, Literal, TypeAlias

from pydantic import JsonValue

from openjudge.graders._inputs import require_str
from openjudge.graders.base_grader import BaseGrader, grader_boundary
from openjudge.graders.blame import shown
from openjudge.graders.text._tokens import tokenize
from openjudge.results import GraderScore, ScoreRange

__all__ = ["NgramRepetitionPenaltyGrader", "RepetitionScope"]

RepetitionScope: TypeAlias = Literal["full", "think"]


def _tag_contents(text: str, tag: str) -> list[str]:
    """The contents of every ``<tag>...</tag>`` block, in any case and tag spacing
    (``<THINK>`` must not hide a loop from ``scope="think"``)."""
    name = re.escape(tag)
    pattern = re.compile(rf"<\s*{name}\s*>(.*?)<\s*/\s*{name}\s*>", re.IGNORECASE | re.DOTALL)
    return pattern.findall(text)


class NgramRepetitionPenaltyGrader(BaseGrader):
    """A penalty in [-1, 0] that grows with the share of repeated n-grams; higher is better.

    The text is split with :func:`~openjudge.graders.text._tokens.tokenize` (words,
    single CJK characters, punctuation marks; case-folded unless ``case_sensitive``)
    after normalising what a reader cannot see: NFKC, invisible characters dropped,
    look-alike letters folded and diacritics on Latin, Greek and Cyrillic letters removed
    (:func:`~openjudge.graders.text._tokens.normalize_for_counting`). So appending an
    invisible U+034F or an accent to each word does not make a loop look new.
    With ``T`` n-grams of which ``U`` are distinct, ``repetition_rate = 1 - U / T``
    (0 when nothing repeats, approaching 1 for a loop), and
    ``score = -min(1, penalty_rate * max(0, repetition_rate - threshold))``.
    The defaults make the score ``-repetition_rate``. Text with fewer than ``n``
    tokens has no n-grams and scores 0.0.

    Inputs:
        response: The text being graded.

    Args:
        n: n-gram length (>= 1).
        threshold: Repetition rate tolerated without penalty, in [0, 1).
        penalty_rate: Penalty per unit of repetition rate above the threshold (> 0).
        scope: ``full`` text, or only the contents of ``<think>`` blocks (``think``;
            no block means nothing to penalise, score 0.0).
        think_tag: Tag name used by ``scope="think"``.
        case_sensitive: Distinguish case when comparing tokens.
        name: Result name (default ``"ngram_repetition_penalty"``).
        description: One line on what is measured.
    """

    default_name: ClassVar[str] = "ngram_repetition_penalty"
    default_score_range: ClassVar[ScoreRange | None] = ScoreRange(low=-1.0, high=0.0)

    def __init__(
        self,
        *,
        n: int = 3,
        threshold: float = 0.0,
        penalty_rate: float = 1.0,
        scope: RepetitionScope = "full",
        think_tag: str = "think",
        case_sensitive: bool = False,
        name: str = "",
        description: str = "",
    ) -> None:
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        if not (math.isfinite(threshold) and 0.0 <= threshold < 1.0):
            raise ValueError(f"threshold must be in [0, 1), got {threshold!r}")
        if not (math.isfinite(penalty_rate) and penalty_rate > 0):
            raise ValueError(f"penalty_rate must be a finite number > 0, got {penalty_rate!r}")
        if scope not in ("full", "think"):
            raise ValueError(f"scope must be 'full' or 'think', got {scope!r}")
        if not think_tag or any(ch in think_tag for ch in "<>/ \t\n"):
            raise ValueError(f"think_tag must be a bare tag name such as 'think', got {think_tag!r}")
        super().__init__(name=name, description=description)
        self.n = n
        self.threshold = float(threshold)
        self.penalty_rate = float(penalty_rate)
        self.scope: RepetitionScope = scope
        self.think_tag = think_tag
        self.case_sensitive = case_sensitive

    def _score(self, text: str) -> tuple[float, dict[str, JsonValue]]:
        tokens = tokenize(text, lowercase=not self.case_sensitive, strip_diacritics=True)
        total = len(tokens) - self.n + 1
        if total <= 0:
            return 0.0, {"tokens": len(tokens), "total_ngrams": 0, "unique_ngrams": 0, "repetition_rate": 0.0}
        counts = Counter(tuple(tokens[i : i + self.n]) for i in range(total))
        rate = 1.0 - len(counts) / total
        penalty = min(1.0, self.penalty_rate * max(0.0, rate - self.threshold))
        top: list[JsonValue] = [
            {"ngram": shown(" ".join(gram)), "count": count}
            for gram, count in counts.most_common(3)
            if count > 1
        ]
        return -penalty if penalty else 0.0, {
            "tokens": len(tokens),
            "total_ngrams": total,
            "unique_ngrams": len(counts),
            "repetition_rate": rate,
            "most_repeated": top,
        }

    @grader_boundary
    async def aevaluate(self, *, response: str) -> GraderScore:
        """Penalise repeated n-grams in ``response``."""
        response = require_str("response", response)
        text = response
        if self.scope == "think":
            blocks = _tag_contents(response, self.think_tag)
            if not blocks:
                return GraderScore(
                    name=self.name,
                    score=0.0,
                    reason=f"no <{self.think_tag}> block to analyse",
                    metadata={"scope": self.scope, "n": self.n, "think_blocks": 0},
                    score_range=self.score_range,
                )
            text = "\n".join(blocks)
        score, details = self._score(text)
        metadata: dict[str, JsonValue] = {"scope": self.scope, "n": self.n, **details}
        return GraderScore(
            name=self.name,
            score=score,
            reason=f"{self.n}-gram repetition rate {details['repetition_rate']:.3f}, penalty {abs(score):.3f}",
            metadata=metadata,
            score_range=self.score_range,
        )
