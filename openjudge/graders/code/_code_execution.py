"""Run a Python solution against test cases in a sandbox; the verdicts are decided here, outside it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import ClassVar, Literal, TypeAlias

import anyio
from pydantic import JsonValue, ValidationError

from openjudge.graders._inputs import require_str
from openjudge.graders.base_grader import BaseGrader, InvalidInputError, grader_boundary
from openjudge.graders.code._backends import sandbox_backend
from openjudge.graders.code._cases import CodeTestCase
from openjudge.graders.code._checks import Check, checks_from_test
from openjudge.graders.code._sandbox import (
    BackendName,
    FunctionCall,
    SandboxBackend,
    SandboxError,
    SandboxJob,
    SandboxLimits,
    SandboxRun,
)
from openjudge.models._loop_local import LoopLocal
from openjudge.results import GraderError, GraderScore, ScoreRange

__all__ = ["CodeExecutionGrader", "FailureReason", "OutputMatch", "extract_code"]

OutputMatch: TypeAlias = Literal["exact", "lines", "tokens"]
FailureReason: TypeAlias = Literal[
    "passed", "wrong_answer", "timeout", "runtime_error", "memory", "output_limit", "sandbox_violation"
]
_PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})
_STDERR_TAIL = 500
_FENCE = "```"


def extract_code(text: str) -> str:
    """The last fenced ```` ```python ```` block of ``text``, else its last untagged block, else ``text``.

    A block opens with three backticks, an optional language tag and a line break, and
    ends at the next three backticks. The scan is linear in the length of ``text``.
    """
    blocks: list[tuple[str, str]] = []
    start = text.find(_FENCE)
    while start != -1:
        line_end = text.find("\n", start + 3)
        if line_end == -1:
            break
        info = text[start + 3 : line_end].lstrip(" \t")
        size = 0
        while size < len(info) and (info[size].isalnum() or info[size] in "_+.-"):
            size += 1
        lang = info[:size]
        end = text.find(_FENCE, line_end + 1)
        if end == -1:
            break
        blocks.append((lang.lower(), text[line_end + 1 : end]))
        start = text.find(_FENCE, end + 3)
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


def _plan(code: str, case: CodeTestCase) -> tuple[SandboxJob, list[Check], bool]:
    """The job for ``case``, the checks decided here, and whether a snippet runs in the child."""
    checks: list[Check] = []
    if case.call is not None:
        call = case.call
        checks.append(
            Check(
                FunctionCall(call.function, tuple(call.args), dict(call.kwargs)),
                call.expected,
                json_sequences=True,
                source=f"expected {call.expected!r}"[:120],
            )
        )
    test_code = case.test
    if test_code is not None:
        converted = checks_from_test(test_code)
        if converted is not None:
            checks.extend(converted)
            test_code = None
    job = SandboxJob(code, case.stdin, tuple(c.call for c in checks), test_code)
    return job, checks, test_code is not None


def _verified_by(in_child: bool, run: SandboxRun) -> str:
    """Where the verdict was computed: ``grader`` (here), ``verifier`` (a process that never ran
    the solution) or ``sandbox`` (the solution's own process: remote backends only)."""
    if not in_child:
        return "grader"
    return "verifier" if run.test_isolated else "sandbox"


class CodeExecutionGrader(BaseGrader):
    """Fraction of test cases a Python solution passes, in [0, 1]; higher is better.

    Each test case runs in a fresh sandbox (see :mod:`openjudge.graders.code._sandbox` and
    the threat model in ``docs/graders.md``): by default new namespaces with a read-only
    view of the interpreter only, no network, no new processes, no signals to anything
    outside, memory/CPU/wall-clock limits, everything killed at the end.

    The verdict is decided here, outside the sandbox, from facts the sandbox reports:
    standard output is compared with ``expected_stdout``; a call check's return value
    comes back as plain data and is compared with the expected value, which never enters
    the sandbox. Assert-style snippets made of simple asserts on calls are turned into
    call checks; other snippets (HumanEval's ``check(candidate)``, MBPP's asserts) run in
    a *verifier* process of the same sandbox that never ran the solution: the
    solution's functions are proxies there, exchanging only plain data with the
    solution's process, so every comparison is made on values the solution never
    touched (:mod:`openjudge.graders.code.harness.verifier`). Only the remote
    ``sandbox_fusion`` backend still runs snippets in the solution's process.
    ``metadata["tests"][i]["verified"]`` says ``"grader"``, ``"verifier"`` or ``"sandbox"``.

    Output is compared under ``output_match``: ``lines`` (default) ignores trailing
    whitespace on each line and trailing blank lines, ``tokens`` compares
    whitespace-separated tokens, ``exact`` compares the text as is.

    A sandbox that fails to start (or a remote sandbox service that fails) makes the
    whole result a ``GraderError``, never a score.

    Inputs:
        response: The solution: Python source, or text containing it in a Markdown
            fence (the last ```` ```python ```` block is used when ``extract_code``).
        test_cases: A non-empty list of :class:`~openjudge.graders.code._cases.CodeTestCase`
            or mappings (``stdin``/``input``, ``expected_stdout``/``output``, ``test``, ``call``).

    Score: passed / total. ``metadata["tests"]`` has one entry per test: ``passed``,
    ``reason`` (``passed``, ``wrong_answer``, ``timeout``, ``runtime_error``,
    ``memory``, ``output_limit``, ``sandbox_violation``), ``elapsed_s``, ``verified``
    and, on failure, a ``detail`` and the tail of stderr. ``metadata["sandbox"]`` names
    the backend.

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
        allow_subprocess: Let solutions start processes (killed with the run).
        site_packages: Let solutions import installed packages (by default only the
            standard library is visible).
        sandbox: ``auto`` (default), ``bwrap``, ``unshare``, ``process``,
            ``sandbox_fusion``, or a :class:`~openjudge.graders.code._sandbox.SandboxBackend`.
        sandbox_url: The SandboxFusion ``run_code`` URL (``sandbox_fusion`` only).
        work_root: Where local backends create temporary directories.
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
        site_packages: bool = False,
        sandbox: BackendName | SandboxBackend = "auto",
        sandbox_url: str | None = None,
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
            site_packages=site_packages,
        )
        self.sandbox: SandboxBackend = (
            sandbox_backend(sandbox, url=sandbox_url, work_root=work_root)
            if isinstance(sandbox, str)
            else sandbox
        )
        if not isinstance(self.sandbox, SandboxBackend):
            raise TypeError(
                f"sandbox must be a backend name or a SandboxBackend, got {type(sandbox).__name__}"
            )
        self.output_match: OutputMatch = output_match
        self.extract_code = extract_code
        self.max_concurrency = max_concurrency
        self._processes = LoopLocal(lambda: anyio.CapacityLimiter(processes))

    def _judge(
        self, case: CodeTestCase, run: SandboxRun, checks: list[Check], in_child: bool
    ) -> tuple[FailureReason, str]:
        if run.outcome == "timeout":
            return "timeout", "time limit exceeded"
        if run.outcome == "memory":
            return "memory", "memory limit exceeded"
        if run.outcome == "output_limit":
            return "output_limit", "output limit exceeded"
        if run.outcome == "violation":
            return "sandbox_violation", f"blocked: {run.violations[0] if run.violations else run.error_type}"
        if run.outcome != "ok":
            return "runtime_error", run.error_type or f"exit status {run.returncode}"
        for check, result in zip(checks, run.calls, strict=True):
            if result is None:
                return "runtime_error", f"the program ended before {check.describe_call()} returned"
            passed, why = check.holds(result)
            if not passed:
                return ("runtime_error" if not result.ok else "wrong_answer"), why
        if in_child and run.test_passed is not True:
            error = run.test_error or "the test code did not run to the end"
            return ("wrong_answer" if error == "AssertionError" else "runtime_error"), f"test: {error}"[:200]
        if case.expected_stdout is not None and not _outputs_match(
            run.stdout, case.expected_stdout, self.output_match
        ):
            return "wrong_answer", "output differs from the expected output"
        return "passed", ""

    async def _run_case(self, code: str, case: CodeTestCase) -> tuple[dict[str, JsonValue], str]:
        job, checks, in_child = _plan(code, case)
        async with self._processes.get():
            run = await self.sandbox.run(job, self.limits)
        reason, detail = self._judge(case, run, checks, in_child)
        entry: dict[str, JsonValue] = {
            "passed": reason == "passed",
            "reason": reason,
            "elapsed_s": round(run.elapsed_s, 4),
            "verified": _verified_by(in_child, run),
        }
        if reason != "passed":
            entry["detail"] = detail
            entry["stderr_tail"] = run.stderr[-_STDERR_TAIL:]
        if run.violations:
            entry["violations"] = list(run.violations)
        return entry, run.backend

    @grader_boundary
    async def aevaluate(
        self, *, response: str, test_cases: Sequence[CodeTestCase | Mapping[str, object]]
    ) -> GraderScore | GraderError:
        """Run the solution in ``response`` against ``test_cases``."""
        response = require_str("response", response)
        cases = _coerce_cases(test_cases)
        code = extract_code(response) if self.extract_code else response
        results: list[dict[str, JsonValue]] = [{} for _ in cases]
        backends: set[str] = set()
        limiter = anyio.CapacityLimiter(self.max_concurrency)

        async def run_one(index: int) -> None:
            async with limiter:
                results[index], backend = await self._run_case(code, cases[index])
                backends.add(backend)

        failures: list[SandboxError] = []
        try:
            async with anyio.create_task_group() as tg:
                for index in range(len(cases)):
                    tg.start_soon(run_one, index)
        except* SandboxError as group:
            failures.extend(e for e in group.exceptions if isinstance(e, SandboxError))
        if failures:
            first = failures[0]
            return GraderError(name=self.name, kind=first.kind, message=str(first), error_type="SandboxError")
        passed = sum(1 for entry in results if entry["passed"] is True)
        reasons = sorted({str(entry["reason"]) for entry in results if entry["passed"] is not True})
        tests: list[JsonValue] = list(results)
        return GraderScore(
            name=self.name,
            score=passed / len(cases),
            reason=f"{passed} of {len(cases)} tests passed"
            + (f" (failures: {', '.join(reasons)})" if reasons else ""),
            metadata={
                "passed": passed,
                "total": len(cases),
                "tests": tests,
                "sandbox": ", ".join(sorted(backends)),
            },
            score_range=self.score_range,
        )
