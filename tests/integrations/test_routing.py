"""Graders per row in training: VERL, TRL and SkyRL route one config the same way.

The rows carry VERL's ``data_source`` (TRL and SkyRL pass dataset columns as sample fields
too), so ``when: {data_source: ...}`` is VERL's own per-source dispatch. A row's reward is
the aggregate over the graders that apply to it; a grader that does not apply is neither a
score nor an error; a row that no grader applies to is a failed sample (``invalid_input``),
handled by the failure policy.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import skyrl_gym  # type: ignore[import-untyped]  # skyrl-gym ships no types

from openjudge.graders.comparison import ListwiseRankingGrader
from openjudge.graders.provided_score import ProvidedScoreGrader
from openjudge.integrations.scoring import FailureRateExceeded
from openjudge.integrations.skyrl import register_env
from openjudge.integrations.trl import OpenJudgeRewards, OpenJudgeTRLSettings
from openjudge.integrations.verl import compute_score
from openjudge.integrations.verl._ledger import reset_run_ledgers
from openjudge.integrations.verl.group import GroupSettings
from openjudge.integrations.verl.group._verdict import MemberReward
from openjudge.integrations.verl.group.judges import GraderGroupJudge
from openjudge.runner import GraderConfig, GradingRunner, WeightedMeanAggregator
from tests.integrations.verl.group.scripted import listwise_judge, member

pytestmark = pytest.mark.anyio

GRADERS = """\
graders:
  math: {type: number_accuracy, when: {data_source: gsm8k}, mapper: {response: response, reference: ground_truth}}
  facts: {type: string_match, when: {data_source: trivia}, mapper: {response: response, reference: ground_truth}}
aggregators:
  - {type: weighted_mean, name: total, weights: {math: 1, facts: 1}}
"""


@pytest.fixture
def graders(tmp_path: Path) -> Path:
    reset_run_ledgers()  # VERL's ledger outside Ray is the process's: a new run per test
    path = tmp_path / "graders.yaml"
    path.write_text(GRADERS, encoding="utf-8")
    return path


async def test_verl_scores_each_source_with_its_grader_and_fails_a_source_nobody_grades(
    graders: Path,
) -> None:
    options = {"config": str(graders), "on_failure": "fallback", "fallback_score": -1.0}
    math = await compute_score("gsm8k", "The answer is 42", "42", {}, openjudge=options)
    facts = await compute_score("trivia", "Paris", "Paris", {}, openjudge=options)
    poem = await compute_score("poetry", "old pond", "frog", {}, openjudge=options)
    assert math.keys() == facts.keys() == poem.keys()  # VERL needs the same keys on every row
    assert (math["score"], math["openjudge/failed"], math["openjudge/math"]) == (1.0, 0.0, 1.0)
    assert (math["openjudge/facts"], math["openjudge/facts/error"], math["openjudge/facts/error_kind"]) == (
        0.0,
        0.0,
        "",
    )
    assert (math["openjudge/facts/not_applicable"], math["openjudge/math/not_applicable"]) == (1.0, 0.0)
    assert (facts["score"], facts["openjudge/math/not_applicable"]) == (1.0, 1.0)
    # no grader applies: a failed sample, flagged, given the policy's value; never a silent 0
    assert (poem["score"], poem["openjudge/failed"]) == (-1.0, 1.0)
    assert (poem["openjudge/math/error_kind"], poem["openjudge/total/error_kind"]) == (
        "invalid_input",
        "invalid_input",
    )


async def test_trl_per_grader_functions_return_none_where_their_grader_does_not_apply(graders: Path) -> None:
    """TRL's own multi-task way: ``None`` is "not this function's sample", left out of the
    sum; it is no failure, so even a zero failure ceiling is never reached."""
    settings = OpenJudgeTRLSettings.model_validate(
        {"config": str(graders), "max_failure_rate": 0.0, "failure_window": 1, "breaker_failures": 0}
    )
    rewards = OpenJudgeRewards.from_settings(settings)
    math, facts = rewards.per_grader()
    sources = ["gsm8k", "trivia", "gsm8k", "trivia"]
    truths = ["42", "Paris", "7", "Rome"]
    completions = ["42", "Paris", "8", "Paris"]
    for _ in range(3):  # many batches: routed-away rows never count as failures
        assert await math(
            prompts=["q"] * 4, completions=completions, data_source=sources, ground_truth=truths
        ) == [1.0, None, 0.0, None]
        assert await facts(
            prompts=["q"] * 4, completions=completions, data_source=sources, ground_truth=truths
        ) == [None, 1.0, None, 0.0]
    total = rewards.aggregate()
    assert await total(
        prompts=["q"] * 4, completions=completions, data_source=sources, ground_truth=truths
    ) == [1.0, 1.0, 0.0, 0.0]
    with pytest.raises(
        FailureRateExceeded, match="1 of the last 1 samples failed"
    ):  # no grader applies: a failure
        await total(prompts=["q"], completions=["x"], data_source=["poetry"], ground_truth=["y"])


def test_skyrl_routes_by_the_rows_extras(graders: Path) -> None:
    register_env("openjudge-routing-test", config=str(graders))

    def step(source: str, action: str, truth: str) -> dict[str, object]:
        extras = {"data_source": source, "reward_spec": {"ground_truth": truth}}
        env = skyrl_gym.make("openjudge-routing-test", env_config={}, extras=extras)
        env.init([{"role": "user", "content": "q"}])
        out = env.step(action)
        info: dict[str, object] = out["metadata"]["openjudge"]
        return {"reward": out["reward"], **info, "metrics": env.get_metrics()}

    math = step("gsm8k", "42", "42")
    assert (math["reward"], math["failed"], math["errors"]) == (1.0, False, {})
    assert math["scores"] == {"math": 1.0, "facts": None, "total": 1.0}
    metrics = math["metrics"]
    assert isinstance(metrics, dict) and "openjudge/facts" not in metrics  # no value to average
    assert metrics["openjudge/facts/error"] == 0.0
    poem = step("poetry", "old pond", "frog")
    assert (poem["reward"], poem["failed"]) == (0.0, True)
    assert poem["errors"] == {"math": "invalid_input", "facts": "invalid_input", "total": "invalid_input"}


@pytest.mark.parametrize(("source", "ranked"), [("demo", True), ("other", False)])
def test_verl_group_judging_routes_a_group_grader_by_data_source(source: str, ranked: bool) -> None:
    """A group no group grader applies to keeps the reward loop's reward, with no judge call."""
    model, seen = listwise_judge()
    runner = GradingRunner(
        {
            "rank": GraderConfig(
                ListwiseRankingGrader(model),
                {"query": "query", "responses": "responses"},
                when={"data_source": source},
            ),
            "pointwise": GraderConfig(ProvidedScoreGrader(score_range=(0, 1)), {"score": "pointwise"}),
        },
        aggregators=[WeightedMeanAggregator("reward", {"pointwise": 1.0, "rank": 1.0})],
    )
    judge = GraderGroupJudge(runner, GroupSettings(), source="group.yaml")
    members = {k: member(k, f"answer q{q}", pointwise=0.5) for k, q in enumerate([3, 9, 1])}  # source: demo
    verdict = asyncio.run(judge.judge(members, 3))
    outcomes = [verdict.outcomes[k] for k in range(3)]
    assert all(isinstance(o, MemberReward) for o in outcomes)
    assert len(seen) == (1 if ranked else 0)
    if ranked:
        assert [o.reward for o in outcomes] == [(0.5 + 0.5) / 2, (0.5 + 1.0) / 2, (0.5 + 0.0) / 2]  # type: ignore[union-attr]
    else:
        assert [o.reward for o in outcomes] == [0.5, 0.5, 0.5]  # type: ignore[union-attr]
        extra = outcomes[0].extra  # type: ignore[union-attr]
        assert (extra["openjudge/rank"], extra["openjudge/rank/error"], extra["openjudge/group/failed"]) == (
            0.0,
            0.0,
            0.0,
        )
