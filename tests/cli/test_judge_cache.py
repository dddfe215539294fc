"""Verdicts belong to the judge that gave them: the judge cache of ``openjudge run``, run as a
user runs it (the command in a subprocess, real files, a test judge swapped on one port)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from openjudge.testing.judge_server import JudgeServerProcess
from tests.cli._support import openjudge, results

pytestmark = pytest.mark.slow  # the command in a subprocess, judge servers in child processes

MODEL = "qwen3-8b"
JOB = """
providers:
  judge: {{kind: openai, model: {model}, base_url: "http://127.0.0.1:{port}/v1", api_key: sk-test, max_retries: 0}}
graders:
  quality:
    type: llm
    provider: judge
    params: {{template: "Rate: {{answer}}", score_range: [1, 5], max_reasks: {reasks}}}
{cache}"""


@contextmanager
def judge(port: int, score: float, root: str | None = None) -> Iterator[JudgeServerProcess]:
    """A test judge on ``port`` serving ``MODEL``: one judge per score (and root)."""
    with JudgeServerProcess(port=port, model=MODEL, default_score=score, root=root) as server:
        yield server


def free_port() -> int:
    with JudgeServerProcess() as probe:
        return probe.port


def setup(folder: Path, port: int, *, cache: str = "", reasks: int = 1) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.yaml").write_text(
        JOB.format(model=MODEL, port=port, cache=cache, reasks=reasks), encoding="utf-8"
    )
    (folder / "data.jsonl").write_text(
        "".join(json.dumps({"id": f"s{i}", "answer": f"answer {i}"}) + "\n" for i in range(6)),
        encoding="utf-8",
    )


def scores(path: Path) -> set[object]:
    return {row["quality"]["score"] for row in results(path).values()}


def run(folder: Path, out: str, *extra: str) -> str:
    done = openjudge(
        "run", "job.yaml", "--data", "data.jsonl", "--out", out, "--no-progress", *extra, cwd=folder
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_new_results_file_gets_the_new_judges_scores(tmp_path: Path) -> None:
    port = free_port()
    setup(tmp_path, port)
    with judge(port, 5):
        run(tmp_path, "first.jsonl")
    assert scores(tmp_path / "first.jsonl") == {5.0}
    assert (tmp_path / "first.jsonl.judge-cache.sqlite").exists()  # the results file's own cache
    # Another judge on the same port, under the same name (the real one after the test judge).
    with judge(port, 2) as real:
        printed = run(tmp_path, "second.jsonl")
        (tmp_path / "elsewhere").mkdir()
        run(tmp_path, str(tmp_path / "elsewhere" / "third.jsonl"))
        (tmp_path / "first.jsonl").unlink()  # a results file started anew starts its cache anew
        run(tmp_path, "first.jsonl")
        assert real.stats().chat_requests == 18
    assert "judge cache" not in printed
    for out in ("second.jsonl", "elsewhere/third.jsonl", "first.jsonl"):
        assert scores(tmp_path / out) == {2.0}, out


def test_re_grading_a_results_file_is_answered_by_its_own_verdicts(tmp_path: Path) -> None:
    port = free_port()
    setup(tmp_path, port)
    with judge(port, 4) as server:
        run(tmp_path, "results.jsonl")
        setup(tmp_path, port, reasks=2)  # a setting the judge never sees: the same requests
        server.reset_stats()
        printed = run(tmp_path, "results.jsonl", "--regrade")
        witness = server.stats().chat_requests
    # One call tells the new process what the server sends with its replies; the rest were stored.
    assert witness == 1
    assert printed.startswith(
        "judge cache: 5 of 6 judge calls were answered by verdicts already stored for results.jsonl "
        "(results.jsonl.judge-cache.sqlite); --no-cache asks the judge again\n\n6 samples\n"
    )
    assert scores(tmp_path / "results.jsonl") == {4.0}


def test_a_shared_cache_is_named_and_keeps_each_judges_verdicts_apart(tmp_path: Path) -> None:
    port = free_port()
    setup(tmp_path, port, cache="cache: {path: team-cache.sqlite}\n")
    with judge(port, 5, root="/models/judge-v1"):
        run(tmp_path, "v1.jsonl")
    with judge(port, 3, root="/models/judge-v2") as retrained:  # redeployed under its served name
        printed = run(tmp_path, "v2.jsonl")
        assert retrained.stats().chat_requests == 6
    assert "judge cache" not in printed and scores(tmp_path / "v2.jsonl") == {3.0}
    with judge(port, 1, root="/models/judge-v1"):  # v1's weights again: its verdicts are shared
        printed = run(tmp_path, "again.jsonl")
    assert printed.startswith(
        "judge cache: 5 of 6 judge calls were answered from the shared cache team-cache.sqlite "
        "(the config's cache.path): verdicts stored by any job that names it; --no-cache asks the judge again\n"
    )
    given = [row["quality"]["score"] for row in results(tmp_path / "again.jsonl").values()]
    assert (given.count(1.0), given.count(5.0)) == (1, 5)  # the witness's, and v1's
    assert not (tmp_path / "v1.jsonl.judge-cache.sqlite").exists()  # shared: no file of the results' own
