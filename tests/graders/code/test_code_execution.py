"""CodeExecutionGrader: scores, per-test reasons, limits and invalid inputs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from openjudge.graders.base_grader import GraderError, GraderScore
from openjudge.graders.code import CodeExecutionGrader, CodeTestCase
from openjudge.graders.code._namespaced import BwrapBackend

pytestmark = pytest.mark.anyio

ADD_CASES: list[dict[str, str]] = [
    {"input": "1 2\n", "output": "3\n"},
    {"input": "5 7\n", "output": "12"},
]
ADD = "a, b = map(int, input().split())\nprint(a + b)"


async def test_a_failing_sandbox_is_an_error_not_a_score() -> None:
    grader = CodeExecutionGrader(sandbox=BwrapBackend(executable="/nonexistent/bwrap"))
    result = await grader.aevaluate(response="print(1)", test_cases=[{"output": "1"}] * 3)
    assert isinstance(result, GraderError)
    assert (result.kind, result.error_type) == ("internal", "SandboxError")
    assert "could not start the bwrap sandbox" in result.message


async def grade(grader: CodeExecutionGrader, response: str, cases: Any) -> GraderScore:
    result = await grader.aevaluate(response=response, test_cases=cases)
    assert isinstance(result, GraderScore), result
    assert result.score_range is not None
    assert result.score_range.contains(result.score)
    return result


def entries_of(result: GraderScore) -> list[dict[str, Any]]:
    tests = result.metadata["tests"]
    assert isinstance(tests, list)
    return [dict(t) for t in tests if isinstance(t, dict)]


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_correct_wrong_and_partial() -> None:
    grader = CodeExecutionGrader(timeout_s=5)
    correct = await grade(grader, ADD, ADD_CASES)
    assert correct.score == 1.0
    assert correct.reason == "2 of 2 tests passed"
    wrong = await grade(grader, "print(0)", ADD_CASES)
    assert wrong.score == 0.0
    assert [t["reason"] for t in entries_of(wrong)] == ["wrong_answer", "wrong_answer"]
    partial = await grade(grader, "a, b = map(int, input().split())\nprint(3 if a == 1 else 0)", ADD_CASES)
    assert partial.score == 0.5
    assert [t["passed"] for t in entries_of(partial)] == [True, False]
    assert partial.reason == "1 of 2 tests passed (failures: wrong_answer)"


async def test_markdown_fence_is_extracted() -> None:
    response = f"Here is my solution:\n```python\n{ADD}\n```\nIt adds the numbers."
    assert (await grade(CodeExecutionGrader(), response, ADD_CASES)).score == 1.0
    raw = CodeExecutionGrader(extract_code=False)
    assert (await grade(raw, response, ADD_CASES)).score == 0.0


async def test_assert_style_tests_are_decided_by_the_grader() -> None:
    cases = [
        CodeTestCase(test="assert add(2, 3) == 5"),
        CodeTestCase(test="assert add(-1, 1) == 0"),
        CodeTestCase(test="assert add('a', 'b') == 'ab'"),
        CodeTestCase(test="assert add(1, 1) == 3"),
    ]
    result = await grade(CodeExecutionGrader(), "def add(a, b):\n    return a + b", cases)
    assert result.score == 0.75
    assert {e["verified"] for e in entries_of(result)} == {"grader"}
    last = entries_of(result)[3]
    assert (last["reason"], last["detail"]) == ("wrong_answer", "add(1, 1) returned 2; assert add(1, 1) == 3")


async def test_other_snippets_run_in_the_verifier() -> None:
    case = CodeTestCase(test="values = [add(i, i) for i in range(3)]\nassert values == [0, 2, 4]")
    good = await grade(CodeExecutionGrader(), "def add(a, b):\n    return a + b", [case])
    assert good.score == 1.0 and entries_of(good)[0]["verified"] == "verifier"
    bad = await grade(CodeExecutionGrader(), "def add(a, b):\n    return a * b", [case])
    [entry] = entries_of(bad)
    assert (entry["reason"], entry["detail"]) == ("wrong_answer", "test: AssertionError")
    assert "AssertionError" in entry["stderr_tail"] and 'File "test.py", line 2' in entry["stderr_tail"]


async def test_call_checks() -> None:
    cases = [
        {"call": {"function": "pair", "args": [1, [2]], "expected": [1, [2]]}},  # a tuple is a JSON list
        {"call": {"fn_name": "pair", "args": [1], "kwargs": {"b": None}, "expected": [1, None]}},
        {"call": {"function": "pair", "args": [1, 2], "expected": [2, 1]}},
        {"call": {"function": "missing", "expected": 0}},
    ]
    result = await grade(CodeExecutionGrader(), "def pair(a, b):\n    return (a, b)", cases)
    assert [e["reason"] for e in entries_of(result)] == ["passed", "passed", "wrong_answer", "runtime_error"]
    assert entries_of(result)[3]["detail"] == "missing() raised NameError"


async def test_exiting_before_the_calls_fails() -> None:
    result = await grade(CodeExecutionGrader(), "import os\nos._exit(0)", [{"test": "assert f() == 1"}])
    [entry] = entries_of(result)
    assert (entry["reason"], entry["detail"]) == ("runtime_error", "the program ended before f() returned")


async def test_stdout_and_test_together() -> None:
    case = CodeTestCase(stdin="4", expected_stdout="16", test="assert square(3) == 9")
    code = "def square(x):\n    return x * x\nprint(square(int(input())))"
    assert (await grade(CodeExecutionGrader(), code, [case])).score == 1.0


async def test_infinite_loop_is_killed_within_the_limit() -> None:
    start = time.monotonic()
    result = await grade(CodeExecutionGrader(timeout_s=1.0), "while True:\n    pass", ADD_CASES)
    wall = time.monotonic() - start
    assert result.score == 0.0
    for entry in entries_of(result):
        assert entry["reason"] == "timeout"
        assert entry["elapsed_s"] < 1.0 + 1.5
    assert wall < 1.0 + 3.0  # both tests run at the same time


async def test_memory_hog() -> None:
    result = await grade(CodeExecutionGrader(memory_mb=256), "x = [0] * (10 ** 9)", [{"output": ""}])
    [entry] = entries_of(result)
    assert (entry["reason"], entry["detail"]) == ("memory", "memory limit exceeded")


async def test_socket_is_refused() -> None:
    code = "import socket\ns = socket.socket()\ns.connect(('127.0.0.1', 80))\nprint('connected')"
    result = await grade(CodeExecutionGrader(), code, [{"output": "connected"}])
    [entry] = entries_of(result)
    assert (entry["reason"], entry["detail"]) == ("runtime_error", "PermissionError")


async def test_caught_refusal_does_not_fail_a_correct_answer() -> None:
    code = "try:\n    import urllib.request; urllib.request.urlopen('http://example.com')\nexcept OSError:\n    pass\nprint(3)"
    result = await grade(CodeExecutionGrader(), code, [{"output": "3"}])
    assert entries_of(result)[0]["passed"] is True


async def test_file_write_outside_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "outside.txt"
    code = f"open({str(target)!r}, 'w').write('pwned')\nprint('done')"
    for sandbox in ("auto", "process"):
        result = await grade(CodeExecutionGrader(sandbox=sandbox), code, [{"output": "done"}])
        [entry] = entries_of(result)
        assert entry["passed"] is False
        assert entry["reason"] in ("runtime_error", "sandbox_violation")
    assert not target.exists()


async def test_runtime_error_and_output_limit() -> None:
    grader = CodeExecutionGrader(max_output_bytes=1000)
    crash = await grade(grader, "raise ValueError('boom')", [{"output": ""}])
    [entry] = entries_of(crash)
    assert (entry["reason"], entry["detail"]) == ("runtime_error", "ValueError")
    assert "ValueError: boom" in entry["stderr_tail"]
    flood = await grade(grader, "print('x' * 100_000)", [{"output": ""}])
    assert entries_of(flood)[0]["reason"] == "output_limit"


async def test_temp_dirs_are_gone(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    grader = CodeExecutionGrader(work_root=str(root), sandbox="process")
    result = await grade(grader, "open('scratch.txt', 'w').write('x')\nprint(1)", [{"output": "1"}] * 3)
    assert result.score == 1.0
    assert list(root.iterdir()) == []


async def test_tests_run_concurrently_up_to_the_limit() -> None:
    code = "import time\ntime.sleep(0.5)\nprint(1)"
    cases = [{"output": "1"}] * 4
    start = time.monotonic()
    parallel = await grade(CodeExecutionGrader(max_concurrency=4, max_processes=4), code, cases)
    parallel_wall = time.monotonic() - start
    assert parallel.score == 1.0
    assert parallel_wall < sum(float(t["elapsed_s"]) for t in entries_of(parallel)) * 0.75
    start = time.monotonic()
    serial = await grade(CodeExecutionGrader(max_concurrency=4, max_processes=1), code, cases[:3])
    assert serial.score == 1.0
    assert time.monotonic() - start >= 3 * 0.5


async def test_process_limit_is_shared_across_calls() -> None:
    grader = CodeExecutionGrader(max_processes=1)
    code = "import time\ntime.sleep(0.4)\nprint(1)"
    results: list[GraderScore] = []

    async def one() -> None:
        results.append(await grade(grader, code, [{"output": "1"}]))

    start = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(one)
        tg.start_soon(one)
    assert [r.score for r in results] == [1.0, 1.0]
    assert time.monotonic() - start >= 2 * 0.4


@pytest.mark.parametrize(
    ("cases", "message"),
    [
        ("not a list", "input 'test_cases' must be a list"),
        ([], "input 'test_cases' is empty"),
        ([{"input": "1"}], "input 'test_cases'[0] is invalid"),
        ([{"output": "1"}, 5], "input 'test_cases'[1] must be a mapping"),
        ([{"output": 1}], "input 'test_cases'[0] is invalid"),
    ],
)
async def test_invalid_test_cases(cases: Any, message: str) -> None:
    result = await CodeExecutionGrader().aevaluate(response="print(1)", test_cases=cases)
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert message in result.message


async def test_invalid_response() -> None:
    result = await CodeExecutionGrader().aevaluate(response=b"print(1)", test_cases=ADD_CASES)  # type: ignore[arg-type]  # deliberately wrong
    assert isinstance(result, GraderError)
    assert result.kind == "invalid_input"
    assert "'response'" in result.message


def test_bad_configuration() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        CodeExecutionGrader(timeout_s=-1)
    with pytest.raises(ValueError, match="unknown sandbox"):
        CodeExecutionGrader(sandbox="docker")  # type: ignore[arg-type]  # deliberately wrong
    with pytest.raises(TypeError, match="SandboxBackend"):
        CodeExecutionGrader(sandbox=42)  # type: ignore[arg-type]  # deliberately wrong
    with pytest.raises(ValueError, match="output_match"):
        CodeExecutionGrader(output_match="fuzzy")  # type: ignore[arg-type]  # deliberately wrong
    with pytest.raises(ValueError, match="max_concurrency"):
        CodeExecutionGrader(max_concurrency=0)


def test_declared_inputs() -> None:
    spec = CodeExecutionGrader().input_spec()
    assert spec.required == {"response", "test_cases"}
    assert not spec.optional


def test_built_from_a_config_with_a_sandbox() -> None:
    from openjudge.graders._registry import lookup

    params: dict[str, Any] = {"sandbox": "sandbox_fusion", "sandbox_url": "http://127.0.0.1:8080/run_code"}
    grader = lookup("code_execution").load()(**params)  # as a config file's params arrive
    assert isinstance(grader, CodeExecutionGrader) and grader.sandbox.name == "sandbox_fusion"
    with pytest.raises(ValueError, match="needs sandbox_url"):
        lookup("code_execution").load()(**{**params, "sandbox_url": None})
