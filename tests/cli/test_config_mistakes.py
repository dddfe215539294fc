"""Config mistakes as ``openjudge`` reports them: every independent one in one pass, before spending.

Run as a user runs it: the command in a subprocess, real files, the session's test judge.
"""

from __future__ import annotations

from pathlib import Path

from openjudge.testing.judge_server import JudgeServerProcess
from tests.cli._support import JOB, openjudge, write_samples


def test_validate_names_three_independent_mistakes_in_one_pass(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "providers:\n"
        "  judge: {kind: openia, model: m, api_key: k}\n"
        "graders:\n"
        "  exact: {type: string_mach, mapper: {response: answer, reference: expected}}\n"
        "  length: {type: length_penalty, params: {max_lenght: 10}}\n"
        "  judged: {type: llm, provider: judge, params: {template: 'Rate {answer}'}}\n",
        encoding="utf-8",
    )
    done = openjudge("validate", "job.yaml", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0].startswith(
        "error: job.yaml:2: providers.judge.kind: unknown provider kind 'openia'; did you mean 'openai'?"
    )
    assert lines[1].startswith(
        "error: job.yaml:4: graders.exact.type: unknown grader type 'string_mach'; did you mean 'string_match'"
    )
    assert lines[2].startswith(
        "error: job.yaml:5: graders.length.params.max_lenght: unknown parameter 'max_lenght'; did you mean"
    )
    assert len(lines) == 3  # the judge of the invalid provider is not reported again


def test_run_refuses_a_mapper_that_no_record_can_fill(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    write_samples(tmp_path / "data.jsonl", 5)
    extra = "  exact: {type: string_match, mapper: {response: answer, reference: ground_truth}}\n"
    (tmp_path / "job.yaml").write_text(
        JOB.format(base_url=judge_server.base_url, template="Rate: {answer}", extra=extra), encoding="utf-8"
    )
    judge_server.reset_stats()
    done = openjudge("run", "job.yaml", "--data", "data.jsonl", "--no-progress", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: job.yaml:9: graders.exact.mapper.reference: cannot read any of the first 5 records of "
        "data.jsonl (first at line 1: sample has no field 'ground_truth')",
        "error: nothing was graded: fix the mapper (or the data), then rerun; "
        "'openjudge validate job.yaml --data data.jsonl' checks it without grading",
    ]
    assert judge_server.stats().chat_requests == 0
    assert not (tmp_path / "results.jsonl").exists()
