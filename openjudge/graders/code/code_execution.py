"""Run a Python solution against test cases in a sandboxed subprocess."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import ClassVar, Literal, TypeAlias

import anyio
from pydantic import JsonValue, ValidationError

from openjudge.graders.base_grader import BaseGrader, InvalidInputError, grader_boundary
from openjudge.graders.code.cases import CodeTestCase
from openjudge.graders.code.sandbox import SandboxLimits, SandboxRun, run_python
from openjudge.graders.inputs import require_str
from openjudge.graders.schema import GraderScore, ScoreRange
from openjudge.models.loop_local import LoopLocal

__all__ = ["CodeExecutionGrader", "FailureReason", "OutputMatch", "extract_code"]

OutputMatch: TypeAlias = Literal["exact", "lines", "tokens"]
FailureReason: TypeAlias = Literal[
    "passed", "wrong_answer", "timeout", "runtime_error", "memory", "output_limit", "sandbox_violation"
]
_FENCE = re.compile(r"```[ \t]*(?P<lang>[\w+.-]*)[^\n]*\n(?P<body>.*?)```", re.DOTALL)
_PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})
_STDERR_TAIL = 500


def extract_code(text: str) -> str:
    """The last fenced ```` ```python ```` block of ``text``, else its last untagged block, else ``text``."""
    blocks = [(m["lang"].lower(), m["body"]) for m in _FENCE.finditer(text)]
    for wanted in (lambda lang: lang in _PYTHON_TAGS, lambda lang: lang == ""):
        chosen = [body for lang, body in blocks if wanted(lang)]
        if chosen:
            return chosen[-1]
    return text


def _outputs_match(got: str, want: str, mode: OutputMatch) -> bool:
    if mode == "exact":
        return got == want
    if mode == "tokens":
        return got.split() == want.split()
    got_lines = [line.rstrip() for line in got.replace("\r\n", "\n").split("\n")]
    want_lines = [line.rstrip() for line in want.replace("\r\n", "\n").split("\n")]
    while got_lines and not got_lines[-1]:
        got_lines.pop()
    while want_lines and not want_lines[-1]:
        want_lines.pop()
    return got_lines == want_lines


def _coerce_cases(test_cases: object) -> list[CodeTestCase]:
    if isinstance(test_cases, str | bytes) or not isinstance(test_cases, Sequence):
        raise InvalidInputError(
            f"input 'test_cases' must be a list of test cases, got {type(test_cases).__name__}"
        )
    if not test_cases:
        raise InvalidInputError("input 'test_cases' is empty: there is nothing to run")
    cases: list[CodeTestCase] = []
    for i, case in enumerate(test_cases):
        if isinstance(case, CodeTestCase):
            cases.append(case)
            continue
        if not isinstance(case, Mapping):
            raise InvalidInputError(f"input 'test_cases'[{i}] must be a mapping, got {type(case).__name__}")
        try:
            cases.append(CodeTestCase.model_validate(dict(case)))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "case"
            raise InvalidInputError(f"input 'test_cases'[{i}] is invalid: {where}: {first['msg']}") from exc
    return cases


class CodeExecutionGrader(BaseGrader):
    """Fraction of test cases a Python solution passes, in [0, 1]; higher is better.

    Each test case runs in a fresh sandbox (:func:`~openjudge.graders.code.sandbox.run_python`):
    its own temporary directory, removed afterwards; memory, CPU-time and wall-clock
    limits; no network; no writes outside the directory; no new processes unless
    allowed; the process group killed at the end. The sandbox is best effort and is
    **not a security boundary** (see :mod:`openjudge.graders.code.sandbox`): run
    untrusted code inside a container or VM without credentials.

    A test passes when the program (and the test's ``test`` snippet, if any) runs to
    completion and the output matches the expected output under ``output_match``:
    ``lines`` (default) ignores trailing whitespace on each line and trailing blank
    lines, ``tokens`` compares whitespace-separated tokens, ``exact`` compares bytes
    as text.

    Inputs:
        response: The solution: Python source, or text containing it in a Markdown
            fence (the last ```` ```python ```` block is used when ``extract_code``).
        test_cases: A non-empty list of :class:`~openjudge.graders.code.cases.CodeTestCase`
            or mappings (``stdin``/``input``, ``expected_stdout``/``output``, ``test``).

    Score: passed / total. ``metadata["tests"]`` has one entry per test: ``passed``,
    ``reason`` (``passed``, ``wrong_answer``, ``timeout``, ``runtime_error``,
    ``memory``, ``output_limit``, ``sandbox_violation``), ``elapsed_s`` and, on
    failure, the error type and the tail of stderr.

    Args:
        timeout_s: Wall-clock limit per test.
        memory_mb: Address-space limit per test in MiB (None: no limit).
        cpu_time_s: CPU-time limit per test (None: ``ceil(timeout_s) + 1``).
        max_output_bytes: Captured output per stream.
        output_match: ``lines``, ``tokens`` or ``exact``.
        extract_code: Take the code from a Markdown fence when there is one.
        max_concurrency: Tests of one sample run at the same time.
        max_processes: Sandboxes running at once across all calls of this grader in
            one event loop (default: the number of CPUs).
        allow_subprocess: Let solutions start processes.
        isolate_network: Try a network namespace in addition to the Python guard.
        site_packages: Let solutions import installed packages (by default only the
            standard library is importable).
        work_root: Where temporary directories are created (default: the system temp dir).
        name: Result name (default ``"code_execution"``).
        description: One line on what is measured.
    """

    default_name: ClassVar[str] = "code_execution"
    default_score_range: ClassVar[ScoreRange | None] = ScoreRange(low=0.0, high=1.0)

    def __init__(
        self,
        *,
        timeout_s: float = 5.0,
        memory_mb: int | None = 512,
        cpu_time_s: int | None = None,
        max_output_bytes: int = 1_000_000,
        output_match: OutputMatch = "lines",
        extract_code: bool = True,
        max_concurrency: int = 2,
        max_processes: int | None = None,
        allow_subprocess: bool = False,
        isolate_network: bool = True,
        site_packages: bool = False,
        work_root: str | None = None,
        name: str = "",
        description: str = "",
    ) -> None:
        if output_match not in ("exact", "lines", "tokens"):
            raise ValueError(f"output_match must be 'exact', 'lines' or 'tokens', got {output_match!r}")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        processes = max_processes if max_processes is not None else (os.cpu_count() or 2)
        if processes < 1:
            raise ValueError(f"max_processes must be >= 1, got {max_processes}")
        super().__init__(name=name, description=description)
        self.limits = SandboxLimits(
            timeout_s=timeout_s,
            cpu_time_s=cpu_time_s,
            memory_mb=memory_mb,
            max_output_bytes=max_output_bytes,
            allow_subprocess=allow_subprocess,
            isolate_network=isolate_network,
            site_packages=site_packages,
        )
        self.output_match: OutputMatch = output_match
        self.extract_code = extract_code
        self.max_concurrency = max_concurrency
        self.work_root = work_root
        self._processes = LoopLocal(lambda: anyio.CapacityLimiter(processes))

    def _judge(self, case: CodeTestCase, run: SandboxRun) -> tuple[FailureReason, str]:
        if run.outcome == "timeout":
            return "timeout", "time limit exceeded"
        if run.outcome == "memory":
            return "memory", "memory limit exceeded"
        if run.outcome == "output_limit":
            return "output_limit", "output limit exceeded"
        if run.outcome != "ok" and (run.violations or run.outcome == "violation"):
            return "sandbox_violation", f"blocked: {run.violations[0] if run.violations else run.error_type}"
        if run.outcome != "ok":
            return "runtime_error", run.error_type or f"exit status {run.returncode}"
        if case.test is not None and not run.completed:
            return "runtime_error", "the program exited before the test code ran"
        if case.expected_stdout is not None and not _outputs_match(
            run.stdout, case.expected_stdout, self.output_match
        ):
            return "wrong_answer", "output differs from the expected output"
        return "passed", ""

    async def _run_case(self, code: str, case: CodeTestCase) -> dict[str, JsonValue]:
        async with self._processes.get():
            run = await run_python(
                code, stdin=case.stdin, test_code=case.test, limits=self.limits, work_root=self.work_root
            )
        reason, detail = self._judge(case, run)
        entry: dict[str, JsonValue] = {
            "passed": reason == "passed",
            "reason": reason,
            "elapsed_s": round(run.elapsed_s, 4),
        }
        if reason != "passed":
            entry["detail"] = detail
            entry["stderr_tail"] = run.stderr[-_STDERR_TAIL:]
        if run.violations:
            entry["violations"] = list(run.violations)
        return entry

    @grader_boundary
    async def aevaluate(
        self, *, response: str, test_cases: Sequence[CodeTestCase | Mapping[str, str]]
    ) -> GraderScore:
        """Run the solution in ``response`` against ``test_cases``."""
        response = require_str("response", response)
        cases = _coerce_cases(test_cases)
        code = extract_code(response) if self.extract_code else response
        results: list[dict[str, JsonValue]] = [{} for _ in cases]
        limiter = anyio.CapacityLimiter(self.max_concurrency)

        async def run_one(index: int) -> None:
            async with limiter:
                results[index] = await self._run_case(code, cases[index])

        async with anyio.create_task_group() as tg:
            for index in range(len(cases)):
                tg.start_soon(run_one, index)
        passed = sum(1 for entry in results if entry["passed"] is True)
        reasons = sorted({str(entry["reason"]) for entry in results if entry["passed"] is not True})
        tests: list[JsonValue] = list(results)
        return GraderScore(
            name=self.name,
            score=passed / len(cases),
            reason=f"{passed} of {len(cases)} tests passed"
            + (f" (failures: {', '.join(reasons)})" if reasons else ""),
            metadata={"passed": passed, "total": len(cases), "tests": tests},
            score_range=self.score_range,
        )
