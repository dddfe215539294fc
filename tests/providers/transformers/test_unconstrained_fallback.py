"""A tokenizer llguidance cannot read: the judge generates freely, with one warning, instead of failing."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from openjudge.results import GraderScore
from tests.providers.transformers.helpers import grader, judge

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # real (tiny) models run forward passes and generate


def _word_level(source: Path, target: Path) -> Path:
    """The tiny judge with a word-level tokenizer over the same ids: it cannot spell arbitrary text.

    Decoding joins words with spaces, so the wired verdict still reads as JSON
    (``{"reason": " fine ", "score":  4 }``) and the grader can parse it.
    """
    shutil.copytree(source, target)
    tokenizer = target / "tokenizer.json"
    data = json.loads(tokenizer.read_text(encoding="utf-8"))
    data["model"] = {"type": "WordLevel", "vocab": data["model"]["vocab"], "unk_token": "<unk>"}
    data["pre_tokenizer"] = {"type": "WhitespaceSplit"}
    data["decoder"] = None
    tokenizer.write_text(json.dumps(data), encoding="utf-8")
    return target


async def test_logprob_scoring_falls_back_to_free_generation_with_one_warning(
    judge_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = judge(_word_level(judge_path, tmp_path / "judge"), structured_output="json_schema")
    g = grader(model, score_mode="logprobs", top_logprobs=5)
    with caplog.at_level(logging.WARNING, logger="openjudge.providers.transformers._generation"):
        first = await g.aevaluate(question="2+2?", answer="4")
        second = await g.aevaluate(question="3+3?", answer="6")
    for result in (first, second):
        assert isinstance(result, GraderScore), result
        assert 1.0 <= result.score <= 5.0
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert "constrained decoding cannot start with this model's tokenizer" in warnings[0]
    assert "WordLevel vocabulary has no byte-level or byte-fallback tokens" in warnings[0]
    assert "structured_output: prompt" in warnings[0]
    model.close()
