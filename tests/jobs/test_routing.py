"""Routed jobs: not-applicable results in the results file, the summary, resuming and the data check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openjudge.config._build import BuiltJob, build_job
from openjudge.config._loader import parse_config
from openjudge.config._spec import JobConfig
from openjudge.jobs._engine import run_job
from openjudge.jobs._preflight import check_data
from openjudge.jobs._records import NotApplicableEntry, OutcomeLine, entry_from_result, result_from_entry
from openjudge.jobs._results import read_outcomes, read_results
from openjudge.jobs._resume import JobMismatchError
from openjudge.jobs._summary import SummaryBuilder, render_table
from openjudge.results import NotApplicable

pytestmark = pytest.mark.anyio

MATH = (
    "  math: {type: number_accuracy, when: {task: math}, mapper: {response: answer, reference: expected}}\n"
)
FACTS = (
    "  facts: {type: string_match, when: {task: facts}, mapper: {response: answer, reference: expected}}\n"
)
LENGTH = "  length: {type: length_penalty, mapper: {response: answer}}\n"
REWARD = "aggregators:\n  - {type: weighted_mean, name: reward}\n"

ROWS: list[dict[str, Any]] = [
    {"id": "m1", "task": "math", "answer": "42", "expected": "42"},
    {"id": "f1", "task": "facts", "answer": "Paris", "expected": "Paris"},
    {"id": "m2", "task": "math", "answer": "7", "expected": "8"},
    {"id": "f2", "task": "facts", "answer": "Lyon", "expected": "Paris"},
]


def job(graders: str, extra: str = REWARD) -> tuple[JobConfig, BuiltJob]:
    config = parse_config("graders:\n" + graders + extra)
    return config, build_job(config, use_cache=False)


def write(path: Path, rows: list[dict[str, Any]], *, broken: bool = False) -> Path:
    path.write_text(
        "".join(json.dumps(r) + "\n" for r in rows) + ("{broken\n" if broken else ""), encoding="utf-8"
    )
    return path


def lines(path: Path) -> dict[str, dict[str, Any]]:
    return {str(r["id"]): dict(r) for r in read_results(path)}


def test_a_not_applicable_entry_is_written_and_read_back() -> None:
    entry = entry_from_result(NotApplicable(name="math", reason="task is 'facts', not 'math'"))
    assert entry.model_dump(mode="json") == {
        "type": "not_applicable",
        "reason": "task is 'facts', not 'math'",
    }
    assert (entry.latency_s, entry.usage, entry.metadata) == (None, None, {})
    assert isinstance(entry, NotApplicableEntry)
    assert result_from_entry("math", entry) == NotApplicable(
        name="math", reason="task is 'facts', not 'math'"
    )


async def test_a_routed_run_counts_what_applies_and_resumes(tmp_path: Path) -> None:
    data = write(tmp_path / "data.jsonl", ROWS, broken=True)
    out = tmp_path / "out.jsonl"
    config, built = job(MATH + FACTS)
    stats = await run_job(config, built, data_path=data, out_path=out)
    assert (stats.graded, stats.pairs, stats.failed_pairs, stats.with_errors, stats.bad_records) == (
        4,
        4,
        0,
        0,
        1,
    )
    got = lines(out)
    assert got["m1"]["results"]["facts"] == {
        "type": "not_applicable",
        "reason": "task is 'math', not 'facts'",
    }
    assert {i: got[i]["aggregates"] for i in ("m1", "f1", "m2", "f2")} == {
        "m1": {"reward": 1.0},
        "f1": {"reward": 1.0},
        "m2": {"reward": 0.0},
        "f2": {"reward": 0.0},
    }
    assert got["invalid-line-5"]["aggregates"] == {
        "reward": None
    }  # a bad record failed; it is not "not applicable"

    builder = SummaryBuilder()
    for line in read_outcomes(out):
        builder.add(line)
    summary = builder.build()
    math, facts = summary.graders
    assert (math.count, math.scored, math.error_count, math.not_applicable) == (
        3,
        2,
        1,
        2,
    )  # the bad record's error
    assert (facts.count, facts.not_applicable) == (3, 2)
    (reward,) = summary.aggregates
    assert (reward.count, reward.missing, reward.not_applicable) == (4, 1, 0)
    assert "routed  applies to  not applicable\n" in render_table(summary)

    again = await run_job(config, built, data_path=data, out_path=out)
    assert (again.graded, again.skipped_done) == (0, 4)


async def test_an_added_routed_grader_is_graded_only_where_it_applies(tmp_path: Path) -> None:
    data = write(tmp_path / "data.jsonl", ROWS)
    out = tmp_path / "out.jsonl"
    await run_job(*job(MATH + LENGTH, ""), data_path=data, out_path=out)
    before = lines(out)
    assert before["f1"]["results"]["math"]["type"] == "not_applicable"

    stats = await run_job(*job(MATH + LENGTH + FACTS, ""), data_path=data, out_path=out)
    assert stats.changes is not None and stats.changes.added == ("facts",)
    assert (stats.graded, stats.pairs) == (4, 2)  # facts on the two fact rows; nothing else called
    after = lines(out)
    for row in ("m1", "f1"):
        assert {k: v for k, v in after[row]["results"].items() if k != "facts"} == before[row]["results"]
    assert after["m1"]["results"]["facts"]["type"] == "not_applicable"
    assert after["f1"]["results"]["facts"]["score"] == 1.0


async def test_a_changed_condition_is_a_changed_grader(tmp_path: Path) -> None:
    data = write(tmp_path / "data.jsonl", ROWS)
    out = tmp_path / "out.jsonl"
    await run_job(*job(MATH + FACTS), data_path=data, out_path=out)
    wider = FACTS.replace("when: {task: facts}", "when: {task: [facts, math]}")
    with pytest.raises(JobMismatchError) as caught:
        await run_job(*job(MATH + wider), data_path=data, out_path=out)
    assert 'graders.facts: when.task: \'facts\' -> ["facts", "math"]' in str(caught.value)
    stats = await run_job(*job(MATH + wider), data_path=data, out_path=out, regrade=True)
    assert stats.changes is not None and set(stats.changes.changed) == {"facts"}
    assert stats.pairs == 4  # facts, now on every row
    assert lines(out)["m1"]["results"]["facts"]["score"] == 1.0


async def test_a_graders_field_decides_again_on_a_regrade(tmp_path: Path) -> None:
    """A stored not-applicable is not replayed: routing decides from the row as it is now."""
    rows = [{"id": "a", "answer": "42", "expected": "42", "graders": "math"}]
    data = write(tmp_path / "data.jsonl", rows)
    out = tmp_path / "out.jsonl"
    plain = MATH.replace(" when: {task: math},", "") + FACTS.replace(" when: {task: facts},", "")
    field = "data: {graders_field: graders}\n"
    await run_job(*job(plain, REWARD + field), data_path=data, out_path=out)
    assert lines(out)["a"]["results"]["facts"]["type"] == "not_applicable"

    write(data, [{**rows[0], "graders": ["math", "facts"]}])
    changed = plain.replace("number_accuracy,", "number_accuracy, params: {scoring: all},")
    stats = await run_job(*job(changed, REWARD + field), data_path=data, out_path=out, regrade=True)
    assert stats.pairs == 2  # math (changed) and facts (now named), both for real
    assert {k: v["type"] for k, v in lines(out)["a"]["results"].items()} == {
        "math": "score",
        "facts": "score",
    }


async def test_changing_the_graders_field_changes_every_grader(tmp_path: Path) -> None:
    data = write(tmp_path / "data.jsonl", ROWS)
    out = tmp_path / "out.jsonl"
    await run_job(*job(MATH + FACTS), data_path=data, out_path=out)
    with pytest.raises(JobMismatchError) as caught:
        await run_job(
            *job(MATH + FACTS, REWARD + "data: {graders_field: graders}\n"), data_path=data, out_path=out
        )
    message = str(caught.value)
    assert "graders.math: data.graders_field: (unset) -> 'graders'" in message
    assert "graders.facts: data.graders_field: (unset) -> 'graders'" in message


def test_the_data_check_reads_each_row_with_the_graders_that_apply(tmp_path: Path) -> None:
    rows = [
        *ROWS,
        {"id": "p1", "task": "poetry", "answer": "pond"},
        {"id": "m3", "task": "math", "answer": "1"},
    ]
    data = write(tmp_path / "data.jsonl", rows)
    config, built = job(MATH + FACTS)
    check = check_data(config, built, data, source="<config>")
    assert check.routed and check.applies == {"math": 3, "facts": 2}
    assert check.unreadable == ()
    assert check.problems == (
        f"<config>:2: graders.math.mapper.reference: cannot read 1 of the 3 records it applies to among the "
        f"first 6 records of {data} (first at line 6: sample has no field 'expected')",
        f"{data}:5: 1 of the first 6 records cannot be graded (first: no grader applies to this sample (math: "
        "task is 'poetry', not 'math'; facts: task is 'poetry', not 'facts'): route it to a grader ('when' or "
        "a graders field), or leave it out of the dataset); they are recorded as invalid_input results",
    )

    facts_only = write(
        tmp_path / "facts.jsonl", [{"task": "facts", "answer": "x"}, {"task": "math", "answer": "1"}]
    )
    check = check_data(config, built, facts_only, source="<config>")
    assert check.unreadable == (  # each applies to one record and can read none: a run refuses
        f"<config>:2: graders.math.mapper.reference: cannot read any of the 1 records it applies to among the "
        f"first 2 records of {facts_only} (first at line 2: sample has no field 'expected')",
        f"<config>:3: graders.facts.mapper.reference: cannot read any of the 1 records it applies to among the "
        f"first 2 records of {facts_only} (first at line 1: sample has no field 'expected')",
    )


def test_a_condition_on_a_field_no_record_has_is_reported(tmp_path: Path) -> None:
    data = write(tmp_path / "data.jsonl", ROWS)
    config, built = job(MATH.replace("{task: math}", "{taks: math}") + FACTS)
    check = check_data(config, built, data, source="<config>")
    assert check.absent_fields == (
        f"<config>:2: graders.math.when.taks: none of the first 4 records of {data} has the field 'taks', so "
        "this condition holds for none of them: check the field's name",
    )
    assert check.absent_fields[0] in check.problems


def test_an_outcome_line_without_an_aggregate_reads_as_not_applicable() -> None:
    builder = SummaryBuilder()
    builder.add(OutcomeLine(id="a", aggregates={"reward": 1.0}))
    builder.add(OutcomeLine(id="b", aggregates={}))
    builder.add(OutcomeLine(id="c", aggregates={"reward": None}))
    (reward,) = builder.build().aggregates
    assert (reward.count, reward.missing, reward.not_applicable, reward.mean) == (1, 1, 1, 1.0)


def test_a_dataset_none_of_whose_records_can_be_routed_is_refused_before_grading(tmp_path: Path) -> None:
    data = write(tmp_path / "data.jsonl", [{"id": "a", "answer": "1", "expected": "1", "graders": ["maths"]}])
    config, built = job(MATH.replace(" when: {task: math},", ""), REWARD + "data: {graders_field: graders}\n")
    check = check_data(config, built, data, source="<config>")
    assert check.unreadable == (
        f"{data}:1: none of the first 1 records can be graded (first: grader 'math': field 'graders' names "
        "'maths', which is not a grader here; did you mean 'math'? (graders: math))",
    )
