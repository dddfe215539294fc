"""InstructionFollowingGrader: does the response follow every explicit instruction (format, length, constraints); raw 1-5, higher is better."""

from __future__ import annotations

from openjudge.graders.common._judge import SCALE_EN, SCALE_ZH, CommonJudge, bilingual

__all__ = ["InstructionFollowingGrader"]

PROMPT_EN = (
    """Judge whether the response follows every explicit instruction: requested format, length, language, style and constraints.
5: follows all instructions; 3: follows some, misses others; 1: ignores the instructions.

Instructions:
{instructions}

Response:
{response}

"""
    + SCALE_EN
)
PROMPT_ZH = (
    """判断回答是否遵循了每一条明确指令：要求的格式、长度、语言、风格和约束。
5：完全遵循；3：部分遵循；1：忽视指令。

指令：
{instructions}

回答：
{response}

"""
    + SCALE_ZH
)


class InstructionFollowingGrader(CommonJudge):
    """Does the response follow every explicit instruction (format, length, constraints).

    Inputs: instructions, response. Raw score 1-5 (higher is better); ``normalized_score`` in [0, 1].
    """

    default_name = "instruction_following"
    summary = "Does the response follow every explicit instruction (format, length, constraints)"
    TEMPLATE = bilingual(PROMPT_EN, PROMPT_ZH)
