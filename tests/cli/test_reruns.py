"""Rerunning ``openjudge run`` after failed calls, as a user meets it: the command in a subprocess.

Failed calls are re-attempted when the judge is back (``--keep-errors`` keeps them), and
``--max-error-rate`` judges the whole results file, so a rerun with the judge still down fails too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openjudge.testing.judge_server import JudgeServerProcess
from tests.cli._support import JOB, openjudge, results, write_samples

pytestmark = pytest.mark.slow  # the command in a subprocess, several runs per test


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
