"""Running untrusted Python: what to run, the limits, what happened, and the backends that do it.

A :class:`SandboxJob` (the solution, its standard input, functions to call with
arguments, an optional assert-style snippet) runs under :class:`SandboxLimits` on a
:class:`SandboxBackend` and yields a :class:`SandboxRun`: the outcome, the captured
output, and what each called function returned, as plain data. Whether a test passed is
decided by the grader from that data, outside the sandbox.

Backends (:func:`~openjudge.graders.code._backends.sandbox_backend` builds them by name):

* ``bwrap``: bubblewrap from the OS packages. New user, mount, PID, network, IPC, UTS
  and cgroup namespaces; a fresh ``/proc``; a read-only view of the interpreter and the
  system libraries only; a size-limited tmpfs as the one writable directory; no
  network; an empty environment; the whole PID namespace killed at the end.
* ``unshare``: the same isolation built by the harness itself with system calls, for
  machines without bubblewrap. When the grader runs as root, the sandbox user is the
  host's ``nobody`` (bubblewrap keeps root's uid outside), so ``RLIMIT_NPROC`` binds.
* ``process``: a child process with a clean environment and a temporary directory, for
  machines with neither (no user namespaces). The kernel limits below still apply, but
  the child can read what its user can read, including other processes' ``/proc``.
* ``sandbox_fusion``: a remote SandboxFusion service
  (:mod:`openjudge.graders.code._sandbox_fusion`).
* ``auto``: the first of ``bwrap``, ``unshare``, ``process`` that works here.

In every local backend the child also sets resource limits (memory, CPU time, file
size, processes) and installs a seccomp filter: no new processes (unless allowed), no
signals to other processes, no ``ptrace``, no namespaces or mounts, no sockets but
``AF_UNIX``. See :mod:`openjudge.graders.code.harness.confine` and the threat model in
``docs/graders.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import JsonValue

from openjudge.errors import SandboxError

__all__ = [
    "BackendName",
    "CallResult",
    "FunctionCall",
    "RunOutcome",
    "SandboxBackend",
    "SandboxError",
    "SandboxJob",
    "SandboxLimits",
    "SandboxRun",
]

RunOutcome: TypeAlias = Literal["ok", "error", "exit", "timeout", "memory", "violation", "output_limit"]
BackendName: TypeAlias = Literal["auto", "bwrap", "unshare", "process", "sandbox_fusion"]


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Limits of one sandboxed run.

    Attributes:
        timeout_s: Wall-clock limit; everything the run started is killed when it expires.
        cpu_time_s: CPU-time limit (``RLIMIT_CPU``); None means ``ceil(timeout_s) + 1``.
        memory_mb: Address-space limit (``RLIMIT_AS``) in MiB, or None for no limit.
        max_output_bytes: Captured bytes per stream; more stdout kills the run.
        max_file_size_mb: Largest file the child may write (``RLIMIT_FSIZE``).
        work_dir_mb: Size of the writable tmpfs in the namespace backends.
        max_processes: ``RLIMIT_NPROC`` when ``allow_subprocess`` (with ``bwrap`` as root
            it does not bind; see the module docstring).
        allow_subprocess: Let the code start processes (they are killed with the run).
        site_packages: Make the grader's ``sys.path`` (installed packages) importable,
            read-only; by default only the standard library is visible.
    """

    timeout_s: float = 5.0
    cpu_time_s: int | None = None
    memory_mb: int | None = 512
    max_output_bytes: int = 1_000_000
    max_file_size_mb: int = 16
    work_dir_mb: int = 64
    max_processes: int = 64
    allow_subprocess: bool = False
    site_packages: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise ValueError(f"timeout_s must be a finite number > 0, got {self.timeout_s!r}")
        for name in ("cpu_time_s", "memory_mb"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be None or >= 1, got {value!r}")
        for name in ("max_output_bytes", "max_file_size_mb", "work_dir_mb", "max_processes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")

    @property
    def cpu_s(self) -> int:
        """The CPU-time limit in effect."""
        return self.cpu_time_s or math.ceil(self.timeout_s) + 1


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """A function of the solution to call after it ran, with Python values as arguments."""

    function: str
    args: tuple[object, ...] = ()
    kwargs: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SandboxJob:
    """What to run.

    Attributes:
        code: Python source, run as ``__main__``.
        stdin: Text fed to standard input.
        calls: Functions to call afterwards; their return values come back as data.
        test_code: Python assert-style test code. Local backends run it in a separate
            verifier process that never ran the solution and calls the solution's
            functions through proxies that exchange plain data
            (:mod:`openjudge.graders.code.harness.verifier`); remote backends run it after
            the solution in the same namespace, where the solution could forge the verdict.
    """

    code: str
    stdin: str = ""
    calls: tuple[FunctionCall, ...] = ()
    test_code: str | None = None


@dataclass(frozen=True, slots=True)
class CallResult:
    """What one call did: returned ``value`` (encoded by :mod:`.harness.values`) or raised ``error``."""

    ok: bool
    value: JsonValue = None
    error: str = ""


@dataclass(frozen=True, slots=True)
class SandboxRun:
    """What happened in one run.

    Attributes:
        outcome: ``ok`` (ran to the end, exit status 0), ``error`` (uncaught exception or
            crash), ``exit`` (non-zero exit status), ``timeout`` (wall or CPU limit),
            ``memory`` (memory limit), ``violation`` (a guard of the ``process`` backend
            refused an operation and the code did not recover), ``output_limit``.
        returncode: Exit status of the process the backend started, None if unknown.
        stdout: Captured standard output (UTF-8, invalid bytes replaced).
        stderr: Captured standard error.
        elapsed_s: Wall time from start to exit (or to the kill).
        error_type: Exception type of an ``error``, if known.
        calls: One entry per requested call, None if it never reported.
        test_passed: Whether ``test_code`` ran to the end, None if there was none.
        test_error: Why it did not (an exception's type name, or what went wrong).
        test_isolated: Whether the test ran in the verifier process, outside the solution's.
        violations: Operations the ``process`` backend's guards refused.
        backend: The backend that ran the job.
    """

    outcome: RunOutcome
    returncode: int | None
    stdout: str
    stderr: str
    elapsed_s: float
    error_type: str = ""
    calls: tuple[CallResult | None, ...] = ()
    test_passed: bool | None = None
    test_error: str = ""
    test_isolated: bool = False
    violations: tuple[str, ...] = ()
    backend: str = ""


@runtime_checkable
class SandboxBackend(Protocol):
    """Runs a :class:`SandboxJob`; faults of the code are outcomes, faults of the sandbox raise.

    Implementations are safe to share between concurrent calls and event loops.
    """

    name: str

    async def run(self, job: SandboxJob, limits: SandboxLimits) -> SandboxRun:
        """Run ``job``; raise :class:`SandboxError` if the sandbox (not the code) failed."""
        ...
