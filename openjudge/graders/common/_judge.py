"""The shared shape of the common 1-5 judges."""

from __future__ import annotations

from typing import ClassVar

from openjudge.graders.llm_grader import JudgeVerdict, LLMGrader
from openjudge.models.chat_model import ChatModel, Sampling
from openjudge.models.schema.oai.message import ChatMessage
from openjudge.models.schema.prompt_template import LanguageEnum, PromptTemplate
from openjudge.results import GraderMode, GraderScore, ScoreRange, TokenUsage

__all__ = ["SCALE_EN", "SCALE_ZH", "CommonJudge", "bilingual"]

SCALE_EN = "Reply with a score from 1 (worst) to 5 (best) and a one-sentence reason."
SCALE_ZH = "给出 1（最差）到 5（最好）的分数，并用一句话说明理由。"


def bilingual(en: str, zh: str) -> PromptTemplate:
    return PromptTemplate(
        messages={
            LanguageEnum.EN: [ChatMessage(role="user", content=en)],
            LanguageEnum.ZH: [ChatMessage(role="user", content=zh)],
        }
    )


class CommonJudge(LLMGrader[JudgeVerdict]):
    """A 1-5 judge with a fixed prompt; subclasses set ``default_name``, ``summary`` and ``TEMPLATE``.

    Args:
        model: The judge.
        language: Prompt language.
        template: Prompt override (same placeholders as the default).
        sampling: Sampling overrides for the judge calls.
        threshold: A score at or above this counts as a pass (``metadata["passed"]``).
        name: Result name.
        reject_degenerate: Score a degenerate response (empty, punctuation only, a reasoning
            opener alone) at the bottom without a call (see :class:`LLMGrader`).
    """

    default_score_range = ScoreRange(low=1.0, high=5.0)
    summary: ClassVar[str] = ""
    TEMPLATE: ClassVar[PromptTemplate]

    def __init__(
        self,
        model: ChatModel,
        *,
        language: LanguageEnum = LanguageEnum.EN,
        template: PromptTemplate | None = None,
        sampling: Sampling | None = None,
        threshold: float = 3.0,
        name: str = "",
        reject_degenerate: bool = True,
    ) -> None:
        super().__init__(
            model,
            name=name or self.default_name,
            mode=GraderMode.POINTWISE,
            language=language,
            description=self.summary,
            template=template or self.TEMPLATE,
            sampling=sampling,
            reject_degenerate=reject_degenerate,
        )
        self.threshold = threshold

    def score_verdict(
        self,
        verdict: JudgeVerdict,
        *,
        usage: TokenUsage | None = None,
        latency_s: float | None = None,
        queue_s: float | None = None,
    ) -> GraderScore:
        result = super().score_verdict(verdict, usage=usage, latency_s=latency_s, queue_s=queue_s)
        metadata = {**result.metadata, "passed": result.score >= self.threshold, "threshold": self.threshold}
        return result.model_copy(update={"metadata": metadata})
