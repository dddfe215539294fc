"""What ``openjudge`` prints fits a terminal and names the right thing: the command in a
subprocess, on real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openjudge.testing.judge_server import JudgeServerProcess
from tests.cli._support import openjudge

pytestmark = pytest.mark.slow  # the command in a subprocess

JOB = """
providers:
  judge: {{kind: openai, model: m, base_url: "{base_url}", api_key: sk-test, max_retries: 0,
          price: {{prompt_per_1k: 0.15, completion_per_1k: 0.6}}}}
graders:
  answer_correctness_against_the_reference:
    type: llm
    provider: judge
    params: {{template: "Rate: {{answer}}", score_range: [1, 5]}}
  exact_match_of_the_final_answer: {{type: string_match, mapper: {{response: answer, reference: expected}}}}
  a_custom_grader_with_a_long_name: {{type: provided_score, mapper: {{score: score}}}}
aggregators:
  - {{type: weighted_mean, name: reward, weights: {{answer_correctness_against_the_reference: 1, exact_match_of_the_final_answer: 1}}}}
"""


def test_the_summary_fits_80_columns(tmp_path: Path, judge_server: JudgeServerProcess) -> None:
    (tmp_path / "job.yaml").write_text(JOB.format(base_url=judge_server.base_url), encoding="utf-8")
    rows = [
        {
            "id": f"s{i}",
            "answer": f"answer {i} #oj:score={1 + i % 5}",
            "expected": "answer 1",
            "score": "high" if i == 3 else i / 7,
        }
        for i in range(40)
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    done = openjudge("run", "job.yaml", "--data", "data.jsonl", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    table = done.stdout.split("\n40 samples graded")[0]
    assert max(len(line) for line in table.splitlines()) <= 80, table
    assert "judge and queue times in seconds" in table
    assert "answer_correctness_against_the_re…  40      40       0" in table  # a name cut to fit
    assert "invalid_input      1  score: expected a finit…" in table  # the first error, cut to fit
    assert (
        "the first: a_custom_grader_with_a_long_name: invalid_input: score: expected a finite number"
        in done.stdout
    )


def test_a_misspelt_provider_is_matched_against_one_with_errors_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "providers:\n"
        "  judge: {kind: openia, model: m, base_url: 'http://127.0.0.1:9/v1'}\n"
        "graders:\n"
        "  quality: {type: llm, provider: judg, params: {template: 'Rate: {x}'}}\n",
        encoding="utf-8",
    )
    done = openjudge("validate", "job.yaml", cwd=tmp_path)
    assert done.returncode == 1
    kind, provider = done.stderr.splitlines()
    assert kind.startswith(
        "error: job.yaml:2: providers.judge.kind: unknown provider kind 'openia'; did you mean"
    )
    assert provider == (
        "error: job.yaml:4: graders.quality.provider: unknown provider 'judg'; did you mean 'judge'? "
        "(valid: judge); providers with errors of their own (above): 'judge'"
    )
