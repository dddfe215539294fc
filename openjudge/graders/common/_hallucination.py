"""HallucinationGrader: is every claim in the response supported by the given context (5 = no hallucination); raw 1-5, higher is better."""

from __future__ import annotations

from openjudge.graders.common._judge import SCALE_EN, SCALE_ZH, CommonJudge, bilingual

__all__ = ["HallucinationGrader"]

PROMPT_EN = (
    """Judge whether every claim in the response is supported by the context. Claims not found in the context, or contradicting it, are hallucinations.
5: everything is supported; 3: some unsupported details; 1: mostly unsupported or contradicting the context.

Context:
{context}

Query:
{query}

Response:
{response}

"""
    + SCALE_EN
)
PROMPT_ZH = (
    """判断回答中的每个陈述是否都能在上下文中找到依据。上下文中没有或与之矛盾的内容属于幻觉。
5：全部有依据；3：存在部分无依据的细节；1：大部分无依据或与上下文矛盾。

上下文：
{context}

问题：
{query}

回答：
{response}

"""
    + SCALE_ZH
)


class HallucinationGrader(CommonJudge):
    """Is every claim in the response supported by the given context (5 = no hallucination).

    Inputs: query, response, context. Raw score 1-5 (higher is better); ``normalized_score`` in [0, 1].
    """

    default_name = "hallucination"
    summary = "Is every claim in the response supported by the given context (5 = no hallucination)"
    TEMPLATE = bilingual(PROMPT_EN, PROMPT_ZH)
