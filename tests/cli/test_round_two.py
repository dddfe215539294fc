"""Issue 24, as a user meets it: the command in a subprocess, real files, the project's test judge.

One test per problem: failed calls re-attempted when the judge is back; ``--max-error-rate``
judging the whole results file; a grader class of one's own beside the config; every
config mistake in one pass; a run that checks its data before grading.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from openjudge.testing.judge_server import JudgeServerProcess
from tests.cli.test_user_flows import JOB, openjudge, results


def write_samples(path: Path, n: int, directive: str = "") -> None:
    """``n`` samples; ``times=K`` fault budgets are per message, so each test's messages differ."""
    path.write_text(
        "".join(
            json.dumps({"id": f"s{i}", "answer": f"{path.parent.name} {i} {directive} #oj:score={1 + i % 5}"})
            + "\n"
            for i in range(n)
        ),
        encoding="utf-8",
    )


# ---------------------------------------------------------------- 1. resume finishes the job


def test_a_rerun_after_an_outage_re_attempts_the_failed_calls_and_leaves_every_sample_scored(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    # The judge answers 503 to each sample's first request (it is "down"), then serves it.
    write_samples(tmp_path / "data.jsonl", 12, directive="#oj:status=503,times=1")
    (tmp_path / "job.yaml").write_text(
        JOB.format(base_url=judge_server.base_url, template="Rate: {answer}", extra=""), encoding="utf-8"
    )
    args = ("run", "job.yaml", "--data", "data.jsonl", "--no-progress")
    down = openjudge(*args, cwd=tmp_path)
    assert down.returncode == 3
    assert "every grader result failed: 12 of 12 grader results in results.jsonl are errors" in down.stderr
    assert {r["quality"]["kind"] for r in results(tmp_path / "results.jsonl").values()} == {"provider_error"}

    judge_server.reset_stats()
    up = openjudge(*args, cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    assert judge_server.stats().chat_requests == 12  # only the failed calls, once each
    rows = results(tmp_path / "results.jsonl")
    assert sorted(rows) == sorted(f"s{i}" for i in range(12))
    assert [rows[f"s{i}"]["quality"]["score"] for i in range(5)] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert all(r["quality"]["type"] == "score" for r in rows.values())
    assert "0 new samples graded" in up.stdout
    assert "re-attempted 12 samples whose results in results.jsonl had failed for system reasons" in up.stdout
    assert (tmp_path / "results.jsonl.bak").exists()  # the file with the errors, kept

    judge_server.reset_stats()
    done = openjudge(*args, cwd=tmp_path)  # nothing left to do: nothing asked
    assert done.returncode == 0 and judge_server.stats().chat_requests == 0
    assert "0 samples graded, 12 samples already complete in results.jsonl\n" in done.stdout


def test_keep_errors_keeps_the_failed_results(tmp_path: Path, judge_server: JudgeServerProcess) -> None:
    write_samples(tmp_path / "data.jsonl", 3, directive="#oj:status=503,times=1")
    (tmp_path / "job.yaml").write_text(
        JOB.format(base_url=judge_server.base_url, template="Rate: {answer}", extra=""), encoding="utf-8"
    )
    args = ("run", "job.yaml", "--data", "data.jsonl", "--no-progress")
    assert openjudge(*args, cwd=tmp_path).returncode == 3
    judge_server.reset_stats()
    kept = openjudge(*args, "--keep-errors", cwd=tmp_path)
    assert kept.returncode == 3  # the file is still all errors
    assert judge_server.stats().chat_requests == 0


def test_max_error_rate_judges_the_whole_file_so_a_rerun_with_the_judge_down_fails_too(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    lines = [
        json.dumps({"id": f"s{i}", "answer": f"answer {i}" + (" #oj:status=503" if i % 3 == 0 else "")})
        for i in range(9)
    ]
    (tmp_path / "data.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "job.yaml").write_text(
        JOB.format(base_url=judge_server.base_url, template="Rate: {answer}", extra=""), encoding="utf-8"
    )
    args = ("run", "job.yaml", "--data", "data.jsonl", "--no-progress", "--max-error-rate", "0.1")
    first = openjudge(*args, cwd=tmp_path)
    second = openjudge(*args, cwd=tmp_path)  # the 3 failed calls are tried again, and fail again
    for done in (first, second):
        assert done.returncode == 3
        assert (
            "3 of 9 grader results in results.jsonl are errors (33.3%), above --max-error-rate 0.1"
            in done.stderr
        )
    assert "re-attempted 3 samples" in second.stdout


# ---------------------------------------------------------------- 2. a grader class of your own

GRADER_MODULE = '''
from openjudge.graders.base_grader import BaseGrader
from openjudge.results import GraderScore


class NumericAnswer(BaseGrader):
    """1 when the response's last number equals the reference, else 0."""

    def __init__(self, name: str = "numeric", tolerance: float = 0.0) -> None:
        super().__init__(name=name, score_range=(0, 1))
        self.tolerance = tolerance

    async def aevaluate(self, response: str, reference: str) -> GraderScore:
        numbers = [float(w) for w in response.replace(",", " ").split() if w.lstrip("-").isdigit()]
        ok = bool(numbers) and abs(numbers[-1] - float(reference)) <= self.tolerance
        return GraderScore(name=self.name, score=float(ok), reason=f"numbers {numbers}", score_range=self.score_range)


class Strictest:
    """An aggregator: the lowest normalised score, or `floor` when there is none."""

    def __init__(self, floor: float = 0.0) -> None:
        self.floor = floor

    def __call__(self, results):
        scores = [r.normalized_score for r in results.values() if hasattr(r, "normalized_score")]
        return GraderScore(name="strictest", score=min(scores, default=self.floor), reason="min")
'''


def test_a_grader_class_beside_the_config_runs_validates_and_meta_evaluates(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "numeric.py").write_text(GRADER_MODULE, encoding="utf-8")
    (tmp_path / "jobs" / "job.yaml").write_text(
        textwrap.dedent(
            """
            graders:
              numeric:
                type: numeric:NumericAnswer
                params: {tolerance: 0.5}
                mapper: {response: response, reference: reference}
              exact: {type: string_match, mapper: {response: response, reference: reference}}
            aggregators:
              - {type: numeric:Strictest, name: reward, params: {floor: 0.0}}
            """
        ),
        encoding="utf-8",
    )
    items = [("It is 4", "4", 1), ("It is 5", "4", 0), ("4", "4", 1), ("no idea", "4", 0)]
    (tmp_path / "data.jsonl").write_text(
        "".join(
            json.dumps({"id": f"q{i}", "prompt": "2 + 2?", "response": r, "reference": ref, "label": label})
            + "\n"
            for i, (r, ref, label) in enumerate(items)
        ),
        encoding="utf-8",
    )
    # Run from another directory: the module is found beside the config, and so are the results.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    validated = openjudge("validate", "../jobs/job.yaml", "--data", "../data.jsonl", cwd=elsewhere)
    assert validated.returncode == 0, validated.stderr
    assert (
        "ok (2 graders, 0 providers; the first 4 records of ../data.jsonl fit every grader)"
        in validated.stdout
    )

    run = openjudge("run", "../jobs/job.yaml", "--data", "../data.jsonl", "--no-progress", cwd=elsewhere)
    assert run.returncode == 0, run.stderr
    rows = results(tmp_path / "jobs" / "results.jsonl")
    assert [rows[f"q{i}"]["numeric"]["score"] for i in range(4)] == [1.0, 0.0, 1.0, 0.0]
    assert rows["q0"]["numeric"]["reason"] == "numbers [4.0]"
    aggregates = {
        json.loads(line)["id"]: json.loads(line)["aggregates"]
        for line in (tmp_path / "jobs" / "results.jsonl").read_text().splitlines()[1:]
    }
    assert aggregates["q0"] == {"reward": 0.0} and aggregates["q2"] == {"reward": 1.0}  # exact fails q0

    meta = openjudge(
        "meta-eval",
        "jobs/job.yaml",
        "--data",
        "data.jsonl",
        "--grader",
        "numeric",
        "--json",
        "m.json",
        "--no-progress",
        "--bootstrap",
        "50",
        cwd=tmp_path,
    )
    assert meta.returncode == 0, meta.stderr
    report = json.loads((tmp_path / "m.json").read_text())
    assert "numeric" in json.dumps(report)


def test_a_grader_class_mistake_names_the_line_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "numeric.py").write_text(GRADER_MODULE, encoding="utf-8")
    (tmp_path / "job.yaml").write_text(
        "graders:\n"
        "  a: {type: numeric:NumericAnswr}\n"
        "  b: {type: numerc:NumericAnswer}\n"
        "  c: {type: numeric.NumericAnswer}\n"
        "  d: {type: numeric:NumericAnswer, params: {tolerence: 1}}\n",
        encoding="utf-8",
    )
    done = openjudge("validate", "job.yaml", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0] == (
        f"error: job.yaml:2: graders.a.type: {tmp_path / 'numeric.py'} has no 'NumericAnswr'; "
        "did you mean numeric:NumericAnswer?"
    )
    assert lines[1].startswith(
        "error: job.yaml:3: graders.b.type: no module named 'numerc'; did you mean 'numeric'?"
    )
    assert lines[2].startswith(
        "error: job.yaml:4: graders.c.type: unknown grader type 'numeric.NumericAnswer'"
    )
    assert lines[2].endswith("a class of your own is named with a colon: 'numeric:NumericAnswer'")
    assert lines[3].startswith(
        "error: job.yaml:5: graders.d.params.tolerence: unknown parameter 'tolerence'; did you mean 'tolerance'?"
    )
    assert len(lines) == 4


# ---------------------------------------------------------------- 4. every problem at once


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


# ---------------------------------------------------------------- 3. fail before spending


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
