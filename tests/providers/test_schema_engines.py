"""What each engine we ship or test against enforces of the judge schema openjudge sends.

* llama.cpp (the converter llama-cpp-python's server runs on ``json_object`` + ``schema``):
  an ``enum`` becomes grammar alternatives; number bounds are dropped (the grader's range
  check is what holds there).
* llguidance (the in-process transformers judge's constrained decoder, and vLLM's
  ``guidance`` backend): enums, number bounds and array lengths are all enforced.
* The in-process judge end to end: a model whose favourite score is 4, on a 1-3 scale,
  writes a score in the scale when constrained, and an out-of-range one when not.

The test judge server's checks are in ``tests/testing/test_judge_server_schemas.py``; the
real llama.cpp server in ``tests/e2e``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openjudge.graders._verdict_schema import ranking_output, verdict_output
from openjudge.graders.comparison import ListwiseVerdict
from openjudge.graders.llm_grader import JudgeVerdict, LLMGrader
from openjudge.models.chat_model import OutputSpec
from openjudge.providers._structured import response_format_for, strict_schema
from openjudge.results import GraderError, GraderScore, ScoreRange
from tests.providers.transformers import tiny
from tests.providers.transformers.helpers import judge

llama_grammar = pytest.importorskip("llama_cpp.llama_grammar", reason="needs llama-cpp-python")
pytest.importorskip("llguidance")

ONE_TO_FIVE = verdict_output(JudgeVerdict, ScoreRange(low=1, high=5))
ZERO_TO_ONE = verdict_output(JudgeVerdict, ScoreRange(low=0, high=1))


def gbnf(output: OutputSpec) -> dict[str, str]:
    """The grammar llama-cpp-python's server builds for a ``json_object`` request, rule by rule."""
    schema = response_format_for(output, "json_object")["schema"]
    text = llama_grammar.json_schema_to_gbnf(json.dumps(schema))
    return dict(line.split(" ::= ", 1) for line in text.splitlines())


def test_llama_cpp_turns_the_enum_into_alternatives_and_drops_number_bounds() -> None:
    rules = gbnf(ONE_TO_FIVE)
    assert rules["score"] == '"1" | "2" | "3" | "4" | "5"'
    assert rules["score-kv"] == '"\\"score\\"" space ":" space score'
    bounded = gbnf(ZERO_TO_ONE)
    assert bounded["score-kv"] == '"\\"score\\"" space ":" space number'  # any number: 0-1 is not enforced
    assert "score" not in bounded


class Matcher:
    """llguidance over the tiny test tokenizer, compiled as the in-process judge compiles it."""

    def __init__(self, output: OutputSpec) -> None:
        from openjudge.providers.transformers._constraints import GrammarCompiler

        self.tokenizer = tiny.tokenizer()
        compiler = GrammarCompiler(self.tokenizer, len(self.tokenizer), [self.tokenizer.eos_token_id])
        self.matcher = compiler.matcher(json.dumps(strict_schema(output.schema)))

    def accepts(self, text: str) -> bool:
        """Whether the grammar allows ``text`` as a whole reply."""
        tokens = self.tokenizer.encode(text, add_special_tokens=False)
        matcher = self.matcher.deep_copy()  # type: ignore[attr-defined]  # llguidance's LLMatcher
        return bool(
            matcher.validate_tokens(tokens) == len(tokens) and matcher.consume_tokens(tokens)
        ) and bool(matcher.is_accepting())


@pytest.mark.parametrize(
    ("score", "allowed"), [("1", True), ("3", True), ("5", True), ("0", False), ("9", False)]
)
def test_llguidance_enforces_the_integer_scale(score: str, allowed: bool) -> None:
    assert Matcher(ONE_TO_FIVE).accepts(f'{{"reason": "fine", "score": {score}}}') is allowed


@pytest.mark.parametrize(
    ("score", "allowed"), [("0", True), ("0.5", True), ("1", True), ("2", False), ("-1", False)]
)
def test_llguidance_enforces_number_bounds(score: str, allowed: bool) -> None:
    assert Matcher(ZERO_TO_ONE).accepts(f'{{"reason": "fine", "score": {score}}}') is allowed


@pytest.mark.parametrize(
    ("ranking", "allowed"),
    [
        ('"R2", "R1", "R3"', True),
        ('"R1", "R4", "R2"', False),
        ('"R1", "R2"', False),
        ('"R1", "R2", "R3", "R1"', False),
    ],
)
def test_llguidance_enforces_the_ranking_ids_and_length(ranking: str, allowed: bool) -> None:
    output = ranking_output(ListwiseVerdict, ["R1", "R2", "R3"])
    assert Matcher(output).accepts(f'{{"reason": "r", "ranking": [{ranking}]}}') is allowed


@pytest.fixture(scope="module")
def wired_judge(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny.wired_judge(tmp_path_factory.mktemp("judge"))


@pytest.mark.anyio
async def test_the_in_process_judge_keeps_to_the_scale_only_when_it_constrains(wired_judge: Path) -> None:
    """Its favourite score is 4 (``tiny.SCORE_WEIGHTS``); the scale here is 1 to 3."""
    template = "Question: {question}\nAnswer: {answer}\nScore the answer from 1 to 3."
    constrained = LLMGrader(
        judge(wired_judge, structured_output="json_schema"), template=template, score_range=(1, 3)
    )
    result = await constrained.aevaluate(question="2+2?", answer="4")
    assert isinstance(result, GraderScore) and result.score in (1.0, 2.0, 3.0)
    assert result.usage is not None and result.usage.requests == 1  # right the first time
    free = LLMGrader(judge(wired_judge, structured_output="prompt"), template=template, score_range=(1, 3))
    unconstrained = await free.aevaluate(question="2+2?", answer="4")
    assert isinstance(unconstrained, GraderError) and unconstrained.kind == "parse_error"
    assert "score 4 is outside the range 1 to 3" in unconstrained.message
