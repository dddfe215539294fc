"""What a user hits with ``openjudge``, run as they run it: the command in a subprocess, real files.

Every command's stderr is checked for a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from openjudge.jobs._results import read_header
from openjudge.jobs._summary import format_cost
from openjudge.testing.judge_server import JudgeServerProcess
from tests.cli._support import JOB, ROOT, openjudge, results

pytestmark = pytest.mark.slow  # the command in a subprocess, several runs per test


# ---------------------------------------------------------------- resume is bound to the config


def test_the_judge_example_refuses_the_quickstarts_results_then_regrade_adapts_them(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    examples = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", examples)
    env = {
        "OPENAI_BASE_URL": judge_server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "XDG_CACHE_HOME": str(tmp_path),
    }
    # One --out for both (by default each config's results go beside it, and never meet).
    out = ("--out", "results.jsonl")
    assert (
        openjudge("run", "examples/quickstart/config.yaml", *out, "--no-progress", cwd=tmp_path).returncode
        == 0
    )
    before = results(tmp_path / "results.jsonl")

    judge_server.reset_stats()
    refused = openjudge("run", "examples/judge/config.yaml", *out, "--no-progress", cwd=tmp_path, env=env)
    assert refused.returncode == 1
    assert "results.jsonl holds 300 results written under a different config" in refused.stderr
    for change in (
        "graders.trajectory: added",
        "graders.action_loop: params.similarity_threshold: 1.0 -> (unset)",
        "graders.info_gain: removed",
        "--out NEW.jsonl",
        "--regrade",
    ):
        assert change in refused.stderr
    assert judge_server.stats().chat_requests == 0
    assert results(tmp_path / "results.jsonl") == before  # untouched

    adapted = openjudge(
        "run", "examples/judge/config.yaml", *out, "--no-progress", "--regrade", cwd=tmp_path, env=env
    )
    assert adapted.returncode == 0, adapted.stderr
    assert "graded trajectory (added); re-graded action_loop (changed)" in adapted.stdout
    after = results(tmp_path / "results.jsonl")
    assert after.keys() == before.keys()
    assert {tuple(r) for r in after.values()} == {("trajectory", "action_loop", "answer", "format")}
    assert all(r["answer"] == before[i]["answer"] for i, r in after.items())  # unchanged: kept as written
    assert all(r["trajectory"]["score"] == 0.5 for r in after.values())  # the test judge says 3 of 5
    assert results(tmp_path / "results.jsonl.bak") == before
    header = read_header(tmp_path / "results.jsonl")
    assert header is not None and set(header.job.graders) == {"trajectory", "action_loop", "answer", "format"}


def write_data(path: Path, n: int, *, failing: tuple[int, ...] = ()) -> Path:
    lines = []
    for i in range(n):
        directive = " #oj:status=400" if i in failing else f" #oj:score={1 + i % 5}"
        lines.append(
            json.dumps({"id": f"s{i}", "answer": f"answer {i}{directive}", "expected": f"answer {i}"})
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_an_edited_prompt_is_refused_and_an_added_grader_is_graded(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    write_data(tmp_path / "data.jsonl", 20)
    job = tmp_path / "job.yaml"
    job.write_text(
        JOB.format(base_url=judge_server.base_url, template="Rate: {answer}", extra=""), encoding="utf-8"
    )
    assert openjudge("run", "job.yaml", "--data", "data.jsonl", "--no-progress", cwd=tmp_path).returncode == 0

    job.write_text(
        JOB.format(base_url=judge_server.base_url, template="Score: {answer}", extra=""), encoding="utf-8"
    )
    edited = openjudge("run", "job.yaml", "--data", "data.jsonl", "--no-progress", cwd=tmp_path)
    assert edited.returncode == 1
    assert "graders.quality: params.template: 'Rate: {answer}' -> 'Score: {answer}'" in edited.stderr

    exact = "  exact: {type: string_match, mapper: {response: answer, reference: expected}}\n"
    job.write_text(
        JOB.format(base_url=judge_server.base_url, template="Rate: {answer}", extra=exact), encoding="utf-8"
    )
    judge_server.reset_stats()
    added = openjudge("run", "job.yaml", "--data", "data.jsonl", "--no-progress", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert "graded exact (added) on 20 samples" in added.stdout
    assert judge_server.stats().chat_requests == 0  # the judge's results were kept, not asked again
    rows = results(tmp_path / "results.jsonl")
    assert len(rows) == 20 and all(r["exact"]["score"] == 0.0 for r in rows.values())  # directive differs
    assert [rows[f"s{i}"]["quality"]["score"] for i in range(5)] == [1.0, 2.0, 3.0, 4.0, 5.0]


# ---------------------------------------------------------------- YAML errors, no tracebacks


def test_duplicate_keys_and_bad_values_are_reported_with_lines(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "graders:\n  exact: {type: string_match, params: {mode: fuzzy}}\n  exact: {type: reasoning_format}\n",
        encoding="utf-8",
    )
    done = openjudge("validate", "job.yaml", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        "error: job.yaml:3: graders.exact: duplicate key 'exact' (first at line 2); YAML would keep only "
        "the last one: rename or remove one\n"
    )
    (tmp_path / "job.yaml").write_text(
        "graders:\n  exact: {type: string_match, params: {mode: fuzzy}}\n"
        "  judged: {type: llm, provider: p, params: {template: '{x}', score_range: 1-5}}\n"
        "providers:\n  p: {kind: openai, model: m, base_url: 'http://127.0.0.1:9/v1', api_key: k}\n",
        encoding="utf-8",
    )
    done = openjudge("validate", "job.yaml", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0].startswith(
        "error: job.yaml:2: graders.exact.params.mode: unknown parameter 'mode'; did you mean"
    )
    assert lines[1].startswith(
        "error: job.yaml:3: graders.judged.params.score_range: score_range must be two"
    )


def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    environ = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "openjudge", "schema"],
        cwd=tmp_path,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `| head` that has read all it wants
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert stderr == ""


# ---------------------------------------------------------------- data problems, failing runs


def test_validate_checks_the_data_against_mappers_and_placeholders(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "providers:\n  p: {kind: openai, model: m, base_url: 'http://127.0.0.1:9/v1', api_key: k}\n"
        "graders:\n"
        "  exact: {type: string_match, mapper: {response: answer, reference: ground_truth}}\n"
        "  judged: {type: llm, provider: p, params: {template: 'Q: {question} A: {answer}', score_range: [1, 5]}}\n"
        "data: {path: data.jsonl}\n",
        encoding="utf-8",
    )
    (tmp_path / "data.jsonl").write_text(
        '{"answer": "4", "question": "2+2?", "expected": "4"}\n{"answer": "5"}\n{oops\n', encoding="utf-8"
    )
    done = openjudge("validate", "job.yaml", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: job.yaml:4: graders.exact.mapper.reference: cannot read 2 of the first 3 records of "
        "data.jsonl (first at line 1: sample has no field 'ground_truth')",
        "error: job.yaml:5: graders.judged: cannot read 1 of the first 3 records of data.jsonl (first at "
        "line 2: sample has no field 'question': add it to the data, or map it from another field with "
        "graders.judged.mapper: {question: <field>})",
        "error: data.jsonl:3: 1 of the first 3 records are malformed (first: line 3: invalid JSON "
        "(Expecting property name enclosed in double quotes: column 2)); they are recorded as "
        "invalid_input results",
    ]


def test_a_run_whose_every_call_fails_exits_3_with_the_first_error(tmp_path: Path) -> None:
    write_data(tmp_path / "data.jsonl", 4)
    (tmp_path / "job.yaml").write_text(
        JOB.format(base_url="http://127.0.0.1:9/v1", template="Rate: {answer}", extra="").replace(
            "max_retries: 0", "max_retries: 0, timeout_s: 5"
        ),
        encoding="utf-8",
    )
    done = openjudge("run", "job.yaml", "--data", "data.jsonl", "--no-progress", cwd=tmp_path)
    assert done.returncode == 3
    assert (
        "error: every grader result failed: 4 of 4 grader results in results.jsonl are errors (100.0%); "
        "the first: quality: provider_error:" in done.stderr
    )
    assert "provider_error" in done.stdout  # the summary's error table, with the first message
    assert len(results(tmp_path / "results.jsonl")) == 4  # recorded all the same


def test_max_error_rate_fails_a_partly_failing_run(tmp_path: Path, judge_server: JudgeServerProcess) -> None:
    write_data(tmp_path / "data.jsonl", 10, failing=(2, 5, 7))
    (tmp_path / "job.yaml").write_text(
        JOB.format(base_url=judge_server.base_url, template="Rate: {answer}", extra=""), encoding="utf-8"
    )
    args = ("run", "job.yaml", "--data", "data.jsonl", "--no-progress")
    tolerated = openjudge(*args, "--out", "a.jsonl", cwd=tmp_path)
    assert tolerated.returncode == 0
    assert (
        "3 of 10 grader results in a.jsonl are errors (30.0%); the first: quality: provider_error:"
        in tolerated.stdout
    )
    strict = openjudge(*args, "--out", "b.jsonl", "--max-error-rate", "0.2", cwd=tmp_path)
    assert strict.returncode == 3
    assert "3 of 10 grader results in b.jsonl are errors (30.0%), above --max-error-rate 0.2" in strict.stderr


# ---------------------------------------------------------------- judge time and queue time apart


def test_queue_time_is_not_judge_latency(tmp_path: Path, judge_server: JudgeServerProcess) -> None:
    n, latency = 6, 0.2
    judge_server.set_latency(latency)
    write_data(tmp_path / "data.jsonl", n)
    (tmp_path / "job.yaml").write_text(
        JOB.format(base_url=judge_server.base_url, template="Rate: {answer}", extra="").replace(
            "max_retries: 0", "max_retries: 0, limits: {max_concurrency: 1}"
        ),
        encoding="utf-8",
    )
    done = openjudge("run", "job.yaml", "--data", "data.jsonl", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "judge p50 s  judge p95 s  queue p50 s  queue p95 s" in done.stdout
    rows = [r["quality"] for r in results(tmp_path / "results.jsonl").values()]
    latencies = [float(r["latency_s"]) for r in rows]  # type: ignore[arg-type]
    queued = [float(r.get("queue_s") or 0.0) for r in rows]  # type: ignore[arg-type]
    assert min(latencies) >= latency * 0.95  # each call's own time at the server, at least its latency
    # One slot: the k-th call waits for k earlier ones, so the waits add up to at least
    # latency * (0 + 1 + ... + n-1); none of that is counted as judge latency.
    assert sum(queued) >= latency * n * (n - 1) / 2 * 0.95


# ---------------------------------------------------------------- name, version, usage


def test_version_and_usage_errors(tmp_path: Path) -> None:
    version = openjudge("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith(
        "openjudge 0.1.0 (distribution openjudge-graders;"
    )
    (tmp_path / "job.yaml").write_text("graders:\n  f: {type: reasoning_format}\n", encoding="utf-8")
    (tmp_path / "d.jsonl").write_text('{"response": "x"}\n', encoding="utf-8")
    workers = openjudge("run", "job.yaml", "--data", "d.jsonl", "--workers", "4", cwd=tmp_path)
    assert workers.returncode == 2
    assert (
        workers.stderr
        == "error: --workers applies to --engine ray only; add --engine ray, or drop --workers\n"
    )
    assert not (tmp_path / "results.jsonl").exists()


def test_estimate_says_what_it_assumes(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "providers:\n  p: {kind: openai, model: m, base_url: 'http://127.0.0.1:9/v1', api_key: k,"
        " price: {prompt_per_1k: 0.0005, completion_per_1k: 0.0015}}\n"
        "graders:\n  q: {type: llm, provider: p, params: {template: 'Rate: {answer}', score_range: [1, 5]}}\n",
        encoding="utf-8",
    )
    (tmp_path / "d.jsonl").write_text('{"answer": "four"}\n', encoding="utf-8")
    done = openjudge("estimate", "job.yaml", "--data", "d.jsonl", cwd=tmp_path)
    assert done.returncode == 0
    row = next(line for line in done.stdout.splitlines() if line.startswith("q "))
    calls, skipped, prompt, completion, cost = row.split()[1:]
    assert (calls, skipped, completion) == ("1", "0", "200")
    assert cost == format_cost(
        int(prompt) * 0.0005 / 1000 + 200 * 0.0015 / 1000
    )  # e.g. $0.00038, not 3.8e-04
    assert (
        "completion tokens assume 200 per call for q (their provider sets no sampling.max_tokens"
        in done.stdout
    )


# ---------------------------------------------------------------- datasets never crash or lose a record


def test_hostile_datasets_become_invalid_input_rows_and_nothing_is_lost(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "graders:\n  exact: {type: string_match, mapper: {response: answer, reference: expected}}\n",
        encoding="utf-8",
    )
    deep = '{"answer": ' + "[" * 100_000 + "]" * 100_000 + "}"
    lines = [
        '{"id": "invalid-line-2", "answer": "a", "expected": "a"}',  # claims the id of the next line
        "{not json",
        deep,
        '{"answer": ' + "9" * 5000 + ', "expected": "x"}',
        '{"id": "real", "answer": "b", "expected": "b"}',
    ]
    (tmp_path / "data.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    first = openjudge("run", "job.yaml", "--data", "data.jsonl", "--no-progress", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "1 sample graded, 4 malformed records\n" in first.stdout
    rows = results(tmp_path / "results.jsonl")
    assert set(rows) == {"invalid-line-1", "invalid-line-2", "invalid-line-3", "invalid-line-4", "real"}
    messages = {i: str(r["exact"]["message"]) for i, r in rows.items() if i != "real"}
    assert messages["invalid-line-1"].startswith(
        "line 1: id 'invalid-line-2' is reserved for malformed records"
    )
    assert messages["invalid-line-2"].startswith("line 2: invalid JSON")
    assert messages["invalid-line-3"].startswith("line 3: JSON nested too deeply")
    assert messages["invalid-line-4"].startswith("line 4: a number has more than 4,300 digits")
    assert all(r["exact"]["kind"] == "invalid_input" for i, r in rows.items() if i != "real")

    again = openjudge("run", "job.yaml", "--data", "data.jsonl", "--no-progress", cwd=tmp_path)
    assert again.returncode == 0
    assert "0 samples graded, 1 sample already complete in results.jsonl\n" in again.stdout
    assert set(results(tmp_path / "results.jsonl")) == set(rows)
