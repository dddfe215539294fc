"""The quickstart's LLM judge with its scale in the reply's schema: a score from 1 to 5 (an enum).

A stock ``type: llm`` grader used to send a schema whose ``score`` was any number, and
SmolLM2-135M often answered 10 or 100 on a 1-5 scale: the grading failed (a parse error,
``None`` to TRL). In the first run of this example that was 5 of the first step's 8
judgements. llama.cpp's server enforces the enum below (and the reason's length) with its
JSON grammar, so every reply is a verdict on the scale. Every LLM grader's schema now carries
its scale; this subclass still bounds the reason, which the stock verdict leaves
unbounded (``graders.yaml`` names it as ``scale_judge:ScaleJudge``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.chat_model import ChatModel


class Verdict(BaseModel):
    # Bounded too: an unbounded reason may run past max_tokens and end as unfinished JSON.
    reason: str = Field(description="A brief justification of the score.", max_length=160)
    score: Literal[1, 2, 3, 4, 5] = Field(description="The score.")


class ScaleJudge(LLMGrader[Verdict]):
    """An ``llm`` grader on the 1-5 scale whose reply schema allows only 1, 2, 3, 4 or 5."""

    def __init__(self, model: ChatModel, *, name: str = "judge", template: str) -> None:
        super().__init__(model, name=name, template=template, structured_model=Verdict, score_range=(1, 5))
