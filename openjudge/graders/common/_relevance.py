"""RelevanceGrader: does the response address the query; raw 1-5, higher is better."""

from __future__ import annotations

from openjudge.graders.common._judge import SCALE_EN, SCALE_ZH, CommonJudge, bilingual

__all__ = ["RelevanceGrader"]

PROMPT_EN = (
    """Judge how relevant the response is to the query: does it address what was asked, without drifting?
5: fully on topic and addresses the query; 3: partly relevant; 1: off topic.

Query:
{query}

Response:
{response}

"""
    + SCALE_EN
)
PROMPT_ZH = (
    """判断回答与问题的相关程度：是否回应了所问内容，没有跑题。
5：完全切题；3：部分相关；1：答非所问。

问题：
{query}

回答：
{response}

"""
    + SCALE_ZH
)


class RelevanceGrader(CommonJudge):
    """Does the response address the query.

    Inputs: query, response. Raw score 1-5 (higher is better); ``normalized_score`` in [0, 1].
    """

    default_name = "relevance"
    summary = "Does the response address the query"
    TEMPLATE = bilingual(PROMPT_EN, PROMPT_ZH)
