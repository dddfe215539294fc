"""A response's lone surrogate never stops a trainer's dump or log.

The texts openjudge hands to trainers (reasons in ``reward_extra_info``, the rollout dump
rows) follow the one rule of :mod:`openjudge._text`: a lone surrogate becomes the six
characters ``\\udXXX``, so VERL's own ``json.dumps(..., ensure_ascii=False)`` dump, our
rollout dump and any strict JSON reader handle them.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from pydantic_core import from_json

from openjudge.graders.function_grader import FunctionGrader
from openjudge.integrations.scoring._scorer import RewardScorer
from openjudge.integrations.verl._settings import OpenJudgeVerlSettings
from openjudge.integrations.verl.sampler import write_rollout_dump
from openjudge.results import GraderScore
from openjudge.runner.grading_runner import GraderConfig, GradingRunner


class _Odd:
    def __str__(self) -> str:  # written through json.dumps(default=str)
        return "odd \udc80"


def test_the_rollout_dump_writes_lone_surrogates_as_six_characters(tmp_path: Path) -> None:
    infos = [
        {"openjudge/judge/reason": "quotes x\ud800y", "openjudge/failed": 0.0, "k\udfff": _Odd()},
        {"openjudge/judge/reason": "plain é 😀", "openjudge/failed": 1.0},
    ]
    path = write_rollout_dump(str(tmp_path), 3, ["u1_0_0", "u0_0_0"], infos)
    lines = path.read_bytes().decode("utf-8").splitlines()  # strict UTF-8
    rows = [from_json(line) for line in lines]  # pydantic's strict reader: no lone surrogates
    assert rows == [
        {"uid": "u0_0_0", "step": 3, "openjudge/judge/reason": "plain é 😀", "openjudge/failed": 1.0},
        {
            "uid": "u1_0_0",
            "step": 3,
            "openjudge/judge/reason": "quotes x\\ud800y",
            "openjudge/failed": 0.0,
            "k\\udfff": "odd \\udc80",
        },
    ]


def test_reasons_handed_to_trainers_are_encodable() -> None:
    def echo(response: str) -> GraderScore:
        return GraderScore(name="echo", score=1.0, reason=f"saw {response}")

    runner = GradingRunner(
        {"echo": GraderConfig(FunctionGrader(echo, score_range=(0, 1)), {"response": "response"})},
        show_progress=False,
    )
    settings = OpenJudgeVerlSettings(config="x", include_reasons=True)
    scored = anyio.run(RewardScorer(runner, settings).score, {"response": "a\udc00b"})
    reason = scored.extra["openjudge/echo/reason"]
    assert reason == "saw a\\udc00b"
    assert json.dumps(scored.extra, ensure_ascii=False).encode("utf-8")  # as VERL dumps it
