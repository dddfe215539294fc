"""Hostile records as a user meets them: one hostile record costs one result, never the run or its report.

Each case runs ``openjudge run ... --report`` in a subprocess on real files, then reruns
it: the run and the rerun exit 0 with no traceback, the report is written (strict UTF-8),
the hostile record is recorded with a clear reason and every other record is graded once.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from openjudge.jobs._results import read_results
from openjudge.testing.judge_server import JudgeServerProcess
from tests.cli._support import openjudge as run_command

RULE_JOB = """
graders:
  exact: {type: string_match, mapper: {response: answer, reference: expected}}
  given: {type: provided_score, mapper: {score: score}}
"""


def openjudge(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command in a subprocess, its caches in the job's folder (no traceback allowed)."""
    return run_command(*args, cwd=cwd, env={"XDG_CACHE_HOME": str(cwd)})


def run_twice(tmp_path: Path, data: str, job: str = RULE_JOB) -> dict[str, dict[str, dict[str, object]]]:
    """Run and rerun with --report; the results by id (each id once), after both runs agree."""
    (tmp_path / "job.yaml").write_text(job, encoding="utf-8")
    args = (
        "run",
        "job.yaml",
        "--data",
        data,
        "--out",
        "out.jsonl",
        "--report",
        "report.html",
        "--no-progress",
    )
    first = openjudge(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    written = (tmp_path / "out.jsonl").read_bytes()
    report = (tmp_path / "report.html").read_bytes().decode("utf-8")  # strict: the report is UTF-8
    assert "chart histogram" in report
    again = openjudge(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "0 samples graded" in again.stdout
    assert (tmp_path / "out.jsonl").read_bytes() == written  # nothing graded twice, nothing lost
    ids = Counter(str(line["id"]) for line in read_results(tmp_path / "out.jsonl"))
    assert all(n == 1 for n in ids.values()), ids
    out: dict[str, dict[str, dict[str, object]]] = {}
    for line in read_results(tmp_path / "out.jsonl"):
        results = line["results"]
        assert isinstance(results, dict)
        out[str(line["id"])] = {k: dict(v) for k, v in results.items() if isinstance(v, dict)}
    return out


def jsonl(*rows: str) -> str:
    return "".join(row + "\n" for row in rows)


GOOD = (
    '{"id": "g1", "answer": "1", "expected": "1", "score": 1}',
    '{"id": "g2", "answer": "2", "expected": "1", "score": 0}',
)


@pytest.mark.parametrize("name", ["data.jsonl", "data.json"])
def test_1_a_lone_surrogate_in_an_id_costs_that_record_and_the_job_finishes(
    tmp_path: Path, name: str
) -> None:
    hostile = '{"id": "a\\udc00", "answer": "1", "expected": "1", "score": 1}'
    rows = (GOOD[0], hostile, GOOD[1])
    text = jsonl(*rows) if name.endswith("jsonl") else "[" + ",\n".join(rows) + "]"
    (tmp_path / name).write_text(text, encoding="utf-8")
    results = run_twice(tmp_path, name)
    assert set(results) == {"g1", "g2", "invalid-line-2"}
    assert results["g1"]["exact"]["score"] == 1.0 and results["g2"]["exact"]["score"] == 0.0
    bad = results["invalid-line-2"]["exact"]
    assert bad["kind"] == "invalid_input"
    assert "id 'a\\udc00' holds a lone surrogate" in str(bad["message"])


def test_2_a_lone_surrogate_in_a_response_is_graded_and_the_report_written(tmp_path: Path) -> None:
    rows = (GOOD[0], '{"id": "s", "answer": "x\\ud800y", "expected": "1", "score": 0}', GOOD[1])
    (tmp_path / "data.jsonl").write_text(jsonl(*rows), encoding="utf-8")
    results = run_twice(tmp_path, "data.jsonl")
    assert set(results) == {"g1", "g2", "s"}
    assert results["s"]["exact"]["score"] == 0.0  # graded like any other response
    report = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "x\\ud800y" in report  # the lowest-scoring samples show it as the six characters \ud800


def test_3_two_huge_finite_scores_give_a_finite_summary_and_a_report(tmp_path: Path) -> None:
    rows = [
        f'{{"id": "h{i}", "answer": "1", "expected": "1", "score": {s}}}'
        for i, s in enumerate(["1.7e308", "-1.7e308", "0.5"])
    ]
    (tmp_path / "data.jsonl").write_text(jsonl(*rows), encoding="utf-8")
    results = run_twice(tmp_path, "data.jsonl")
    assert [results[f"h{i}"]["given"]["score"] for i in range(3)] == [1.7e308, -1.7e308, 0.5]
    first = openjudge(
        "run", "job.yaml", "--data", "data.jsonl", "--out", "out.jsonl", "--no-progress", cwd=tmp_path
    )
    given = next(line for line in first.stdout.splitlines() if line.startswith("given"))
    assert given.split()[4:8] == ["0.1667", "1.388e+308", "-1.7e+308", "1.7e+308"]  # mean, std, min, max
    report = (tmp_path / "report.html").read_text(encoding="utf-8")
    chart = report[report.index('data-grader="given"') :]
    assert "nan" not in chart.split("</svg>")[0] and "inf" not in chart.split("</svg>")[0]
    assert "1.53e+308 – 1.7e+308: 1" in chart


@pytest.fixture(scope="module")
def judge() -> Iterator[JudgeServerProcess]:
    with JudgeServerProcess(latency_s=0.0) as server:
        yield server


def test_3_huge_scores_from_an_llm_judge_without_a_score_range(
    tmp_path: Path, judge: JudgeServerProcess
) -> None:
    job = f"""
providers:
  judge: {{kind: openai, model: m, base_url: "{judge.base_url}", api_key: sk-test, max_retries: 0}}
graders:
  quality: {{type: llm, provider: judge, params: {{template: "Rate: {{answer}}"}}}}
"""
    rows = [
        f'{{"id": "j{i}", "answer": "#oj:score={s}"}}' for i, s in enumerate(["1.7e308", "-1.7e308", "2"])
    ]
    (tmp_path / "data.jsonl").write_text(jsonl(*rows), encoding="utf-8")
    results = run_twice(tmp_path, "data.jsonl", job)
    assert [results[f"j{i}"]["quality"]["score"] for i in range(3)] == [1.7e308, -1.7e308, 2.0]
    assert "nan" not in (tmp_path / "report.html").read_text(encoding="utf-8").split("Judge latency")[0]


@pytest.mark.parametrize("name", ["data.json", "data.jsonl"])
def test_4_a_deep_record_costs_itself_in_a_json_array_as_in_json_lines(tmp_path: Path, name: str) -> None:
    deep = '{"id": "deep", "answer": ' + "[" * 1_000 + "]" * 1_000 + ', "expected": "1", "score": 1}'
    rows = (GOOD[0], deep, GOOD[1])
    text = jsonl(*rows) if name.endswith("jsonl") else "[" + ",\n".join(rows) + "]"
    (tmp_path / name).write_text(text, encoding="utf-8")
    results = run_twice(tmp_path, name)
    assert set(results) == {"g1", "g2", "invalid-line-2"}
    message = str(results["invalid-line-2"]["exact"]["message"])
    assert "JSON nested too deeply to read" in message
    assert message.startswith("element 2 (line 2)" if name.endswith(".json") else "line 2")


def test_a_line_past_data_max_record_bytes_is_recorded_and_the_rest_graded(tmp_path: Path) -> None:
    big = json.dumps({"id": "big", "answer": "x" * 3_000_000, "expected": "1", "score": 1})
    (tmp_path / "data.jsonl").write_text(jsonl(GOOD[0], big, GOOD[1]), encoding="utf-8")
    results = run_twice(tmp_path, "data.jsonl", RULE_JOB + "data: {max_record_bytes: 65536}\n")
    assert set(results) == {"g1", "g2", "invalid-line-2"}
    assert str(results["invalid-line-2"]["given"]["message"]).startswith(
        "line 2: longer than the 65,536-byte limit (data.max_record_bytes"
    )
