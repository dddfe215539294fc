"""The failure policy and the fixed ``reward_extra_info`` keys, with in-process judges."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from integrations.verl.scoring import SampleScorer, shared_scorer
from integrations.verl.settings import OpenJudgeVerlSettings
from openjudge.config import ConfigError
from openjudge.graders.function_grader import FunctionGrader
from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.chat_model import ChatRequest
from openjudge.models.errors import ChatModelError
from openjudge.runner.aggregators import MinAggregator, WeightedMeanAggregator
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from providers.testing.function_model import FunctionChatModel


def judge_reply(request: ChatRequest) -> str:
    text = json.dumps(request.messages)
    if "BROKEN" in text:
        raise ChatModelError("server said no", kind="provider_error", retryable=False)
    return json.dumps({"reason": "fine", "score": 4})


def make_runner(aggregators: list[WeightedMeanAggregator | MinAggregator] | None = None) -> GradingRunner:
    judge = FunctionChatModel(judge_reply)
    return GradingRunner(
        {
            "exact": GraderConfig(
                FunctionGrader(lambda response, ground_truth: response == ground_truth, score_range=(0, 1)),
                {"response": "response", "ground_truth": "ground_truth"},
            ),
            "judge": GraderConfig(
                LLMGrader(judge, template="{answer}", score_range=(1, 5)), {"answer": "response"}
            ),
        },
        aggregators=aggregators,
        show_progress=False,
    )


GOOD = {"response": "4", "ground_truth": "4"}
BROKEN = {"response": "BROKEN", "ground_truth": "4"}


def test_same_keys_whether_or_not_a_grader_fails() -> None:
    scorer = SampleScorer(
        make_runner([WeightedMeanAggregator("reward")]), OpenJudgeVerlSettings(config="x", fallback_score=-2)
    )
    good, bad = anyio.run(scorer.score_many, [GOOD, BROKEN])
    assert list(good.extra) == list(bad.extra) == list(scorer.keys)
    assert good.reward == (1.0 + 0.75) / 2 and not good.failed
    assert good.extra["openjudge/judge"] == 4.0 and good.extra["openjudge/judge/error"] == 0
    assert bad.reward == -2.0 and bad.failed
    assert bad.extra["openjudge/judge"] is None  # a failure is never a number
    assert bad.extra["openjudge/judge/error"] == 1
    assert bad.extra["openjudge/judge/error_kind"] == "provider_error"
    assert bad.extra["openjudge/exact"] == 0.0 and bad.extra["openjudge/exact/error"] == 0
    assert bad.extra["openjudge/reward"] is None and bad.extra["openjudge/failed"] == 1


def test_one_sample_at_a_time_matches_the_batch() -> None:
    scorer = SampleScorer(make_runner([WeightedMeanAggregator("reward")]), OpenJudgeVerlSettings(config="x"))
    one = anyio.run(scorer.score, BROKEN)
    assert one.reward == 0.0 and one.extra["openjudge/judge/error_kind"] == "provider_error"


def test_without_flags_only_scores_are_reported() -> None:
    settings = OpenJudgeVerlSettings(config="x", flag_failures=False, include_reasons=True)
    scorer = SampleScorer(make_runner([WeightedMeanAggregator("reward")]), settings)
    assert scorer.keys == (
        "openjudge/exact",
        "openjudge/exact/reason",
        "openjudge/judge",
        "openjudge/judge/reason",
        "openjudge/reward",
    )
    bad = anyio.run(scorer.score, BROKEN)
    assert bad.extra["openjudge/judge/reason"] == "server said no"
    assert bad.extra["openjudge/judge"] is None and bad.reward == 0.0


def test_the_aggregate_is_the_first_aggregator_or_the_named_one() -> None:
    runner = make_runner([WeightedMeanAggregator("reward"), MinAggregator("worst")])
    assert SampleScorer(runner, OpenJudgeVerlSettings(config="x")).aggregate == "reward"
    worst = SampleScorer(runner, OpenJudgeVerlSettings(config="x", aggregate="worst"))
    assert anyio.run(worst.score, GOOD).reward == 0.75
    with pytest.raises(ConfigError, match="no aggregator named 'best'"):
        SampleScorer(runner, OpenJudgeVerlSettings(config="x", aggregate="best"))


def test_default_aggregate_is_the_mean_of_every_grader() -> None:
    scorer = SampleScorer(make_runner(), OpenJudgeVerlSettings(config="x"))
    assert scorer.aggregate == "mean"
    assert anyio.run(scorer.score, GOOD).reward == (1.0 + 0.75) / 2


def test_max_concurrent_samples_bounds_samples_in_flight() -> None:
    in_flight = 0
    peak = 0

    async def slow(response: str) -> float:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0.01)
        in_flight -= 1
        return 1.0

    runner = GradingRunner({"slow": GraderConfig(FunctionGrader(slow))}, show_progress=False)
    scorer = SampleScorer(runner, OpenJudgeVerlSettings(config="x", max_concurrent_samples=3))

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(12):
                tg.start_soon(scorer.score, {"response": "r"})

    anyio.run(main)
    assert peak == 3


def test_shared_scorer_is_built_once_per_process(tmp_path: Path) -> None:
    path = tmp_path / "graders.yaml"
    path.write_text(
        "graders:\n  exact:\n    type: string_match\n    mapper: {response: response, reference: ground_truth}\n",
        encoding="utf-8",
    )
    settings = OpenJudgeVerlSettings(config=str(path))
    assert shared_scorer(settings) is shared_scorer(OpenJudgeVerlSettings(config=str(path)))
    assert shared_scorer(settings) is not shared_scorer(
        OpenJudgeVerlSettings(config=str(path), fallback_score=1)
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("graders:\n  exact:\n    type: string_matc\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="did you mean 'string_match'"):
        shared_scorer(OpenJudgeVerlSettings(config=str(bad)))
