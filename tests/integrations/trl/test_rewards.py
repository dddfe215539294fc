"""The reward functions called directly, as TRL calls them: values, failures, limits, pickling."""

from __future__ import annotations

import asyncio
import inspect
import json
import pickle
import re
from pathlib import Path

import pytest

from openjudge.config import ConfigError
from openjudge.graders.function_grader import FunctionGrader
from openjudge.graders.llm_grader import LLMGrader
from openjudge.integrations.trl import OpenJudgeReward, OpenJudgeRewards
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest
from openjudge.runner.aggregators import WeightedMeanAggregator
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel, ReplyFunction
from openjudge.testing.judge_server import JudgeServerProcess
from tests.integrations.trl.helpers import write_graders_yaml

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("trl_drops_unscorable")]


class SlowJudge:
    """An in-process judge: replies ``score=N`` from the answer text after a delay; counts peak in-flight."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.in_flight = 0
        self.peak = 0
        self.calls = 0

    async def __call__(self, request: ChatRequest) -> str:
        self.calls += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        text = str(request.messages[-1]["content"])
        if "FAIL" in text:
            raise ChatModelError("judge down", status_code=503, retryable=False)
        match = re.search(r"score=(\d)", text)
        return json.dumps({"reason": "ok", "score": int(match.group(1)) if match else 3})


def make_runner(judge: ReplyFunction, *, with_aggregator: bool = True) -> GradingRunner:
    """``correct`` (the answer is in the response) and ``helpful`` (``judge`` on a 1-5 scale)."""
    model = FunctionChatModel(judge)
    return GradingRunner(
        {
            "correct": GraderConfig(
                FunctionGrader(
                    lambda response, answer: answer in response, name="correct", score_range=(0, 1)
                ),
                {"response": "response", "answer": "answer"},
            ),
            "helpful": GraderConfig(
                LLMGrader(model, name="helpful", template="Q: {q}\nA: {a}", score_range=(1, 5), max_reasks=0),
                {"q": "prompt", "a": "response"},
            ),
        },
        aggregators=[WeightedMeanAggregator("reward", {"correct": 2, "helpful": 1})]
        if with_aggregator
        else None,
        show_progress=False,
    )


async def call(func: OpenJudgeReward, completions: list[str], **columns: object) -> list[float | None]:
    """Exactly TRL's call: keyword arguments, one value per completion in each column."""
    n = len(completions)
    return await func(
        prompts=["2+2?"] * n,
        completions=completions,
        completion_ids=[[1, 2]] * n,
        answer=["4"] * n,
        trainer_state=None,
        **columns,
    )


async def test_per_grader_functions_drop_a_failed_completion_from_every_column() -> None:
    judge = SlowJudge()
    rewards = OpenJudgeRewards(make_runner(judge))
    correct, helpful = rewards.per_grader()
    assert (correct.__name__, helpful.__name__) == ("correct", "helpful")
    completions = ["4 score=5", "5 score=1", "4 FAIL"]
    # As TRL calls them: together, on one batch. The judge failed on the third completion, so
    # `correct` leaves it out too: TRL's nansum would otherwise train it on `correct` alone.
    by_correct, by_helpful = await asyncio.gather(call(correct, completions), call(helpful, completions))
    assert by_correct == [1.0, 0.0, None]
    assert by_helpful == [1.0, 0.0, None]  # normalised; the failure is None
    assert judge.calls == 3  # the batch was judged once for both functions


async def test_the_functions_of_a_set_judge_equal_batches_once_each_time() -> None:
    judge = SlowJudge()
    rewards = OpenJudgeRewards(make_runner(judge))
    correct, helpful = rewards.grader("correct"), rewards.grader("helpful")  # one by one: still together
    assert await call(correct, ["4 score=5", "4 FAIL"]) == [1.0, None]
    assert await call(helpful, ["4 score=5", "4 FAIL"]) == [1.0, None]  # the same batch: read, not judged
    assert judge.calls == 2
    assert await call(correct, ["4 score=5", "4 FAIL"]) == [1.0, None]  # a new batch, equal to the last
    assert judge.calls == 4
    alone = OpenJudgeRewards(make_runner(SlowJudge())).grader("correct")
    assert await call(alone, ["4 score=5", "4 FAIL"]) == [1.0, 1.0]  # no judge among its set's functions


async def test_raw_scores_fallback_and_aggregate() -> None:
    raw = OpenJudgeRewards(make_runner(SlowJudge()), normalize=False, fallback_score=-1.0)
    assert await call(raw.grader("helpful"), ["4 score=5", "4 FAIL"]) == [5.0, -1.0]
    correct, helpful = raw.per_grader()
    # fallback: the failed grading gets the chosen number; the completion's other scores stand.
    assert await call(correct, ["4 score=5", "4 FAIL"]) == [1.0, 1.0]
    assert await call(helpful, ["4 score=5", "4 FAIL"]) == [5.0, -1.0]
    agg = OpenJudgeRewards(make_runner(SlowJudge())).aggregate()
    assert agg.__name__ == "reward" and agg.is_aggregate
    assert await call(agg, ["4 score=5", "5 score=3", "4 FAIL"]) == [1.0, pytest.approx(0.5 / 3), None]


async def test_default_mean_aggregate_and_name_errors() -> None:
    rewards = OpenJudgeRewards(make_runner(SlowJudge(), with_aggregator=False))
    assert rewards.aggregate_names == ("mean",)
    assert await call(rewards.aggregate(), ["4 score=5", "5 score=3"]) == [1.0, 0.25]
    with pytest.raises(KeyError, match="no grader named 'nope'"):
        rewards.grader("nope")
    with pytest.raises(ConfigError, match="no aggregator named 'nope'"):
        rewards.aggregate("nope")


async def test_one_limit_is_shared_by_every_function_of_the_set() -> None:
    judge = SlowJudge(delay_s=0.05)
    rewards = OpenJudgeRewards(make_runner(judge), max_concurrency=3)
    completions = [f"4 score=4 #{i}" for i in range(12)]
    # TRL awaits all async reward functions of a batch together (asyncio.gather).
    results = await asyncio.gather(
        call(rewards.grader("helpful"), completions), call(rewards.aggregate(), completions)
    )
    assert results[0] == [0.75] * 12
    assert results[1] == [pytest.approx((2 + 0.75) / 3)] * 12
    assert judge.calls == 24
    assert judge.peak == 3  # never more than the set's limit, across both functions


async def test_trl_logging_hooks() -> None:
    metrics: dict[str, list[float]] = {}
    extra: dict[str, list[object]] = {}

    def log_metric(name: str, value: float) -> None:
        metrics.setdefault(name, []).append(value)

    def log_extra(column: str, values: list[object]) -> None:
        extra.setdefault(column, []).extend(values)

    rewards = OpenJudgeRewards(make_runner(SlowJudge()), log_reasons=True)
    await call(rewards.aggregate(), ["4 score=5", "4 FAIL"], log_metric=log_metric, log_extra=log_extra)
    assert metrics == {
        "openjudge/correct/failed": [0.0],
        "openjudge/helpful/failed": [0.5],
        "openjudge/reward/failed": [0.5],
    }
    assert extra["openjudge/helpful/error"] == ["", "provider_error"]
    assert extra["openjudge/reward/error"] == ["", "provider_error"]
    assert extra["openjudge/helpful/reason"][0] == "ok"
    assert "judge down" in str(extra["openjudge/helpful/reason"][1])

    quiet = OpenJudgeRewards(make_runner(SlowJudge()), log_failures=False)
    metrics.clear()
    await call(quiet.grader("helpful"), ["4"], log_metric=log_metric)
    assert metrics == {}


async def test_pickled_functions_rebuild_from_the_config_once_per_process(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    rewards = OpenJudgeRewards.from_config(
        write_graders_yaml(tmp_path, judge_server.base_url), max_concurrency=5
    )
    funcs = [*rewards.per_grader(), rewards.aggregate()]
    copies = pickle.loads(pickle.dumps(funcs))
    assert [f.__name__ for f in copies] == ["correct", "helpful", "reward"]
    assert copies[0].rewards is copies[2].rewards  # one set (graders, providers, limit) per process
    assert copies[0].rewards.max_concurrency == 5
    again = pickle.loads(pickle.dumps(funcs[1]))
    assert again.rewards is copies[0].rewards
    assert await call(copies[2], ["4 #oj:score=5", "5 #oj:status=503"]) == [1.0, None]


def test_runner_built_sets_refuse_to_pickle_with_a_fix() -> None:
    rewards = OpenJudgeRewards(make_runner(SlowJudge()))
    with pytest.raises(TypeError, match=r"OpenJudgeRewards\.from_config"):
        pickle.dumps(rewards.per_grader())


def test_invalid_options() -> None:
    with pytest.raises(ValueError, match="fallback_score"):
        OpenJudgeRewards(make_runner(SlowJudge()), fallback_score=float("nan"))
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenJudgeRewards(make_runner(SlowJudge()), max_concurrency=0)
    with pytest.raises(ConfigError, match="cannot read the config file"):
        OpenJudgeRewards.from_config("/nonexistent/graders.yaml")


def test_older_trl_sees_an_async_function() -> None:
    # TRL 0.27 asks asyncio.iscoroutinefunction(f), 1.0-1.13 inspect.iscoroutinefunction(f) about
    # the object itself (1.14+ also looks at f.__call__); anything else is called without an await.
    f = OpenJudgeRewards(make_runner(SlowJudge())).grader("helpful")
    assert inspect.iscoroutinefunction(f)
    assert asyncio.iscoroutinefunction(f)
    assert list(inspect.signature(f).parameters) == ["prompts", "completions", "completion_ids", "kwargs"]
    assert f.__name__ == "helpful"
