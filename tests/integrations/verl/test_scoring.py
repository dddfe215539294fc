"""The failure policy and the fixed ``reward_extra_info`` keys, with in-process judges."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import anyio
import pytest

from openjudge.config import ConfigError
from openjudge.graders.function_grader import FunctionGrader
from openjudge.graders.llm_grader import LLMGrader
from openjudge.integrations.scoring._guard import SampleFailed
from openjudge.integrations.scoring._scorer import RewardScorer
from openjudge.integrations.verl._scoring import shared_scorer
from openjudge.integrations.verl._settings import OpenJudgeVerlSettings
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.runner.aggregators import MinAggregator, WeightedMeanAggregator
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel


def judge_reply(request: ChatRequest) -> str:
    text = json.dumps(request.messages)
    if "BROKEN" in text:
        raise ChatModelError("server said no", kind="provider_error", retryable=False)
    return json.dumps({"reason": "fine", "score": 4})


def make_runner(aggregators: list[WeightedMeanAggregator | MinAggregator] | None = None) -> GradingRunner:
    judge = FunctionChatModel(
        judge_reply, model="judge-model", policy=ProviderPolicy(retry=RetryPolicy(max_attempts=1))
    )
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
FALLBACK = OpenJudgeVerlSettings(config="x", on_failure="fallback", fallback_score=-2)


def test_same_keys_and_only_floats_whether_or_not_a_grader_fails() -> None:
    scorer = RewardScorer(make_runner([WeightedMeanAggregator("total")]), FALLBACK)
    good, bad = anyio.run(scorer.score_many, [GOOD, BROKEN])
    assert list(good.extra) == list(bad.extra) == list(scorer.keys)
    assert scorer.keys == (
        "openjudge/exact",
        "openjudge/exact/error",
        "openjudge/exact/error_kind",
        "openjudge/judge",
        "openjudge/judge/error",
        "openjudge/judge/error_kind",
        "openjudge/total",
        "openjudge/total/error",
        "openjudge/total/error_kind",
        "openjudge/reward",
        "openjudge/failed",
    )
    for extra in (good.extra, bad.extra):  # VERL's metrics, DAPO and GDPO cast these with float()
        numeric = {k: v for k, v in extra.items() if not k.endswith("/error_kind")}
        assert all(type(v) is float and math.isfinite(v) for v in numeric.values()), numeric
    assert good.reward == (1.0 + 0.75) / 2 and not good.failed
    assert good.extra["openjudge/reward"] == good.reward and good.extra["openjudge/failed"] == 0.0
    assert good.extra["openjudge/judge"] == 4.0 and good.extra["openjudge/judge/error"] == 0.0
    assert bad.reward == -2.0 and bad.failed
    assert bad.extra["openjudge/judge"] == 0.0 and bad.extra["openjudge/judge/error"] == 1.0
    assert bad.extra["openjudge/judge/error_kind"] == "provider_error"
    assert bad.extra["openjudge/exact"] == 0.0 and bad.extra["openjudge/exact/error"] == 0.0
    assert bad.extra["openjudge/total/error"] == 1.0
    assert bad.extra["openjudge/reward"] == -2.0 and bad.extra["openjudge/failed"] == 1.0
    assert set(bad.errors) == {"judge"}


def test_drop_raises_so_verl_never_trains_on_the_sample() -> None:
    scorer = RewardScorer(make_runner([WeightedMeanAggregator("total")]), OpenJudgeVerlSettings(config="x"))
    assert anyio.run(scorer.score, GOOD).reward == 0.875
    with pytest.raises(SampleFailed, match=r"judge: provider_error: .*server said no.*on_failure=drop"):
        anyio.run(scorer.score, BROKEN)
    # A batch cannot leave a row out: the failed sample gets the mean of its group's scored rewards.
    good, bad = anyio.run(scorer.score_many, [GOOD, BROKEN], ["u", "u"])
    assert bad.reward == good.reward == 0.875 and bad.extra["openjudge/failed"] == 1.0
    assert (
        bad.extra["openjudge/judge"] == good.extra["openjudge/judge"] == 4.0
    )  # neutral per grader too (GDPO)
    assert bad.extra["openjudge/judge/error"] == 1.0


@pytest.mark.parametrize(
    ("graders", "aggregators", "message"),
    [
        (
            ["exact"],
            ["reward"],
            "aggregator 'reward' would write openjudge/reward, a key the integration writes",
        ),
        (["failed"], ["total"], "grader 'failed' would write openjudge/failed"),
        (["group"], ["total"], "grader 'group' would write openjudge/group"),
        (["group/size"], ["total"], "grader 'group/size' would write openjudge/group/size"),
        (["exact", "exact/error"], ["total"], "the error key of a grader named 'exact'"),
        (["judge/reason"], ["total"], "the reason key of a grader named 'judge'"),
        (["mean"], [], "the default aggregate 'mean' and grader 'mean' would both write openjudge/mean"),
    ],
)
def test_names_that_collide_with_the_integrations_keys_are_refused(
    graders: list[str], aggregators: list[str], message: str
) -> None:
    configs = {
        name: GraderConfig(FunctionGrader(lambda response: 1.0, score_range=(0, 1))) for name in graders
    }
    runner = GradingRunner(configs, aggregators=[WeightedMeanAggregator(a) for a in aggregators])
    with pytest.raises(ConfigError) as caught:
        RewardScorer(runner, OpenJudgeVerlSettings(config="x"), source="/abs/graders.yaml")
    assert str(caught.value).count("/abs/graders.yaml: ") == 1 and message in str(caught.value)
    assert "rename" in str(caught.value)


def test_a_collision_is_reported_at_start_naming_the_yaml(tmp_path: Path) -> None:
    path = tmp_path / "graders.yaml"
    path.write_text(
        "graders:\n  exact: {type: string_match, mapper: {response: response, reference: ground_truth}}\n"
        "aggregators:\n  - {type: min, name: reward}\n",
        encoding="utf-8",
    )
    with pytest.raises(
        ConfigError,
        match=rf"{re.escape(str(path))}: aggregator 'reward' would write openjudge/reward.*rename it",
    ):
        shared_scorer(OpenJudgeVerlSettings(config=str(path)))


def test_reasons_on_request() -> None:
    settings = OpenJudgeVerlSettings(
        config="x", include_reasons=True, on_failure="fallback", fallback_score=0.0
    )
    scorer = RewardScorer(make_runner([WeightedMeanAggregator("total")]), settings)
    assert "openjudge/judge/reason" in scorer.keys and "openjudge/total/reason" not in scorer.keys
    bad = anyio.run(scorer.score, BROKEN)
    assert bad.extra["openjudge/judge/reason"] == "server said no"


def test_the_aggregate_is_the_first_aggregator_or_the_named_one() -> None:
    runner = make_runner([WeightedMeanAggregator("total"), MinAggregator("worst")])
    assert RewardScorer(runner, OpenJudgeVerlSettings(config="x")).aggregate == "total"
    worst = RewardScorer(runner, OpenJudgeVerlSettings(config="x", aggregate="worst"))
    assert anyio.run(worst.score, GOOD).reward == 0.75
    with pytest.raises(ConfigError, match="no aggregator named 'best'"):
        RewardScorer(runner, OpenJudgeVerlSettings(config="x", aggregate="best"))


def test_default_aggregate_is_the_mean_of_every_grader() -> None:
    scorer = RewardScorer(make_runner(), OpenJudgeVerlSettings(config="x"))
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
    scorer = RewardScorer(runner, OpenJudgeVerlSettings(config="x", max_concurrent_samples=3))

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
        OpenJudgeVerlSettings(config=str(path), on_failure="fallback", fallback_score=1)
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("graders:\n  exact:\n    type: string_matc\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="did you mean 'string_match'"):
        shared_scorer(OpenJudgeVerlSettings(config=str(bad)))


def test_the_judge_cache_is_off_under_verl(tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    path = tmp_path / "graders.yaml"
    path.write_text(
        "providers:\n  judge: {kind: openai, model: m, base_url: 'http://127.0.0.1:9/v1', api_key: k}\n"
        "graders:\n  q:\n    type: llm\n    provider: judge\n    params: {template: '{answer}', score_range: [1, 5]}\n"
        f"    mapper: {{answer: response}}\ncache: {{path: {cache}}}\n",
        encoding="utf-8",
    )

    def judge_of(scorer: RewardScorer) -> object:
        grader = scorer.runner.grader_configs["q"].grader
        assert isinstance(grader, LLMGrader)
        return grader.model

    off = judge_of(shared_scorer(OpenJudgeVerlSettings(config=str(path))))
    assert getattr(off, "cache", "missing") is None  # no SQLite file per worker; in-flight dedupe stays on
    on = judge_of(shared_scorer(OpenJudgeVerlSettings(config=str(path), judge_cache=True)))
    assert getattr(on, "cache", None) is not None
