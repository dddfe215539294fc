"""Degenerate responses: "master keys" a judge must never see (arXiv 2507.08794).

Generative judges asked whether a response matches a reference accept replies with no content
at all (``:``, ``.``, "Thought process:", "Let's solve this problem step by step.", "解") at
false-positive rates up to 80-90 %. A built-in judge therefore scores such a response at the
bottom of its range (cause ``degenerate_response``) before any judge call, unless the grader is
built with ``reject_degenerate=False``.

A response is degenerate when it is short (at most :data:`MAX_CHARS` characters) and has no
content beyond what opens a reasoning: whitespace, punctuation and symbols, and the words and
phrases of reasoning openers in any of the languages below ("let's think step by step",
"solution", "answer:", "思路", "解答", "Lösung", "Решение", ...). One word outside that
vocabulary, one digit or one ideograph that is not an opener is content: ``"4"``, ``"Paris"``,
``"Yes."``, ``"B"`` and ``"答案：4"`` are not degenerate.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["CAUSE", "MAX_CHARS", "degenerate_reason"]

CAUSE: Final = "degenerate_response"
MAX_CHARS: Final = 200
"""Longer responses are never degenerate here (an opener list is not a content detector)."""

# Words of reasoning openers, by language (case-folded). Single letters are not listed:
# "A" or "B" is an answer to a multiple-choice question.
_OPENER_WORDS: Final = frozenset(
    [
        "let",
        "lets",
        "us",
        "me",
        "we",
        "think",
        "thinking",
        "thought",
        "thoughts",
        "process",
        "solve",
        "solving",
        "solved",
        "solution",
        "solutions",
        "answer",
        "answers",
        "final",
        "the",
        "an",
        "this",
        "that",
        "it",
        "its",
        "problem",
        "question",
        "task",
        "step",
        "steps",
        "by",
        "through",
        "about",
        "carefully",
        "okay",
        "ok",
        "so",
        "well",
        "alright",
        "hmm",
        "sure",
        "here",
        "is",
        "are",
        "my",
        "our",
        "reasoning",
        "reason",
        "analysis",
        "analyze",
        "analyse",
        "explanation",
        "explain",
        "approach",
        "work",
        "working",
        "out",
        "begin",
        "start",
        "to",
        "of",
        "and",
        "in",
        "on",
        "at",
        "for",
        "be",
        "do",
        "can",
        "see",
        "look",
        "break",
        "down",
        "consider",
        "go",
        "will",
        "shall",
        "now",
        "pensemos",
        "pensar",
        "paso",
        "pasos",
        "vamos",
        "resolver",
        "solución",
        "respuesta",
        "razonamiento",
        "proceso",
        "pensamiento",
        "analicemos",
        "el",
        "la",
        "los",
        "las",
        "es",
        "de",
        "del",
        "por",
        "un",
        "una",
        "esto",
        "este",
        "réfléchissons",
        "réfléchir",
        "étape",
        "étapes",
        "par",
        "résolvons",
        "résoudre",
        "réponse",
        "raisonnement",
        "processus",
        "pensée",
        "procédons",
        "analysons",
        "le",
        "les",
        "est",
        "et",
        "une",
        "ceci",
        "ce",
        "denken",
        "wir",
        "schritt",
        "für",
        "lösung",
        "antwort",
        "lösen",
        "lass",
        "uns",
        "überlegen",
        "gedankengang",
        "die",
        "der",
        "das",
        "ist",
        "und",
        "ein",
        "eine",
        "schauen",
        "давайте",
        "подумаем",
        "подумать",
        "шаг",
        "за",
        "шагом",
        "решение",
        "ответ",
        "рассуждение",
        "решим",
        "это",
        "процесс",
        "мыслей",
        "по",
        "порядку",
        "разберём",
        "разберем",
        "итак",
        "passo",
        "passos",
        "solução",
        "resposta",
        "raciocínio",
        "pensamento",
        "os",
        "vamo",
    ]
)
# Openers of languages written without spaces (matched as substrings, longest first).
_OPENER_PHRASES: Final = tuple(
    sorted(
        [
            "让我们一步一步地思考",
            "让我们一步步思考",
            "一步一步地",
            "一步一步",
            "一步步",
            "思考过程",
            "让我们",
            "我们来",
            "我们",
            "来看",
            "解决这个问题",
            "这个问题",
            "解决",
            "问题",
            "思考",
            "思路",
            "解答",
            "解析",
            "分析",
            "步骤",
            "过程",
            "首先",
            "答案",
            "答",
            "解",
            "好的",
            "嗯",
            "那么",
            "ステップバイステップで考えましょう",
            "段階的に考えましょう",
            "考えてみましょう",
            "考え方",
            "思考過程",
            "解答",
            "解説",
            "かいせつ",
            "答え",
            "まず",
            "では",
            "考え",
            "단계별로",
            "생각해",
            "봅시다",
            "생각해",
            "봅시다",
            "단계별로",
            "풀이",
            "정답",
            "해설",
            "사고",
            "과정",
            "먼저",
            "답",
        ],
        key=len,
        reverse=True,
    )
)
_WORD: Final = re.compile(r"\w+")


def degenerate_reason(text: str) -> str | None:
    """Why ``text`` is a degenerate response (see the module docstring), or ``None`` when it has content."""
    if len(text) > MAX_CHARS:
        return None
    folded = _folded(text)
    if not folded.strip():
        return "the response is empty"
    opener = False
    if not folded.isascii():  # every phrase is written in a script beyond ASCII
        for phrase in _OPENER_PHRASES:
            if phrase in folded:
                folded = folded.replace(phrase, " ")
                opener = True
    words = _WORD.findall(folded)
    if not _OPENER_WORDS.issuperset(words):  # a word that opens nothing: content
        return None
    if not words and not opener:
        return f"the response has no words, only punctuation or symbols ({text.strip()[:40]!r})"
    return f"the response is only a reasoning opener with no content ({text.strip()[:60]!r})"


def _folded(text: str) -> str:
    """``text`` NFKC-normalised and case-folded, without marks, format characters or apostrophes."""
    if text.isascii():  # most responses: nothing to normalise or drop but apostrophes, no loop per character
        return text.lower().replace("'", "")
    return _folded_unicode(text)


def _folded_unicode(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    # Apostrophes joined: "let's" reads as "lets", "we'll" as "well" (no one-letter words listed).
    return "".join(c for c in folded if unicodedata.category(c) not in ("Cf", "Mn", "Me") and c not in "'’")
