"""Config mistakes as a user makes them, and the exact messages they get (file:line: field: fix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openjudge.config._build import build_job
from openjudge.config._loader import ConfigError, parse_config
from openjudge.graders.function_grader import FunctionGrader
from openjudge.graders.llm_grader import LLMGrader
from openjudge.results import GraderScore, ScoreRange
from openjudge.testing.function_model import FunctionChatModel

JUDGE = """providers:
  judge: {kind: openai, model: m, base_url: "http://127.0.0.1:9/v1", api_key: k}
"""


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        build_job(parse_config(text, source="job.yaml"), source="job.yaml", use_cache=False)
    return caught.value.problems


def test_a_duration_key_without_its_seconds_suffix_gets_the_new_name() -> None:
    text = (
        "providers:\n"
        "  judge: {kind: openai, model: m, base_url: 'http://127.0.0.1:9/v1', timeout: 5}\n"
        "graders:\n  g: {type: string_match, params: {match_mode: regex, regex_timeout: 1}}\n"
        "runner: {timeout: 30, deadline: 60}\n"
    )
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="job.yaml")
    found = {p.split(": ")[1]: p for p in caught.value.problems}
    assert "did you mean 'timeout_s'?" in found["providers.judge.timeout"]
    assert "did you mean 'regex_timeout_s'?" in found["graders.g.params.regex_timeout"]
    assert found["runner.timeout"].startswith(
        "job.yaml:5: runner.timeout: unknown field 'timeout'; did you mean 'timeout_s'? (valid: deadline_s,"
    )
    assert "did you mean 'deadline_s'?" in found["runner.deadline"]


def test_a_grader_name_given_twice_is_refused_with_both_lines() -> None:
    text = "graders:\n  g:\n    type: string_match\n  g:\n    type: reasoning_format\n"
    assert problems(text) == [
        "job.yaml:4: graders.g: duplicate key 'g' (first at line 2); YAML would keep only the last one: "
        "rename or remove one"
    ]


def test_a_provider_name_given_twice_is_refused_with_both_lines() -> None:
    text = (
        "providers:\n"
        "  judge: {kind: openai, model: a, base_url: 'http://127.0.0.1:1/v1'}\n"
        "  judge: {kind: openai, model: a, base_url: 'http://127.0.0.1:2/v1'}\n"
        "graders:\n  g: {type: llm, provider: judge, params: {template: '{x}'}}\n"
    )
    assert problems(text) == [
        "job.yaml:3: providers.judge: duplicate key 'judge' (first at line 2); YAML would keep only the "
        "last one: rename or remove one"
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "1-5",
            "score_range must be two numbers (low, high) with low < high, e.g. [1, 5], or a ScoreRange; got '1-5'",
        ),
        (
            "5",
            "score_range must be two numbers (low, high) with low < high, e.g. [1, 5], or a ScoreRange; got 5",
        ),
        (
            "[1]",
            "score_range must be two numbers (low, high) with low < high, e.g. [1, 5], or a ScoreRange; got [1]",
        ),
        ("[1, 5, 9]", "got [1, 5, 9]"),
        ("[5, 1]", "score_range needs finite low < high, e.g. (1, 5); got [5, 1]"),
        ("{low: 1}", "got {'low': 1}"),
    ],
)
def test_malformed_score_ranges_name_the_line_and_the_forms(value: str, message: str) -> None:
    text = (
        JUDGE
        + f"graders:\n  q:\n    type: llm\n    provider: judge\n    params:\n      template: '{{x}}'\n      score_range: {value}\n"
    )
    (problem,) = problems(text)
    assert problem.startswith("job.yaml:9: graders.q.params.score_range: ")
    assert message in problem


def test_a_mapping_score_range_is_accepted() -> None:
    text = (
        JUDGE
        + "graders:\n  q: {type: llm, provider: judge, params: {template: '{x}', score_range: {low: 1, high: 5}}}\n"
    )
    job = build_job(parse_config(text), use_cache=False)
    assert job.runner.grader_configs["q"].grader.score_range == ScoreRange(low=1, high=5)


@pytest.mark.anyio
async def test_score_range_lists_work_in_python_too() -> None:
    judge = FunctionChatModel(lambda messages: '{"reason": "ok", "score": 4}')
    llm = LLMGrader(judge, name="q", template="Rate: {x}", score_range=[1, 5])  # type: ignore[arg-type]  # a list, as users write
    assert llm.score_range == ScoreRange(low=1, high=5)
    result = await llm.aevaluate(x="four")
    assert isinstance(result, GraderScore) and result.normalized_score == 0.75
    function = FunctionGrader(lambda response: 1.0, score_range=[0, 1])  # type: ignore[arg-type]  # likewise
    scored = await function.aevaluate(response="x")
    assert isinstance(scored, GraderScore) and scored.score_range == ScoreRange(low=0, high=1)
    with pytest.raises(ValueError, match=r"score_range must be two numbers \(low, high\)"):
        FunctionGrader(lambda response: 1.0, score_range="0-1")  # type: ignore[arg-type]  # wrong on purpose


def test_an_unranged_llm_grader_cannot_be_mixed_by_an_aggregator() -> None:
    text = JUDGE + (
        "graders:\n"
        "  quality: {type: llm, provider: judge, params: {template: 'Rate 1-5: {answer}'}}\n"
        "  exact: {type: string_match, mapper: {response: answer, reference: expected}}\n"
        "aggregators:\n"
        "  - {type: weighted_mean, name: reward}\n"
    )
    assert problems(text) == [
        "job.yaml:7: aggregators.0: weighted_mean aggregator 'reward' mixes grader 'quality', which "
        "declares no score range, so its raw scores cannot be put on the 0-1 scale of the others: set "
        "graders.quality.params.score_range (e.g. [1, 5]), or list the graders to mix in 'weights'"
    ]
    # Left out of the weights, it is not mixed: fine.
    build_job(
        parse_config(text.replace("name: reward}", "name: reward, weights: {exact: 1}}")), use_cache=False
    )


def test_a_listwise_grader_mixes_only_when_group_judging_scores_its_members() -> None:
    text = JUDGE + (
        "graders:\n"
        "  rank: {type: listwise_ranking, provider: judge}\n"
        "  exact: {type: string_match, mapper: {response: answer, reference: expected}}\n"
        "aggregators:\n"
        "  - {type: weighted_mean, name: reward, weights: {rank: 1, exact: 1}}\n"
    )
    assert problems(text) == [
        "job.yaml:7: aggregators.0.weights.rank: weighted_mean aggregator 'reward' cannot use grader "
        "'rank': it returns ranks, not scores, or list the graders to mix in 'weights'"
    ]
    # openjudge.integrations.verl.group splits a ranking into one 0-1 score per member before aggregating.
    job = build_job(parse_config(text), use_cache=False, members_scored=True)
    assert set(job.runner.grader_configs) == {"rank", "exact"}


def test_unknown_params_list_the_valid_ones_with_a_suggestion() -> None:
    text = "graders:\n  exact:\n    type: string_match\n    params: {match_mod: exact}\n"
    assert problems(text) == [
        "job.yaml:4: graders.exact.params.match_mod: unknown parameter 'match_mod'; did you mean "
        "'match_mode'? (valid: case_sensitive, description, full_match, match_mode, name, regex_timeout_s, strip)"
    ]


def test_a_parameter_of_the_wrong_type_names_the_field() -> None:
    text = "graders:\n  exact:\n    type: string_match\n    params:\n      match_mode: fuzzy\n"
    (problem,) = problems(text)
    assert problem.startswith("job.yaml:5: graders.exact.params.match_mode: Input should be 'exact'")


def test_negative_weights_name_the_field_and_line() -> None:
    text = (
        "graders:\n  a: {type: reasoning_format}\n  b: {type: json_validator}\n"
        "aggregators:\n  - type: weighted_mean\n    weights:\n      a: 1\n      b: -2\n"
    )
    assert problems(text) == [
        "job.yaml:8: aggregators.0.weights.b: Input should be greater than or equal to 0 (got -2)"
    ]


def test_unknown_fields_get_a_did_you_mean() -> None:
    text = "graders:\n  a: {type: reasoning_format}\nrunner:\n  max_concurency: 4\n"
    assert problems(text) == [
        "job.yaml:4: runner.max_concurency: unknown field 'max_concurency'; did you mean 'max_concurrency'? "
        "(valid: deadline_s, max_concurrency, timeout_s, tune_collector); remove or rename it"
    ]


def test_a_missing_field_is_worded_for_yaml_at_run_time(tmp_path: Path) -> None:
    job = build_job(parse_config("graders:\n  exact: {type: string_match}\n"), use_cache=False)
    result = job.runner.run([{"response": "4"}])["exact"][0]
    assert result.reason == (
        "grader 'exact': sample has no field 'reference': add it to the data, or map it from another "
        "field with graders.exact.mapper: {reference: <field>}"
    )


def test_aggregator_names_must_not_clash() -> None:
    text = "graders:\n  reward: {type: reasoning_format}\naggregators:\n  - {type: min, name: reward}\n"
    assert problems(text) == [
        "job.yaml:4: aggregators.0: the name 'reward' is already used by a grader: give 'name: ...'"
    ]


def test_a_missing_api_key_is_worded_for_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    text = "providers:\n  judge: {kind: openai, model: gpt-4o-mini}\ngraders:\n  q: {type: llm, provider: judge, params: {template: '{x}'}}\n"
    assert problems(text) == [
        "job.yaml:2: providers.judge: no API key: set providers.judge.api_key (e.g. api_key: "
        "${OPENAI_API_KEY}); for a local server also set base_url"
    ]
