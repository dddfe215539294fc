"""Surface similarity of a response to a reference: BLEU, ROUGE-L or edit distance."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from typing import ClassVar, Literal, TypeAlias

from pydantic import JsonValue

from openjudge.graders._inputs import require_str
from openjudge.graders._workers import WorkerPool, WorkTimeout
from openjudge.graders.base_grader import BaseGrader, grader_boundary
from openjudge.graders.text._metrics import levenshtein_distance, rouge_l, sentence_bleu
from openjudge.graders.text._tokens import tokenize
from openjudge.results import GraderError, GraderScore, ResponseFailure, ScoreRange

__all__ = ["SimilarityGrader", "SimilarityMetric", "compute_in_worker"]

SimilarityMetric: TypeAlias = Literal["bleu", "rouge_l", "edit_distance"]
_METRICS: tuple[SimilarityMetric, ...] = ("bleu", "rouge_l", "edit_distance")

# Above this many cells of the (virtual) n x m table, the quadratic metrics run in a
# worker process (killed after timeout_s), so a long comparison neither stalls the event
# loop nor outlives its budget; below it they take milliseconds.
_WORKER_THRESHOLD = 4_000_000
# BLEU is linear, but counting n-grams of long texts holds the loop: about 25 ms per 50,000
# tokens (python bench/loop_hold.py --only similarity), so longer ones go to the worker.
_BLEU_WORKER_TOKENS = 50_000
_IN_WORKER = "openjudge.graders.text._similarity:compute_in_worker"


def _compute(metric: str, hyp: Sequence[str], ref: Sequence[str]) -> tuple[float, dict[str, JsonValue]]:
    if metric == "bleu":
        bleu = sentence_bleu(hyp, ref)
        return bleu.score, {"precisions": list(bleu.precisions), "brevity_penalty": bleu.brevity_penalty}
    if metric == "rouge_l":
        rouge = rouge_l(hyp, ref)
        return rouge.f1, {"precision": rouge.precision, "recall": rouge.recall, "lcs": rouge.lcs}
    distance = levenshtein_distance(hyp, ref)
    longest = max(len(hyp), len(ref))
    similarity = 1.0 if longest == 0 else 1.0 - distance / longest
    return similarity, {"distance": distance}


def compute_in_worker(metric: str, hyp: str | list[str], ref: str | list[str]) -> list[JsonValue]:
    """The metric for a :class:`~openjudge.graders._workers.WorkerPool` (JSON in, JSON out)."""
    score, details = _compute(metric, hyp, ref)
    return [score, details]


class SimilarityGrader(BaseGrader):
    """Similarity of the response to the reference in [0, 1]; higher is better.

    Inputs:
        response: The text being graded.
        reference: The reference text.

    Metrics (all pure Python, no optional dependency):
        ``bleu``: sentence BLEU-4 over :func:`~openjudge.graders.text._tokens.tokenize`
        tokens with exponential smoothing and effective order, equal to sacrebleu's
        ``sentence_bleu`` on the same tokens. Linear time.
        ``rouge_l``: ROUGE-L F1 (longest common subsequence of tokens).
        ``edit_distance``: ``1 - levenshtein / max(len)`` over Unicode code points
        (after NFC normalisation).

    Two empty texts score 1.0; one empty text scores 0.0.

    Cost: ROUGE-L and edit distance are bit-parallel and take time proportional to
    ``longer · shorter / 64`` (see :mod:`openjudge.graders.text._metrics`): a 100k-char
    response against a 2k-char reference takes milliseconds, two unrelated 100k-char
    texts take seconds. Large comparisons (and BLEU over more than 200,000 tokens) run in
    a worker process that is killed after
    ``timeout_s`` (the response's failure, cause ``timeout``, scored at the bottom: the
    response is what grew unbounded). ``max_length``
    caps the cost by truncating both sides (reported as ``truncated`` in the metadata).

    Args:
        metric: ``bleu``, ``rouge_l`` or ``edit_distance``.
        case_sensitive: Compare case-sensitively (default: case-folded).
        max_length: If set, keep only the first ``max_length`` tokens (characters for
            ``edit_distance``) of each text.
        timeout_s: Time limit of a large comparison (run in a worker process).
        name: Result name (default ``"similarity"``).
        description: One line on what is measured.
    """

    default_name: ClassVar[str] = "similarity"
    default_score_range: ClassVar[ScoreRange | None] = ScoreRange(low=0.0, high=1.0)

    def __init__(
        self,
        metric: SimilarityMetric = "bleu",
        *,
        case_sensitive: bool = False,
        max_length: int | None = None,
        timeout_s: float = 10.0,
        name: str = "",
        description: str = "",
    ) -> None:
        if metric not in _METRICS:
            raise ValueError(f"metric must be one of {', '.join(_METRICS)}; got {metric!r}")
        if max_length is not None and max_length < 1:
            raise ValueError(f"max_length must be None or >= 1, got {max_length}")
        if not (math.isfinite(timeout_s) and timeout_s > 0):
            raise ValueError(f"timeout_s must be a finite number > 0, got {timeout_s!r}")
        super().__init__(name=name, description=description)
        self.metric: SimilarityMetric = metric
        self.case_sensitive = case_sensitive
        self.max_length = max_length
        self.timeout_s = float(timeout_s)
        self.workers = WorkerPool(max_workers=1, preload=("openjudge.graders.text._similarity",))

    def _units(self, text: str) -> list[str] | str:
        if self.metric == "edit_distance":
            text = unicodedata.normalize("NFC", text)
            return text if self.case_sensitive else text.casefold()
        return tokenize(text, lowercase=not self.case_sensitive)

    @grader_boundary
    async def aevaluate(self, *, response: str, reference: str) -> GraderScore | GraderError:
        """Score ``response`` against ``reference`` with the configured metric."""
        response = require_str("response", response)
        reference = require_str("reference", reference)
        hyp, ref = self._units(response), self._units(reference)
        truncated = False
        if self.max_length is not None and max(len(hyp), len(ref)) > self.max_length:
            hyp, ref, truncated = hyp[: self.max_length], ref[: self.max_length], True
        if (
            len(hyp) + len(ref) > _BLEU_WORKER_TOKENS
            if self.metric == "bleu"
            else len(hyp) * len(ref) > _WORKER_THRESHOLD
        ):
            try:
                args: list[JsonValue] = [
                    self.metric,
                    *(units if isinstance(units, str) else list[JsonValue](units) for units in (hyp, ref)),
                ]
                reply = await self.workers.call(_IN_WORKER, args, timeout_s=self.timeout_s)
            except WorkTimeout:
                # An unbounded response is the response's failure (set max_length to bound it).
                raise ResponseFailure(
                    "timeout",
                    f"{self.metric} of {len(hyp)} by {len(ref)} units did not finish within "
                    f"{self.timeout_s:g} s (set max_length to bound it)",
                ) from None
            if not (
                isinstance(reply, list) and isinstance(reply[0], int | float) and isinstance(reply[1], dict)
            ):
                raise RuntimeError(f"the similarity worker replied {type(reply).__name__}")
            score, details = float(reply[0]), reply[1]
        else:
            score, details = _compute(self.metric, hyp, ref)
        unit = "characters" if self.metric == "edit_distance" else "tokens"
        metadata: dict[str, JsonValue] = {
            "metric": self.metric,
            f"response_{unit}": len(hyp),
            f"reference_{unit}": len(ref),
            "truncated": truncated,
            **details,
        }
        return GraderScore(
            name=self.name,
            score=min(1.0, max(0.0, score)),
            reason=f"{self.metric} similarity {score:.4f}",
            metadata=metadata,
            score_range=self.score_range,
        )
