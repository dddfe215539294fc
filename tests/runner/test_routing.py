"""Graders per row: ``when``, a graders field, not-applicable results and how aggregators read them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from openjudge.graders.base_grader import BaseGrader
from openjudge.results import GraderError, GraderResult, GraderScore, NotApplicable, RowResult, ScoreRange
from openjudge.runner import (
    GateAggregator,
    GraderConfig,
    GradingRunner,
    MinAggregator,
    RoutedAggregator,
    WeightedMeanAggregator,
)
from openjudge.runner._routing import Router, When

pytestmark = pytest.mark.anyio

_UNIT = ScoreRange(low=0.0, high=1.0)


class Fixed(BaseGrader):
    """Scores ``value`` on [0, 1] and counts its calls."""

    def __init__(self, name: str, value: float) -> None:
        super().__init__(name=name, score_range=(0, 1))
        self.value = value
        self.calls = 0

    async def aevaluate(self, *, response: str) -> GraderScore:
        self.calls += 1
        return GraderScore(name=self.name, score=self.value, score_range=_UNIT)


class ClaimsNotApplicable(BaseGrader):
    """A grader that tries to decide for itself that it does not apply."""

    async def aevaluate(self, *, response: str) -> GraderResult:
        return NotApplicable(name=self.name, reason="I would rather not")  # type: ignore[return-value]  # the point


ROWS: list[dict[str, Any]] = [
    {"task": "math", "response": "r0"},
    {"task": "facts", "response": "r1"},
    {"task": "code", "response": "r2"},
    {"task": "math", "response": "r3"},
]


def kinds(column: list[RowResult]) -> list[str]:
    return [type(r).__name__ for r in column]


def scores(column: list[RowResult]) -> list[float | None]:
    return [r.score if isinstance(r, GraderScore) else None for r in column]


# -- conditions ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("condition", "sample", "holds"),
    [
        ({"task": "math"}, {"task": "math"}, True),
        ({"task": "math"}, {"task": "facts"}, False),
        ({"task": ["math", "algebra"]}, {"task": "algebra"}, True),
        ({"task": "math", "level": 3}, {"task": "math", "level": 3}, True),
        ({"task": "math", "level": 3}, {"task": "math", "level": 4}, False),
        ({"level": 3}, {"level": "3"}, True),  # CSV values are text
        ({"level": 2.5}, {"level": "2.5"}, True),
        ({"hard": True}, {"hard": "true"}, True),
        ({"hard": True}, {"hard": 1}, False),  # true is not 1
        ({"level": 1}, {"level": True}, False),
        ({"level": 1}, {"level": 1.0}, True),
        ({"meta.task": "math"}, {"meta": {"task": "math"}}, True),
        ({"tags.0": "math"}, {"tags": ["math", "hard"]}, True),
        ({"task": "math"}, {"other": "math"}, False),
        ({"task": "math"}, {"task": {"name": "math"}}, False),
    ],
)
def test_a_condition_reads_the_samples_fields(
    condition: dict[str, Any], sample: dict[str, Any], holds: bool
) -> None:
    assert (When(condition).mismatch(sample) is None) is holds


def test_why_a_condition_does_not_hold_is_said() -> None:
    when = When({"task": ["math", "algebra"]})
    assert when.mismatch({"task": "facts"}) == "task is 'facts', not one of 'math', 'algebra'"
    assert when.mismatch({}) == "the sample has no field 'task'"


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ({}, "at least one field"),
        ({"task": []}, "field 'task': a value must be text"),
        ({"task": None}, "field 'task': a value must be text"),
        ({"task": {"a": 1}}, "field 'task': a value must be text"),
        ({"x": float("nan")}, "finite number"),
        ({"": "x"}, "non-empty dotted path"),
    ],
)
def test_a_malformed_condition_is_refused(condition: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        When(condition)


# -- routing -------------------------------------------------------------------------


def test_the_graders_field_names_the_graders_of_a_row() -> None:
    router = Router(["math", "facts", "format"], [None, None, None], "graders")
    plan = router.plan({"graders": ["math", "format"]})
    assert plan is not None
    assert plan[0] is None and plan[2] is None
    assert isinstance(plan[1], NotApplicable)
    assert plan[1].reason == "not named in the sample's 'graders'"
    assert router.plan({"graders": "facts, format"}) == (
        plan[1].model_copy(update={"name": "math"}),
        None,
        None,
    )
    assert router.plan({"graders": None}) is None  # names none in particular: every grader
    assert router.plan({"graders": " "}) is None  # an empty CSV cell: likewise
    assert router.plan({"other": 1}) is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["mathh"], "field 'graders' names 'mathh', which is not a grader here; did you mean 'math'?"),
        (
            3,
            "field 'graders' must name graders (a name, a list of names, or names separated by commas), got 3",
        ),
        (["math", 1], "must name graders"),
    ],
)
def test_a_wrong_graders_field_is_the_rows_error(value: object, message: str) -> None:
    plan = Router(["math", "facts"], [None, None], "graders").plan({"graders": value})
    assert plan is not None
    for result in plan:
        assert isinstance(result, GraderError)
        assert result.kind == "invalid_input"
        assert message in result.message


def test_naming_a_grader_whose_condition_does_not_hold_is_an_error() -> None:
    router = Router(["math", "facts"], [When({"task": "math"}), None], "graders")
    plan = router.plan({"task": "facts", "graders": ["math", "facts"]})
    assert plan is not None
    assert isinstance(plan[0], GraderError)
    assert plan[0].message == (
        "grader 'math': graders names 'math', but its 'when' does not hold (task is 'facts', not 'math')"
    )
    assert plan[1] is None


def test_a_row_no_grader_applies_to_is_an_error_unless_the_runner_holds_part_of_a_job() -> None:
    whens = [When({"task": "math"}), When({"task": "facts"})]
    plan = Router(["math", "facts"], whens, None).plan({"task": "poetry"})
    assert plan is not None
    assert [r.kind for r in plan if isinstance(r, GraderError)] == ["invalid_input", "invalid_input"]
    assert isinstance(plan[0], GraderError)
    assert plan[0].message.startswith(
        "no grader applies to this sample (math: task is 'poetry', not 'math'; facts: task is 'poetry', not 'facts')"
    )
    part = Router(["math"], whens[:1], None, "not_applicable").plan({"task": "poetry"})
    assert part is not None and isinstance(part[0], NotApplicable)


def test_a_part_of_a_job_knows_the_names_of_the_whole() -> None:
    part = Router(["math"], [None], "graders", "not_applicable", known=["math", "facts"])
    plan = part.plan({"graders": ["facts"]})
    assert plan is not None and isinstance(plan[0], NotApplicable)
    wrong = part.plan({"graders": ["poems"]})
    assert wrong is not None and isinstance(wrong[0], GraderError)


# -- the runner ----------------------------------------------------------------------


async def test_a_grader_is_called_only_on_the_rows_it_applies_to() -> None:
    math, facts = Fixed("math", 1.0), Fixed("facts", 0.5)
    runner = GradingRunner(
        {
            "math": GraderConfig(math, when={"task": "math"}),
            "facts": GraderConfig(facts, when={"task": "facts"}),
            "any": Fixed("any", 0.0),
        },
        show_progress=False,
    )
    out = await runner.arun(ROWS)
    assert kinds(out["math"]) == ["GraderScore", "NotApplicable", "NotApplicable", "GraderScore"]
    assert scores(out["facts"]) == [None, 0.5, None, None]
    assert scores(out["any"]) == [0.0] * 4
    assert (math.calls, facts.calls) == (2, 1)
    na = out["facts"][0]
    assert isinstance(na, NotApplicable) and (na.name, na.reason) == ("facts", "task is 'math', not 'facts'")
    assert runner.route(ROWS[1]) == {"math": out["math"][1]}
    assert runner.route({"task": "math", "response": ""}) == {"facts": out["facts"][0]}


async def test_the_weighted_mean_min_and_gate_are_over_the_graders_that_apply() -> None:
    configs = {
        "math": GraderConfig(Fixed("math", 1.0), when={"task": "math"}),
        "facts": GraderConfig(Fixed("facts", 0.5), when={"task": "facts"}),
        "style": GraderConfig(Fixed("style", 0.25), when={"task": ["facts", "code"]}),
        "code": GraderConfig(Fixed("code", 0.0), when={"task": "code"}),
    }
    runner = GradingRunner(
        configs,
        aggregators=[
            WeightedMeanAggregator("mean", {"math": 1, "facts": 3, "style": 1}),
            MinAggregator("min"),
            GateAggregator({"code": 0.5}, WeightedMeanAggregator(), name="gated", fail_score=-1.0),
        ],
        show_progress=False,
    )
    out = await runner.arun(ROWS)
    assert scores(out["mean"]) == [1.0, pytest.approx((3 * 0.5 + 0.25) / 4), 0.25, 1.0]
    assert scores(out["min"]) == [1.0, 0.25, 0.0, 1.0]
    # the gate's grader applies to code rows only; elsewhere the gate is not checked
    assert scores(out["gated"]) == [1.0, 0.375, -1.0, 1.0]


async def test_a_group_with_its_own_aggregator_is_mixed_into_the_reward() -> None:
    """Code rows: compiles must pass, then tests; math rows: math. One reward on every row."""
    configs: dict[str, GraderConfig | BaseGrader] = {
        "math": GraderConfig(Fixed("math", 0.75), when={"task": "math"}),
        "compiles": GraderConfig(Fixed("compiles", 1.0), when={"task": "code"}),
        "tests": GraderConfig(Fixed("tests", 0.5), when={"task": "code"}),
        "length": Fixed("length", 0.0),  # every row: it must not leak into the code group on math rows
        "facts": GraderConfig(Fixed("facts", 1.0), when={"task": "facts"}),
    }
    code = RoutedAggregator(
        GateAggregator(
            {"compiles": 1.0}, WeightedMeanAggregator(weights={"tests": 1, "length": 1}), name="code"
        ),
        {"task": "code"},
    )
    reward = WeightedMeanAggregator("reward", {"math": 1, "facts": 1, "code": 1})
    runner = GradingRunner(configs, aggregators=[code, reward], show_progress=False)
    out = await runner.arun(ROWS)
    assert kinds(out["code"]) == ["NotApplicable", "NotApplicable", "GraderScore", "NotApplicable"]
    code_na = out["code"][0]
    assert isinstance(code_na, NotApplicable) and code_na.reason == "task is 'math', not 'code'"
    assert scores(out["reward"]) == [0.75, 1.0, 0.25, 0.75]
    assert runner.aggregator_chain("reward") == [code, reward]
    assert runner.aggregator_chain("code") == [code]
    # streamed, one sample at a time: the same
    async with runner.astream(ROWS) as stream:
        streamed = {item.index: item.aggregates["reward"] async for item in stream}
    assert [streamed[i] for i in range(4)] == out["reward"]


async def test_an_aggregate_none_of_whose_inputs_applies_is_not_applicable() -> None:
    runner = GradingRunner(
        {
            "math": GraderConfig(Fixed("math", 1.0), when={"task": "math"}),
            "facts": GraderConfig(Fixed("facts", 0.0), when={"task": "facts"}),
        },
        aggregators=[WeightedMeanAggregator("math_only", {"math": 1}), WeightedMeanAggregator("all")],
        show_progress=False,
    )
    out = await runner.arun(ROWS[:2])
    assert kinds(out["math_only"]) == ["GraderScore", "NotApplicable"]
    na = out["math_only"][1]
    assert isinstance(na, NotApplicable) and na.reason == "none of its inputs applies to this sample"
    assert scores(out["all"]) == [1.0, 0.0]


async def test_rows_without_a_grader_and_a_graders_field_over_an_async_dataset() -> None:
    runner = GradingRunner(
        {"math": Fixed("math", 1.0), "facts": Fixed("facts", 0.0)},
        aggregators=[WeightedMeanAggregator("reward")],
        graders_field="graders",
        show_progress=False,
    )

    async def rows() -> AsyncIterator[dict[str, Any]]:
        for graders in (["math"], "facts", "math,facts", [], ["poems"]):
            yield {"response": "r", "graders": graders}

    async with runner.astream(rows()) as stream:
        got = {item.index: item async for item in stream}
    assert [kinds(list(got[i].results.values())) for i in range(3)] == [
        ["GraderScore", "NotApplicable"],
        ["NotApplicable", "GraderScore"],
        ["GraderScore", "GraderScore"],
    ]
    assert [scores([got[i].aggregates["reward"]]) for i in range(3)] == [[1.0], [0.0], [0.5]]
    for i in (3, 4):  # nothing named: no reward, and the row says why
        errors = got[i].results.values()
        assert all(isinstance(e, GraderError) and e.kind == "invalid_input" for e in errors)
        assert isinstance(got[i].aggregates["reward"], GraderError)
    assert "no grader applies to this sample" in got[3].results["math"].reason
    assert "names 'poems', which is not a grader here" in got[4].results["math"].reason


async def test_a_grader_cannot_say_it_does_not_apply() -> None:
    """Only routing, from the sample's fields, decides it: never the response through a grader."""
    out = await GradingRunner({"g": ClaimsNotApplicable(name="g")}, show_progress=False).arun(
        [{"response": "x"}]
    )
    (result,) = out["g"]
    assert isinstance(result, GraderError) and result.kind == "internal"
    assert "returned NotApplicable" in result.message


def test_an_aggregator_reads_graders_and_earlier_aggregators_only() -> None:
    graders: Mapping[str, BaseGrader] = {"a": Fixed("a", 1.0), "b": Fixed("b", 1.0)}
    later = WeightedMeanAggregator("first", {"a": 1, "second": 1})
    with pytest.raises(
        ValueError, match="reads 'second', which is neither a grader nor an aggregator before it"
    ):
        GradingRunner(graders, aggregators=[later, WeightedMeanAggregator("second")], show_progress=False)
    with pytest.raises(ValueError, match="reads 'c'"):
        GradingRunner(graders, aggregators=[MinAggregator("m"), GateAggregator({"c": 1}, MinAggregator())])


async def test_a_runner_over_part_of_the_graders_keeps_the_routing() -> None:
    runner = GradingRunner(
        {"math": GraderConfig(Fixed("math", 1.0), when={"task": "math"}), "facts": Fixed("facts", 0.0)},
        graders_field="graders",
        show_progress=False,
    )
    part = runner.replace(grader_configs={"math": runner.grader_configs["math"]}, unrouted="not_applicable")
    out = await part.arun(
        [{"task": "facts", "response": "x"}, {"task": "math", "graders": ["facts"], "response": "x"}]
    )
    assert kinds(out["math"]) == [
        "NotApplicable",
        "NotApplicable",
    ]  # not an error: the other rows are another's
