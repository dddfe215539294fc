"""CorrectnessGrader: is the response correct, judged against the reference answer (raw 1-5)."""

from __future__ import annotations

from openjudge.graders.common._judge import SCALE_EN, SCALE_ZH, CommonJudge, bilingual

__all__ = ["CorrectnessGrader"]

PROMPT_EN = (
    """Judge whether the response answers the query correctly, using the reference answer as ground truth.
5: fully correct and consistent with the reference; 3: partly correct or missing key facts; 1: wrong or contradicts the reference.

Query:
{query}

Reference answer:
{reference}

Response:
{response}

"""
    + SCALE_EN
)
PROMPT_ZH = (
    """以参考答案为准，判断回答是否正确地回答了问题。
5：完全正确且与参考答案一致；3：部分正确或缺少关键事实；1：错误或与参考答案矛盾。

问题：
{query}

参考答案：
{reference}

回答：
{response}

"""
    + SCALE_ZH
)


class CorrectnessGrader(CommonJudge):
    """Is the response factually and logically correct, judged against the reference answer.

    Inputs: query, response, reference. Raw score 1-5 (higher is better); ``normalized_score`` in [0, 1].
    """

    default_name = "correctness"
    summary = "Is the response factually and logically correct, judged against the reference answer"
    TEMPLATE = bilingual(PROMPT_EN, PROMPT_ZH)
