"""Degenerate responses as a class: short text with nothing but reasoning openers, punctuation and space.

Property: any short mix of opener words or phrases (in any of the languages listed), punctuation,
symbols and whitespace is degenerate; one digit or one word outside the openers is content.
"""

from __future__ import annotations

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from openjudge.graders._degenerate import (
    _OPENER_PHRASES,
    _OPENER_WORDS,
    MAX_CHARS,
    _folded,
    _folded_unicode,
    degenerate_reason,
)
from openjudge.graders.openai import OpenAIGrader
from openjudge.models.chat_model import ChatRequest
from openjudge.results import GraderScore
from openjudge.testing.function_model import FunctionChatModel

FILLER = st.sampled_from(
    [" ", "  ", "\n", ":", ".", ",", "!", "?", "...", "**", "#", "-", "：", "。", "👍", "→"]
)
OPENERS = st.sampled_from(sorted(_OPENER_WORDS) + list(_OPENER_PHRASES))


@settings(max_examples=300)
@given(st.lists(st.one_of(OPENERS, FILLER), max_size=12), st.booleans())
def test_openers_punctuation_and_space_alone_are_degenerate(parts: list[str], title: bool) -> None:
    text = " ".join(parts)
    text = text.title() if title else text
    if len(text) <= MAX_CHARS:
        assert degenerate_reason(text) is not None, text


@settings(max_examples=300)
@given(
    st.lists(st.one_of(OPENERS, FILLER), max_size=8),
    st.one_of(
        st.integers(0, 10**6).map(str),
        st.sampled_from(["Paris", "B", "yes", "no", "x = 2", "четыре", "四", "Berlin", "negative"]),
    ),
    st.integers(0, 8),
)
def test_one_digit_or_content_word_is_content(parts: list[str], content: str, at: int) -> None:
    parts.insert(min(at, len(parts)), content)
    assert degenerate_reason(" ".join(parts)) is None, parts


def test_long_responses_are_never_degenerate_here() -> None:
    assert degenerate_reason("Let's think step by step. " * 20) is None


def test_an_openai_score_model_rejects_a_master_key_before_the_judge() -> None:
    calls: list[ChatRequest] = []

    def fooled(request: ChatRequest) -> str:
        calls.append(request)
        return '{"steps": [], "result": 1}'

    spec = {
        "type": "score_model",
        "name": "s",
        "model": "gpt-4o",
        "input": [
            {"role": "user", "content": "Reference: {{ item.answer }} Answer: {{ sample.output_text }}"}
        ],
    }
    grader = OpenAIGrader(spec, model=FunctionChatModel(fooled))
    result = anyio.run(lambda: grader.aevaluate(response="Thought process:", answer="4"))
    assert isinstance(result, GraderScore) and result.score == 0.0
    assert result.metadata["cause"] == "degenerate_response" and calls == []
    lenient = OpenAIGrader(spec, model=FunctionChatModel(fooled), reject_degenerate=False)
    assert getattr(anyio.run(lambda: lenient.aevaluate(response=":", answer="4")), "score", None) == 1.0


@settings(max_examples=500)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=MAX_CHARS))
def test_ascii_text_folds_as_the_unicode_path_folds_it(text: str) -> None:
    """The ASCII shortcut reads every ASCII text as the full normalisation would."""
    assert _folded(text) == _folded_unicode(text)


def test_every_opener_phrase_is_beyond_ascii() -> None:
    """Folded ASCII text skips the phrase search, so no phrase may be ASCII."""
    assert not any(phrase.isascii() for phrase in _OPENER_PHRASES)
