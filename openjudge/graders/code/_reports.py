"""Reading the facts a sandbox child reports, and turning a finished run into a :class:`SandboxRun`.

The child writes JSON lines (see :mod:`openjudge.graders.code.harness.main`). The first
``started`` line is the harness's own, written before any solution code runs: without
it the sandbox failed, and the run is a :class:`SandboxError`, never a score. Lines
after it may come from the solution too; malformed ones are ignored, and for each call
the first report counts (the solution can only ever claim what its own function
returned, so which report wins gains it nothing).
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass, field

from pydantic import JsonValue

from openjudge.graders.code._sandbox import CallResult, RunOutcome, SandboxError, SandboxRun
from openjudge.graders.code.harness.main import EXIT_MEMORY

__all__ = ["ChildReport", "RunFacts", "TestVerdict", "finish_run", "parse_report", "parse_verdict"]

_MAX_LINES = 10_000
_MAX_ERROR = 80
_MEMORY_HINTS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc")


@dataclass
class ChildReport:
    """What the child said about its run."""

    started: bool = False
    done: bool = False
    error_type: str = ""
    exit_code: str = ""
    memory: bool = False
    test_passed: bool | None = None
    calls: dict[int, CallResult] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)


def _apply(report: ChildReport, record: dict[str, JsonValue]) -> None:
    event = record.get("event")
    if event == "call":
        index = record.get("index")
        # Only indices a run can have: a forged report of huge integers whose hashes collide
        # would make each lookup below linear, and the decoding quadratic.
        if isinstance(index, int) and 0 <= index < _MAX_LINES and index not in report.calls:
            ok = record.get("ok") is True
            error = record.get("error", "")
            report.calls[index] = CallResult(  # the error's type name, from the solution's process: capped
                ok=ok, value=record.get("value"), error=(error if isinstance(error, str) else "")[:_MAX_ERROR]
            )
    elif event == "error" and not report.error_type:
        report.error_type = str(record.get("type", "Exception"))[:80]
    elif event == "exit" and not report.exit_code:
        report.exit_code = str(record.get("code", ""))[:80]
    elif event == "memory":
        report.memory = True
    elif event == "test" and report.test_passed is None:
        report.test_passed = record.get("ok") is True
        if not report.test_passed and not report.error_type:
            report.error_type = str(record.get("error", "Exception"))[:80]
    elif event == "violation" and len(report.violations) < 20:
        report.violations.append(str(record.get("what", ""))[:200])
    elif event == "done":
        report.done = True


def parse_report(data: bytes) -> ChildReport:
    """The facts in the child's result stream (see the module docstring)."""
    report = ChildReport()
    lines = data.split(b"\n")
    try:
        first = json.loads(lines[0])
    except ValueError:
        return report
    if first != {"event": "started"}:
        return report
    report.started = True
    for line in lines[1:_MAX_LINES]:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # half a line, or the solution's noise
            continue
        if isinstance(record, dict):
            _apply(report, record)
    return report


@dataclass(frozen=True, slots=True)
class TestVerdict:
    """What the verifier (:mod:`.harness.verifier`) said about the test: it passed, or why not."""

    passed: bool
    error: str = ""
    system: bool = False  # the verifier failed before the test ran (set-up, or a test that does not compile)


def parse_verdict(data: bytes, token: str) -> TestVerdict:
    """The verifier's verdict; a missing, malformed or unsigned one is a failure (the test did not finish)."""
    line = data.split(b"\n", 1)[0]
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return TestVerdict(False, "the test did not run to the end")
    if not isinstance(record, dict) or record.get("event") != "verdict" or record.get("token") != token:
        return TestVerdict(False, "the test did not run to the end")
    error = record.get("error")
    text = (error if isinstance(error, str) else "")[:200]
    return TestVerdict(record.get("ok") is True, text, record.get("system") is True)


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What the parent observed of one run."""

    backend: str
    returncode: int | None
    stdout: str
    stderr: str
    elapsed_s: float
    timed_out: bool
    output_overflow: bool
    signal_in_status: bool  # namespace backends report a death by signal N as exit status 128 + N
    cpu_s: float = float("inf")  # the CPU-time limit, to tell its SIGKILL from the OOM killer's


def _signal(facts: RunFacts) -> int | None:
    code = facts.returncode
    if code is None:
        return None
    if code < 0:
        return -code
    if facts.signal_in_status and code > 128 and code - 128 in signal.valid_signals():
        return code - 128
    return None


def _outcome(facts: RunFacts, report: ChildReport) -> tuple[RunOutcome, str]:
    if facts.output_overflow:
        return "output_limit", ""
    if facts.timed_out:
        return "timeout", ""
    if report.memory or facts.returncode == EXIT_MEMORY:
        return "memory", "MemoryError"
    number = _signal(facts)
    if number == signal.SIGXCPU:
        return "timeout", "SIGXCPU"
    if number == signal.SIGKILL:
        # Before our own kill, only the kernel sends it: at the hard CPU limit, or the OOM killer.
        if facts.elapsed_s >= facts.cpu_s:
            return "timeout", "CPU time limit"
        return "memory", "SIGKILL"
    if number is not None:
        return "error", signal.Signals(number).name
    if any(hint in facts.stderr for hint in _MEMORY_HINTS) and facts.returncode != 0:
        return "memory", "MemoryError"
    if report.error_type:
        kind: RunOutcome = "violation" if report.error_type == "SandboxViolation" else "error"
        return kind, report.error_type
    if report.exit_code:
        return "exit", f"SystemExit({report.exit_code})"
    if facts.returncode == 0:
        return "ok", ""
    return "exit", f"exit status {facts.returncode}"


def finish_run(
    facts: RunFacts, report: ChildReport, calls: int, verdict: TestVerdict | None = None
) -> SandboxRun:
    """The :class:`SandboxRun` for a finished run (``verdict``: the verifier's, if a test ran there).

    Raises:
        SandboxError: The harness never reported that it started: the sandbox failed
            (or could not start within the time limit), so there is nothing to grade; or
            the verifier failed before the test ran (a test that does not compile).
    """
    if not report.started:
        tail = facts.stderr.strip()[-300:] or f"exit status {facts.returncode}"
        if facts.timed_out:
            raise SandboxError(f"the {facts.backend} sandbox did not start within the time limit", "timeout")
        raise SandboxError(f"the {facts.backend} sandbox failed before running the code: {tail}")
    if verdict is not None and verdict.system:
        raise SandboxError(
            f"the {facts.backend} sandbox's verifier failed before the test ran: {verdict.error}"
        )
    outcome, error_type = _outcome(facts, report)
    return SandboxRun(
        outcome=outcome,
        returncode=facts.returncode,
        stdout=facts.stdout,
        stderr=facts.stderr,
        elapsed_s=facts.elapsed_s,
        error_type=error_type,
        calls=tuple(report.calls.get(i) for i in range(calls)),
        test_passed=report.test_passed if verdict is None else verdict.passed,
        test_error=report.error_type if verdict is None else verdict.error,
        test_isolated=verdict is not None,
        violations=tuple(report.violations),
        backend=facts.backend,
    )
