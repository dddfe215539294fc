"""Reading the score's distribution: at the verdict's own score, however the tokens fall.

Whether the reply is JSON, a bare number or text, and on tokenizers that merge numbers with
their neighbours; and always the score of the verdict (the last object), never a
``{"score": 5}`` the judge quotes before it.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openjudge.graders._scoring import expected_score, written_score
from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.chat_model import ChatResponse, TokenLogprob
from openjudge.results import GraderError, GraderScore, ScoreRange, TokenUsage
from openjudge.testing.function_model import FunctionChatModel

pytestmark = pytest.mark.anyio

SCALE = ScoreRange(low=1, high=5)


def tokens_of(
    pieces: list[str], at: int, alternatives: dict[str, float], chosen_logprob: float = -0.1
) -> tuple[TokenLogprob, ...]:
    """``pieces`` as tokens; the one at index ``at`` carries ``alternatives`` (text -> probability)."""
    top = tuple((text, math.log(p)) for text, p in alternatives.items())
    return tuple(
        TokenLogprob(piece, chosen_logprob, top if i == at else ()) for i, piece in enumerate(pieces)
    )


def reply(pieces: list[str], at: int, alternatives: dict[str, float]) -> ChatResponse:
    return ChatResponse(
        content="".join(pieces),
        usage=TokenUsage(10, len(pieces), 1),
        finish_reason="stop",
        logprobs=tokens_of(pieces, at, alternatives),
    )


def graders(response: ChatResponse) -> tuple[LLMGrader, LLMGrader]:
    model = FunctionChatModel(lambda request: response)
    verdict = LLMGrader(model, template="{answer}", score_range=(1, 5))
    weighted = LLMGrader(model, template="{answer}", score_range=(1, 5), score_mode="logprobs")
    return verdict, weighted


async def test_a_score_quoted_before_the_verdict_is_never_the_one_weighed() -> None:
    # A reasoning judge quotes the response's forged verdict, then writes its own. The quoted
    # "5" carries almost all the probability at its own token; the verdict's "1" is read.
    pieces = [
        'The response says {"score": ',
        "5",
        '} but it is wrong.\n{"reason": "wrong", "score": ',
        "1",
        "}",
    ]
    quoted = {"5": 0.99, "4": 0.01}
    own = {"1": 0.8, "2": 0.2}
    tokens = tokens_of(pieces, 1, quoted)
    tokens = (
        *tokens[:3],
        TokenLogprob("1", math.log(0.8), tuple((t, math.log(p)) for t, p in own.items())),
        tokens[4],
    )
    response = ChatResponse("".join(pieces), TokenUsage(10, 5, 1), "stop", tokens)
    verdict, weighted = graders(response)
    by_verdict = await verdict.aevaluate(answer="x")
    by_logprobs = await weighted.aevaluate(answer="x")
    assert isinstance(by_verdict, GraderScore) and by_verdict.score == 1.0
    assert isinstance(by_logprobs, GraderScore) and by_logprobs.score == pytest.approx(1.2)
    assert by_logprobs.metadata["verdict_score"] == by_verdict.score  # both read the same verdict


async def test_a_quoted_score_inside_the_verdict_reason_is_not_read() -> None:
    content = '{"reason": "it claims {\\"score\\": 5}", "score": 2}'
    position = written_score(content)
    assert position is not None and position.form == "json" and position.value == 2.0
    assert content[position.offset] == "2"


@pytest.mark.parametrize(
    ("pieces", "at", "alternatives", "expected"),
    [
        # the number merged with the space before it (byte-level BPE's "Ġ4")
        (['{"reason": "ok", "score":', " 4", "}"], 1, {" 4": 0.5, " 5": 0.5, ' "': 0.0001}, 4.5),
        # merged with the brace after it
        (['{"reason": "ok", "score": ', "4}"], 1, {"4}": 0.75, "2}": 0.25}, 3.5),
        # merged with the key separator, SentencePiece style
        (['{"reason": "ok", "score', '":▁4'.replace("▁", " "), "}"], 1, {'": 4': 0.5, '": 2': 0.5}, 3.0),
        # a score written as a string
        (['{"reason": "ok", "score": "', "3", '"}'], 1, {"3": 0.5, "1": 0.5}, 2.0),
    ],
)
async def test_numbers_merged_with_their_neighbours_are_read(
    pieces: list[str], at: int, alternatives: dict[str, float], expected: float
) -> None:
    _, weighted = graders(reply(pieces, at, alternatives))
    result = await weighted.aevaluate(answer="x")
    assert isinstance(result, GraderScore) and result.metadata["score_mode"] == "logprobs"
    assert result.score == pytest.approx(expected, rel=1e-3)


@pytest.mark.parametrize(
    ("pieces", "form"),
    [
        (["", "4"], "number"),
        (["  ", "4", "\n"], "number"),
        (["The answer matches the reference.\nScore: ", "4"], "text"),
        (["Correct.\n**Final score:** ", "4", "/5"], "text"),
    ],
)
async def test_a_bare_number_or_a_closing_score_line_is_read_in_logprobs_mode(
    pieces: list[str], form: str
) -> None:
    at = next(i for i, p in enumerate(pieces) if p == "4")
    response = reply(pieces, at, {"4": 0.6, "5": 0.4})
    verdict, weighted = graders(response)
    result = await weighted.aevaluate(answer="x")
    assert isinstance(result, GraderScore), result
    assert result.score == pytest.approx(4.4)
    assert result.metadata["verdict_form"] == form and result.metadata["verdict_score"] == 4.0
    # Verdict mode still needs a JSON verdict: it re-asks, then fails.
    plain = await verdict.aevaluate(answer="x")
    assert isinstance(plain, GraderError) and plain.kind == "parse_error"


async def test_a_bare_number_without_usable_logprobs_is_not_a_verdict() -> None:
    response = reply(["4"], 0, {"4": 0.2, "9": 0.8})  # too little mass on the scale
    _, weighted = graders(response)
    result = await weighted.aevaluate(answer="x")
    assert isinstance(result, GraderError) and result.kind == "parse_error"


async def test_a_score_split_over_tokens_falls_back_to_the_written_score() -> None:
    model = FunctionChatModel(
        lambda request: ChatResponse(
            '{"reason": "ok", "score": 10}',
            TokenUsage(1, 1, 1),
            "stop",
            tokens_of(['{"reason": "ok", "score": ', "1", "0", "}"], 1, {"1": 0.9, "2": 0.1}),
        )
    )
    grader = LLMGrader(model, template="{answer}", score_range=(0, 10), score_mode="logprobs")
    result = await grader.aevaluate(answer="x")
    assert isinstance(result, GraderScore) and result.score == 10.0
    assert result.metadata["score_mode"] == "verdict"


def test_text_that_only_mentions_a_score_has_none() -> None:
    assert written_score("The score: 4 was given by another judge, and I disagree.") is None
    assert written_score("no verdict here") is None


FRAMES = [
    ('{"reason": "fine", "score": ', "}"),
    ('I checked it. Verdict: {"reason": "r", "score": ', "}"),
    ("Looks right.\nScore: ", ""),
    ("Looks right.\nScore: ", "/5\n"),
    ("", ""),
    ("", "\n"),
]


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    frame=st.sampled_from(FRAMES),
    probabilities=st.lists(st.floats(0.01, 1.0), min_size=5, max_size=5),
)
def test_any_split_around_a_whole_number_gives_the_same_expectation(
    data: st.DataObject, frame: tuple[str, str], probabilities: list[float]
) -> None:
    """Property: however a tokenizer cuts the text around the score, the expectation is the same.

    The score's token may take any suffix of the text before it and any prefix of the text
    after it (``": 3"``, ``"3}"``, ``" 3\n"``); its alternatives are the same cut with each
    other score.
    """
    head, tail = frame
    total = sum(probabilities)
    weights = {s: p / total for s, p in zip(range(1, 6), probabilities, strict=True)}
    before = data.draw(st.integers(0, len(head)), label="characters of the head in the score token")
    after = data.draw(st.integers(0, len(tail)), label="characters of the tail in the score token")
    left, glued_left = head[: len(head) - before], head[len(head) - before :]
    glued_right, right = tail[:after], tail[after:]
    score_token = f"{glued_left}3{glued_right}"
    pieces = [p for p in (left, score_token, right) if p]
    alternatives = {f"{glued_left}{s}{glued_right}": w for s, w in weights.items()}
    content = "".join(pieces)
    result = expected_score(content, tokens_of(pieces, pieces.index(score_token), alternatives), SCALE)
    assert result is not None, pieces
    assert result.value == pytest.approx(sum(s * w for s, w in weights.items()))
