"""Graders per row from the command line: a mixed math/facts/code dataset, run as a user runs it.

Without routing, every grader ran on every row, rows a grader does not apply
to became ``invalid_input``, the reward was missing on every row, ``validate`` failed and
``--max-error-rate`` was useless. With ``when:`` each row gets its own graders: no errors, a
reward on every row, and the error rate is that of the graders that apply.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openjudge.testing.judge_server import JudgeServerProcess
from tests.cli._support import openjudge

pytestmark = pytest.mark.slow  # the command in a subprocess, several runs

JOB = """
providers:
  judge: {{kind: openai, model: m, base_url: "{base_url}", api_key: sk-test, max_retries: 0}}
graders:
  math:
    type: number_accuracy
    when: {{task: math}}
    mapper: {{response: response, reference: answer}}
  facts:
    type: correctness                       # an LLM judge, on fact rows only
    provider: judge
    when: {{task: facts}}
    mapper: {{query: question, response: response, reference: answer}}
  tests:
    type: code_execution
    when: {{task: code}}
    mapper: {{response: response, test_cases: tests}}
  style:
    type: length_penalty
    when: {{task: code}}
    params: {{max_length: 40}}
aggregators:
  - type: gate                              # the code group: tests must pass, then tests and style
    name: code
    when: {{task: code}}
    gates: {{tests: 1.0}}
    weights: {{tests: 3, style: 1}}
  - type: weighted_mean                     # one reward on every row, whatever its task
    name: reward
    weights: {{math: 1, facts: 1, code: 1}}
data: {{path: data.jsonl}}
cache: {{enabled: false}}
"""

_CODE_OK = "```python\nprint(sum(int(x) for x in input().split()))\n```"
_CODE_WRONG = "```python\nprint(0)\n```"
_ADD_TESTS = [{"input": "2 3", "output": "5"}, {"input": "10 -4", "output": "6"}]

ROWS: list[dict[str, object]] = [
    {"id": "m1", "task": "math", "question": "6 * 7?", "response": "It is 42.", "answer": "42"},
    {
        "id": "f1",
        "task": "facts",
        "question": "Capital of France?",
        "response": "Paris #oj:score=5",
        "answer": "Paris",
    },
    {"id": "c1", "task": "code", "question": "Add two numbers.", "response": _CODE_OK, "tests": _ADD_TESTS},
    {"id": "m2", "task": "math", "question": "2 ** 10?", "response": "1000", "answer": "1024"},
    {
        "id": "f2",
        "task": "facts",
        "question": "Largest planet?",
        "response": "Saturn #oj:score=1",
        "answer": "Jupiter",
    },
    {
        "id": "c2",
        "task": "code",
        "question": "Add two numbers.",
        "response": _CODE_WRONG,
        "tests": _ADD_TESTS,
    },
    {"id": "m3", "task": "math", "question": "1 / 4?", "response": "0.25", "answer": "0.25"},
    {"id": "f3", "task": "facts", "question": "H2O is?", "response": "water #oj:score=4", "answer": "water"},
    {"id": "c3", "task": "code", "question": "Add two numbers.", "response": _CODE_OK, "tests": _ADD_TESTS},
]
TASK_OF = {str(row["id"]): str(row["task"]) for row in ROWS}
GRADERS_OF = {"math": {"math"}, "facts": {"facts"}, "code": {"tests", "style"}}


def _write(tmp_path: Path, judge_url: str, rows: list[dict[str, object]]) -> None:
    (tmp_path / "job.yaml").write_text(JOB.format(base_url=judge_url), encoding="utf-8")
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]


def test_a_mixed_dataset_graded_with_routing_has_no_errors_and_a_reward_on_every_row(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    _write(tmp_path, judge_server.base_url, ROWS)

    checked = openjudge("validate", "job.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout == (
        "job.yaml: ok (4 graders, 1 provider; the first 9 records of data.jsonl fit every grader that "
        "applies to them; records per grader: math 3, facts 3, tests 3, style 3)\n"
    )

    estimate = openjudge("estimate", "job.yaml", cwd=tmp_path)
    assert estimate.returncode == 0
    assert estimate.stdout.splitlines()[1].split()[:3] == ["facts", "3", "0"]  # judge calls on fact rows only

    # --max-error-rate 0: a single error anywhere in the file would exit 3.
    done = openjudge("run", "job.yaml", "--max-error-rate", "0", "--report", "report.html", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "samples: 9/9 (100%) errors=0 " in done.stderr  # the progress line counts no error
    assert "error kind" not in done.stdout and "are errors" not in done.stdout

    lines = _lines(tmp_path / "results.jsonl")
    assert [line["id"] for line in sorted(lines, key=lambda one: str(one["id"]))] == sorted(TASK_OF)
    rewards: dict[object, float] = {}
    for line in lines:
        results = line["results"]
        assert isinstance(results, dict)
        applied = GRADERS_OF[TASK_OF[str(line["id"])]]
        for name, entry in results.items():
            assert entry["type"] == ("score" if name in applied else "not_applicable"), (
                line["id"],
                name,
                entry,
            )
        aggregates = line["aggregates"]
        assert isinstance(aggregates, dict)
        reward = aggregates["reward"]
        assert isinstance(reward, float)  # a reward on every row
        assert ("code" in aggregates) == (TASK_OF[str(line["id"])] == "code")  # absent: does not apply
        rewards[line["id"]] = reward
    assert rewards["m1"] == rewards["m3"] == 1.0 and rewards["m2"] == 0.0
    assert (rewards["f1"], rewards["f2"], rewards["f3"]) == (1.0, 0.0, 0.75)  # judge 5, 1, 4 on [1, 5]
    assert rewards["c2"] == 0.0  # the gate: its tests fail
    assert 0.75 < rewards["c1"] == rewards["c3"] < 1.0  # tests pass; style (too long) costs a little

    # The summary: the graders' rows apart from the rows they do not apply to.
    out = done.stdout
    assert "\nreward     9        0  " in out
    table = out[out.index("routed ") :].splitlines()
    assert table[2:7] == [
        "math             3               6",
        "facts            3               6",
        "tests            3               6",
        "style            3               6",
        "code             3               6",
    ]
    report = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<table class="routed">' in report and "not applicable 6" in report

    rerun = openjudge("run", "job.yaml", "--no-progress", cwd=tmp_path)
    assert rerun.returncode == 0
    assert "0 samples graded, 9 samples already complete in" in rerun.stdout


def test_a_row_no_grader_applies_to_is_its_own_error(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    poem: dict[str, object] = {"id": "p1", "task": "poetry", "question": "A haiku?", "response": "old pond"}
    _write(tmp_path, judge_server.base_url, [*ROWS[:3], poem])

    checked = openjudge("validate", "job.yaml", cwd=tmp_path)
    assert checked.returncode == 1
    assert checked.stderr == (
        "error: data.jsonl:4: 1 of the first 4 records cannot be graded (first: no grader applies to this "
        "sample (math: task is 'poetry', not 'math'; facts: task is 'poetry', not 'facts'; and 2 more): route "
        "it to a grader ('when' or a graders field), or leave it out of the dataset); they are recorded as "
        "invalid_input results\n"
    )

    done = openjudge("run", "job.yaml", "--no-progress", "--max-error-rate", "0.1", cwd=tmp_path)
    assert done.returncode == 3  # 4 errors (the poem's, one per grader) of 4 + 4 results that apply
    assert (
        "4 of 8 grader results in results.jsonl are errors (50.0%), above --max-error-rate 0.1" in done.stderr
    )
    (line,) = [line for line in _lines(tmp_path / "results.jsonl") if line["id"] == "p1"]
    results = line["results"]
    assert isinstance(results, dict)
    assert {entry["kind"] for entry in results.values()} == {"invalid_input"}
    assert line["aggregates"] == {"reward": None}


def test_a_misspelt_condition_field_is_reported_before_anything_runs(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    _write(tmp_path, judge_server.base_url, ROWS)
    job = tmp_path / "job.yaml"
    job.write_text(job.read_text(encoding="utf-8").replace("when: {task: math}", "when: {taks: math}"))
    checked = openjudge("validate", "job.yaml", cwd=tmp_path)
    assert checked.returncode == 1
    assert (
        "error: job.yaml:7: graders.math.when.taks: none of the first 9 records of data.jsonl has the field "
        "'taks', so this condition holds for none of them: check the field's name\n"
    ) in checked.stderr
    done = openjudge("run", "job.yaml", "--no-progress", cwd=tmp_path)
    assert done.stderr.startswith("warning: job.yaml:7: graders.math.when.taks: none of the first 9 records")
