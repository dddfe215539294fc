"""Routing in a config: ``when``, ``data.graders_field`` and aggregators that read earlier ones."""

from __future__ import annotations

import pytest

from openjudge.config._build import build_job
from openjudge.config._loader import ConfigError, parse_config
from openjudge.results import GraderScore
from openjudge.runner import RoutedAggregator

GRADERS = """graders:
  a: {type: string_match, when: {task: a}}
  b: {type: string_match, when: {task: b}}
"""


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        build_job(parse_config(text, source="job.yaml"), source="job.yaml", use_cache=False)
    return caught.value.problems


@pytest.mark.parametrize(
    ("when", "message"),
    [
        ("{}", "job.yaml:2: graders.g.when: a condition needs at least one field, e.g. {task: math}"),
        (
            "{task: [a, {b: 1}]}",
            "job.yaml:2: graders.g.when: field 'task': a value must be text, a finite number",
        ),
        ("{task: null}", "job.yaml:2: graders.g.when: field 'task': a value must be text"),
        ("[task]", "job.yaml:2: graders.g.when: Input should be a valid dictionary"),
    ],
)
def test_a_malformed_condition_is_one_clear_line(when: str, message: str) -> None:
    (problem,) = problems(f"graders:\n  g: {{type: string_match, when: {when}}}\n")
    assert problem.startswith(message)


def test_an_aggregator_may_read_an_earlier_one_only() -> None:
    text = GRADERS + (
        "aggregators:\n"
        "  - {type: weighted_mean, name: reward, weights: {a: 1, group: 1}}\n"
        "  - {type: min, name: group, when: {task: b}}\n"
        "  - {type: weighted_mean, name: other, weights: {rewrd: 1}}\n"
    )
    assert problems(text) == [
        "job.yaml:5: aggregators.0.weights.group: aggregator 'group' is computed after this one: list it "
        "before the aggregators that read it",
        "job.yaml:7: aggregators.2.weights.rewrd: unknown grader or earlier aggregator 'rewrd'; did you mean "
        "'reward'? (valid: a, b, group, reward)",
    ]


def test_an_aggregate_mixed_into_another_must_be_on_the_unit_scale() -> None:
    text = GRADERS + (
        "aggregators:\n"
        "  - {type: gate, name: strict, gates: {a: 1.0}, fail_score: -1}\n"
        "  - {type: weighted_mean, name: reward, weights: {strict: 1, b: 1}}\n"
    )
    (problem,) = problems(text)
    assert problem.startswith(
        "job.yaml:6: aggregators.1: weighted_mean aggregator 'reward' reads aggregate 'strict', whose values "
        "are not on the 0-1 scale (an aggregator of your own, a gate whose fail_score is outside [0, 1]"
    )


def test_a_routed_group_is_built_and_mixed() -> None:
    text = GRADERS + (
        "aggregators:\n"
        "  - {type: gate, name: group, when: {task: b}, gates: {b: 1.0}}\n"
        "  - {type: weighted_mean, name: reward, weights: {a: 1, group: 1}}\n"
        "data: {graders_field: graders}\n"
    )
    job = build_job(parse_config(text), use_cache=False)
    group = job.runner.aggregators["group"]
    assert isinstance(group, RoutedAggregator) and group.when.condition == {"task": "b"}
    assert job.runner.graders_field == "graders"
    out = job.runner.run(
        [
            {"task": "a", "response": "x", "reference": "x"},
            {"task": "b", "response": "x", "reference": "y"},
            {"task": "b", "response": "x", "reference": "x", "graders": "b"},
        ]
    )
    job.runner.close()
    assert [r.score if isinstance(r, GraderScore) else None for r in out["reward"]] == [1.0, 0.0, 1.0]
    assert [type(r).__name__ for r in out["group"]] == ["NotApplicable", "GraderScore", "GraderScore"]


def test_an_empty_graders_field_is_refused() -> None:
    (problem,) = problems("graders:\n  g: {type: string_match}\ndata: {graders_field: ''}\n")
    assert problem.startswith("job.yaml:3: data.graders_field: String should have at least 1 character")
