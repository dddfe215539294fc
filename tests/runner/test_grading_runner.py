from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from openjudge.graders.base_grader import BaseGrader, grader_boundary
from openjudge.graders.function_grader import FunctionGrader
from openjudge.graders.llm_grader import LLMGrader
from openjudge.results import GraderError, GraderResult, GraderScore, RowResult
from openjudge.runner.aggregators import GateAggregator, MinAggregator, WeightedMeanAggregator
from openjudge.runner.grading_runner import GraderConfig, GradingRunner, RunnerResult, SampleResult
from openjudge.testing.function_model import FunctionChatModel

pytestmark = pytest.mark.anyio


class Length(BaseGrader):
    default_name = "length"

    @grader_boundary
    async def aevaluate(self, *, response: str) -> GraderScore:
        return GraderScore(name=self.name, score=float(len(response)))


class Sleepy(BaseGrader):
    """Sleeps ``delay`` seconds; tracks how many calls overlap."""

    def __init__(self, delay_s: float) -> None:
        super().__init__(name="sleepy")
        self.delay_s = delay_s
        self.active = 0
        self.peak = 0

    async def aevaluate(self, *, response: str) -> GraderScore:
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await anyio.sleep(self.delay_s if response != "hang" else 60)
        finally:
            self.active -= 1
        return GraderScore(name=self.name, score=1.0)


def quiet(configs: Mapping[str, Any], **kwargs: Any) -> GradingRunner:
    return GradingRunner(configs, show_progress=False, **kwargs)


async def test_results_in_order_one_per_pair_with_mappers() -> None:
    data = [{"answer": {"text": "x" * i}, "ref": "xx"} for i in range(50)]
    runner = quiet(
        {
            "dict_mapper": GraderConfig(Length(), {"response": "answer.text"}),
            "callable_mapper": GraderConfig(Length(), lambda s: {"response": s["ref"]}),
            "exact": (
                FunctionGrader(lambda response, reference: response == reference),
                {"response": "answer.text", "reference": "ref"},
            ),
        },
        max_concurrency=7,
    )
    result = await runner.arun(data)
    assert list(result) == ["dict_mapper", "callable_mapper", "exact"]
    assert [r.score for r in result["dict_mapper"] if isinstance(r, GraderScore)] == [
        float(i) for i in range(50)
    ]
    assert all(isinstance(r, GraderScore) and r.score == 2.0 for r in result["callable_mapper"])
    exact_scores = [r.score for r in result["exact"] if isinstance(r, GraderScore)]
    assert exact_scores == [1.0 if i == 2 else 0.0 for i in range(50)]


def test_mapper_mismatch_is_reported_at_construction() -> None:
    with pytest.raises(
        ValueError, match=r"grader 'len' \(Length\) has no input 'text'; its inputs are: response"
    ):
        quiet({"len": GraderConfig(Length(), {"text": "a", "response": "b"})})
    with pytest.raises(
        ValueError, match=r"mapper for grader 'len' \(Length\) does not provide required input 'response'"
    ):
        quiet({"len": GraderConfig(Length(), {})})
    with pytest.raises(ValueError, match="max_concurrency"):
        quiet({"len": Length()}, max_concurrency=0)
    with pytest.raises(ValueError, match="empty"):
        quiet({})


async def test_bad_samples_become_invalid_input_errors_naming_the_field() -> None:
    runner = quiet(
        {
            "plain": Length(),
            "path": GraderConfig(Length(), {"response": "a.b"}),
            "callable": GraderConfig(Length(), lambda s: {"wrong": 1}),
            "boom": GraderConfig(Length(), lambda s: {"response": 1 / 0}),
        }
    )
    result = await runner.arun([{"a": {"c": 1}}, ["not", "a", "dict"]])  # type: ignore[list-item]
    for name in ("plain", "path", "callable", "boom"):
        assert all(isinstance(r, GraderError) and r.kind == "invalid_input" for r in result[name]), name
    first_plain = result["plain"][0]
    assert isinstance(first_plain, GraderError) and "no input 'response'" in first_plain.message
    first_path = result["path"][0]
    assert isinstance(first_path, GraderError) and "'a.b'" in first_path.message
    second_plain = result["plain"][1]
    assert isinstance(second_plain, GraderError) and "must be a mapping" in second_plain.message
    boom = result["boom"][0]
    assert isinstance(boom, GraderError) and boom.error_type == "ZeroDivisionError"


async def test_concurrency_is_bounded_and_pairs_are_pulled_lazily() -> None:
    sleepy = Sleepy(0.01)
    pulled = 0

    def samples() -> Iterator[dict[str, str]]:
        nonlocal pulled
        for i in range(200):
            pulled += 1
            # Read-ahead is bounded by the workers plus the result buffer (both = concurrency).
            assert pulled - finished <= 2 * 5 + 1
            yield {"response": str(i)}

    finished = 0
    runner = quiet({"s": sleepy}, max_concurrency=5)
    async with runner.astream(samples()) as stream:
        async for _ in stream:
            finished += 1
    assert finished == 200
    assert sleepy.peak == 5


async def test_per_pair_timeout_and_run_deadline() -> None:
    runner = quiet({"s": Sleepy(0.01)}, timeout_s=0.2)
    result = await runner.arun([{"response": "ok"}, {"response": "hang"}])
    ok, hung = result["s"]
    assert isinstance(ok, GraderScore)
    assert isinstance(hung, GraderError) and hung.kind == "timeout" and "0.2s" in hung.message

    slow = quiet({"s": Sleepy(0.1)}, max_concurrency=2, deadline_s=0.25, timeout_s=None)
    started = anyio.current_time()
    result = await slow.arun([{"response": str(i)} for i in range(20)])
    assert anyio.current_time() - started < 0.6
    kinds = [r.kind if isinstance(r, GraderError) else "ok" for r in result["s"]]
    assert kinds.count("ok") >= 4 and kinds.count("timeout") >= 10 and len(kinds) == 20


async def test_grader_exceptions_and_wrong_returns_are_errors() -> None:
    class Broken(BaseGrader):
        async def aevaluate(self, *, response: str) -> GraderResult:
            if response == "raise":
                raise RuntimeError("kaput")
            return 0.5  # type: ignore[return-value]

    result = await quiet({"b": Broken()}).arun([{"response": "raise"}, {"response": "x"}])
    raised, wrong = result["b"]
    assert isinstance(raised, GraderError) and raised.kind == "internal" and raised.message == "kaput"
    assert isinstance(wrong, GraderError) and "returned float" in wrong.message


async def test_aggregators_normalise_declared_ranges() -> None:
    five = FunctionGrader(lambda response: 4.0, name="five", score_range=(1, 5))  # 0.75 normalised
    unit = FunctionGrader(lambda response: 0.25, name="unit", score_range=(0, 1))
    fails = FunctionGrader(lambda response: 1 / 0, name="fails", score_range=(0, 1))
    runner = quiet(
        {"five": five, "unit": unit, "fails": fails},
        aggregators=[
            WeightedMeanAggregator("mean", {"five": 3, "unit": 1}),
            WeightedMeanAggregator("mean_all", on_error="skip"),
            WeightedMeanAggregator("strict"),
            MinAggregator("worst"),
            GateAggregator({"unit": 0.5}, WeightedMeanAggregator(), name="gated"),
        ],
    )
    result = await runner.arun([{"response": "x"}])
    mean, mean_all, strict, worst, gated = (
        result[k][0] for k in ("mean", "mean_all", "strict", "worst", "gated")
    )
    assert isinstance(mean, GraderScore) and mean.score == pytest.approx((3 * 0.75 + 0.25) / 4)
    assert isinstance(mean_all, GraderScore) and mean_all.score == pytest.approx(0.5)
    assert isinstance(strict, GraderError) and "'fails'" in strict.message
    assert isinstance(worst, GraderError)
    assert isinstance(gated, GraderScore) and gated.score == 0.0 and "gate 'unit' failed" in gated.reason


async def test_multiple_datasets_share_one_pool() -> None:
    sleepy = Sleepy(0.05)
    runner = quiet({"s": sleepy}, max_concurrency=8)
    started = anyio.current_time()
    results = await runner.arun_multiple_datasets([[{"response": "a"}] * 4, [{"response": "b"}] * 4])
    assert anyio.current_time() - started < 0.09  # one wave of 8, not two of 4
    assert [len(r["s"]) for r in results] == [4, 4]
    assert sleepy.peak == 8


async def test_astream_delivers_every_sample_with_aggregates() -> None:
    runner = quiet({"len": Length()}, aggregators=MinAggregator())

    async def samples() -> Any:
        for i in range(30):
            await anyio.lowlevel.checkpoint()
            yield {"response": "y" * i}

    got: list[SampleResult] = []
    async with runner.astream(samples()) as stream:
        async for item in stream:
            got.append(item)
    assert sorted(item.index for item in got) == list(range(30))
    for item in got:
        score = item.results["len"]
        assert isinstance(score, GraderScore) and score.score == item.index
        assert item.aggregates["min"] == GraderScore(
            name="min", score=float(item.index), reason="minimum score"
        )


async def test_astream_consumer_can_stop_early() -> None:
    runner = quiet({"s": Sleepy(0.01)}, max_concurrency=4)
    seen = 0
    async with runner.astream({"response": str(i)} for i in range(1000)) as stream:
        async for _ in stream:
            seen += 1
            if seen == 10:
                break
    assert seen == 10


def reply_json(request: object) -> str:
    return json.dumps({"reason": "fine", "score": 3})


def test_runner_reused_across_event_loops_trio_and_sync_facade() -> None:
    model = FunctionChatModel(reply_json)
    judge = LLMGrader(model, name="judge", template="{response}", score_range=(1, 5))
    runner = quiet({"judge": judge}, max_concurrency=4)
    data = [{"response": str(i)} for i in range(10)]

    def scores(result: Mapping[str, list[RowResult]]) -> list[float]:
        return [r.score for r in result["judge"] if isinstance(r, GraderScore)]

    assert scores(asyncio.run(runner.arun(data))) == [3.0] * 10
    assert scores(asyncio.run(runner.arun(data))) == [3.0] * 10
    assert scores(anyio.run(runner.arun, data, backend="trio")) == [3.0] * 10
    assert scores(runner.run(data)) == [3.0] * 10

    async def inside_a_running_loop() -> list[float]:
        return scores(runner.run(data))  # blocks this loop, but works (Jupyter, Ray actors)

    assert asyncio.run(inside_a_running_loop()) == [3.0] * 10

    outcomes: list[list[float]] = []
    threads = [threading.Thread(target=lambda: outcomes.append(scores(runner.run(data)))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes == [[3.0] * 10] * 4
    runner.close()
    assert model.usage.requests == 90  # nine runs of ten samples


async def test_usage_is_summed_per_grader() -> None:
    model = FunctionChatModel(reply_json)
    judge = LLMGrader(model, name="judge", template="{response}")
    result = await quiet({"judge": judge, "len": Length()}).arun([{"response": "abc"}] * 3)
    assert result.usage["judge"].requests == 3 and result.usage["judge"].completion_tokens > 0
    assert result.usage["len"].requests == 0


async def test_cancelling_the_run_is_not_swallowed_by_pair_timeouts() -> None:
    runner = quiet({"s": Sleepy(5.0)}, max_concurrency=4, timeout_s=10.0)
    started = anyio.current_time()
    with anyio.move_on_after(0.2) as scope:
        await runner.arun([{"response": str(i)} for i in range(8)])
    assert scope.cancelled_caught
    assert anyio.current_time() - started < 1.0


class Stubborn(BaseGrader):
    """Swallows the first cancellation it sees, then answers; later calls are quick."""

    def __init__(self) -> None:
        super().__init__(name="stubborn")
        self.swallowed = 0

    async def aevaluate(self, *, response: str) -> GraderScore:
        if response == "slow":
            try:
                await anyio.sleep(5)
            except BaseException:
                self.swallowed += 1
                return GraderScore(name=self.name, score=-1.0)
        await anyio.sleep(0.01)
        return GraderScore(name=self.name, score=1.0)


async def test_a_swallowed_timeout_leaves_no_stray_cancellation() -> None:
    grader = Stubborn()
    runner = quiet({"g": grader}, max_concurrency=1, timeout_s=0.2)
    result = await runner.arun([{"response": "slow"}, {"response": "a"}, {"response": "b"}])
    scores = [r.score for r in result["g"] if isinstance(r, GraderScore)]
    assert scores == [-1.0, 1.0, 1.0]  # the next pairs on the same worker were not cancelled
    assert grader.swallowed == 1


def test_pair_timeouts_under_trio() -> None:
    runner = quiet({"s": Sleepy(0.01)}, timeout_s=0.2)
    result = anyio.run(runner.arun, [{"response": "ok"}, {"response": "hang"}], backend="trio")
    ok, hung = result["s"]
    assert isinstance(ok, GraderScore)
    assert isinstance(hung, GraderError) and hung.kind == "timeout"


def test_an_aggregator_may_not_mix_a_grader_without_a_score_range() -> None:
    judge = FunctionChatModel(lambda _messages: '{"reason": "ok", "score": 4}')
    unranged = LLMGrader(judge, name="quality", template="Rate 1-5: {answer}")
    ranged = LLMGrader(judge, name="ranged", template="Rate 1-5: {answer}", score_range=(1, 5))
    exact = FunctionGrader(lambda answer: 1.0, name="exact", score_range=(0, 1))
    graders = {"quality": unranged, "ranged": ranged, "exact": exact}
    for aggregator in (
        WeightedMeanAggregator("reward"),
        MinAggregator("reward"),
        GateAggregator(
            {"exact": 1.0}, WeightedMeanAggregator(weights={"quality": 1, "ranged": 1}), name="reward"
        ),
    ):
        with pytest.raises(
            ValueError, match="aggregator 'reward' mixes grader 'quality', which declares no score range"
        ):
            GradingRunner(graders, aggregators=aggregator, show_progress=False)
    # Left out of the mix, or mixed with nothing else, it is fine.
    GradingRunner(
        graders, aggregators=WeightedMeanAggregator("reward", {"ranged": 1, "exact": 1}), show_progress=False
    )
    GradingRunner({"quality": unranged}, aggregators=WeightedMeanAggregator("reward"), show_progress=False)


async def test_replace_shares_graders_and_changes_only_what_is_named() -> None:
    from openjudge.runner import GradingRunner as PublicRunner
    from openjudge.runner._settings import RunSettings

    grader = FunctionGrader(lambda response: float(len(response)), name="n")
    runner = PublicRunner({"n": grader}, max_concurrency=7, show_progress=False, timeout_s=12.0)
    later = runner.replace(deadline_s=3.0)
    assert later.settings == RunSettings(
        max_concurrency=7, timeout_s=12.0, deadline_s=3.0, show_progress=False
    )
    assert later.grader_configs["n"].grader is grader
    assert runner.settings.deadline_s is None  # the original is untouched
    none = runner.replace(aggregators=None, settings=RunSettings(max_concurrency=2))
    assert (none.aggregators, none.max_concurrency, none.show_progress) == ({}, 2, True)
    result = await later.arun([{"response": "abc"}])
    assert isinstance(result["n"][0], GraderScore) and result["n"][0].score == 3.0
    with pytest.raises(ValueError, match="max_concurrency must be >= 1"):
        runner.replace(max_concurrency=0)


def test_a_large_result_prints_a_bounded_summary() -> None:
    result = RunnerResult()
    result["s"] = [GraderScore(name="s", score=float(i)) for i in range(1000)]
    text = repr(result)
    assert text.startswith("RunnerResult({'s': [GraderScore(name='s'") and text.endswith(", ... 997 more]})")
    assert text.count("GraderScore(") == 3
