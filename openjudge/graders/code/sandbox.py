"""Run untrusted Python in a child process with limits: a best-effort sandbox.

Each run gets a fresh temporary directory (removed afterwards), a child interpreter
``sys.executable -I -S`` (isolated mode, no site-packages unless asked) whose
environment holds no secrets of the parent, and the child-side bootstrap in
:mod:`openjudge.graders.code._bootstrap`, which before the solution starts:

* moves into a new network namespace when the kernel allows it (Linux; otherwise
  only the Python-level guard below applies);
* sets ``RLIMIT_AS`` (memory), ``RLIMIT_CPU``, ``RLIMIT_FSIZE``, ``RLIMIT_CORE=0`` and
  optionally ``RLIMIT_NPROC`` with ``setrlimit`` (in the child itself rather than in
  a ``preexec_fn``, which is unsafe in a threaded parent and unavailable to anyio);
* makes opening a new socket (``socket.socket``, ``_socket.socket``,
  ``create_connection``, ``getaddrinfo``...) raise (``socketpair`` stays usable, so
  ``asyncio`` works), refuses ``open``/``os.open``/``os.remove``/``os.rename``/...
  writes that resolve outside the working directory (symlinks and ``..`` are
  resolved first; ``/dev/null`` is allowed), and (unless ``allow_subprocess``)
  refuses ``fork``/``exec``/``subprocess``. A refused operation raises
  ``PermissionError`` in the code and is reported in :attr:`SandboxRun.violations`.

The parent enforces a wall-clock limit, caps captured output, runs the child in its
own session and kills the whole process group when the child ends or times out, so
grandchildren do not outlive the run.

**This is not a security boundary.** The guards are Python-level patches that
deliberate code can undo (``ctypes``, the ``posix`` and ``_io`` modules,
``io.FileIO``), processes started with ``allow_subprocess`` are not guarded at all
(only the network namespace and the process-group kill reach them), a process that
calls ``setsid`` escapes the group kill, and the child runs as the same user with
read access to the file system. Creating a network namespace per run costs the
kernel some work; pass ``isolate_network=False`` for very high run rates. It protects
against accidents and ordinary reward-hacking, not against a determined attacker:
for that, run graders inside a container or VM with no credentials.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

import anyio
import anyio.abc
import anyio.to_thread

__all__ = ["RunOutcome", "SandboxLimits", "SandboxRun", "run_python"]

logger = logging.getLogger(__name__)

RunOutcome: TypeAlias = Literal["ok", "error", "exit", "timeout", "memory", "violation", "output_limit"]
_BOOTSTRAP = Path(__file__).with_name("_bootstrap.py")
_EXIT_MEMORY = 86
_DRAIN_GRACE_S = 0.5
_MEMORY_HINTS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc")
_REPORTED: dict[str, RunOutcome] = {name: name for name in ("ok", "error", "exit", "memory", "violation")}


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Limits of one sandboxed run.

    Attributes:
        timeout_s: Wall-clock limit; the process group is killed when it expires.
        cpu_time_s: CPU-time limit (``RLIMIT_CPU``); None means ``ceil(timeout_s) + 1``.
        memory_mb: Address-space limit (``RLIMIT_AS``) in MiB, or None for no limit.
        max_output_bytes: Captured bytes per stream; more stdout kills the run.
        max_file_size_mb: Largest file the child may write (``RLIMIT_FSIZE``).
        max_processes: ``RLIMIT_NPROC``, or None. It counts every process of the user
            (not only the sandbox's) and does not bind root, so it is off by default.
        allow_subprocess: Let the code start processes (they are still killed with the group).
        isolate_network: Try to enter a new network namespace (falls back to the Python guard).
        site_packages: Make installed packages importable (drops ``-S``).
    """

    timeout_s: float = 5.0
    cpu_time_s: int | None = None
    memory_mb: int | None = 512
    max_output_bytes: int = 1_000_000
    max_file_size_mb: int = 16
    max_processes: int | None = None
    allow_subprocess: bool = False
    isolate_network: bool = True
    site_packages: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise ValueError(f"timeout_s must be a finite number > 0, got {self.timeout_s!r}")
        for name in ("cpu_time_s", "memory_mb", "max_processes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be None or >= 1, got {value!r}")
        if self.max_output_bytes < 1 or self.max_file_size_mb < 1:
            raise ValueError("max_output_bytes and max_file_size_mb must be >= 1")


@dataclass(frozen=True, slots=True)
class SandboxRun:
    """What happened in one sandboxed run.

    Attributes:
        outcome: ``ok`` (finished, exit status 0), ``error`` (uncaught exception or
            crash), ``exit`` (non-zero exit status), ``timeout`` (wall or CPU limit),
            ``memory`` (memory limit), ``violation`` (a sandbox guard refused an
            operation and the code did not recover), ``output_limit`` (too much stdout).
        completed: The bootstrap reported that the solution and test code ran to the end.
        returncode: Exit status (negative: killed by that signal), None if unknown.
        stdout: Captured standard output (UTF-8, invalid bytes replaced).
        stderr: Captured standard error.
        elapsed_s: Wall time from start to exit (or to the kill).
        error_type: Exception type of an ``error``, if reported.
        violations: Operations the guards refused, even if the code caught the error.
        network: ``namespace``/``user_namespace`` if the child got its own network
            namespace, else ``python_guard``.
        workdir: The temporary directory the run used (already removed).
    """

    outcome: RunOutcome
    completed: bool
    returncode: int | None
    stdout: str
    stderr: str
    elapsed_s: float
    error_type: str
    violations: tuple[str, ...]
    network: str
    workdir: str


def _prepare(root: Path, code: str, test_code: str | None) -> None:
    (root / "work").mkdir()
    # surrogatepass: a lone surrogate must not crash the parent; the child reads with "replace".
    (root / "solution.py").write_text(code, encoding="utf-8", errors="surrogatepass")
    if test_code is not None:
        (root / "test.py").write_text(test_code, encoding="utf-8", errors="surrogatepass")


def _make_writable(func: Callable[..., object], path: str, _exc: object) -> None:
    """``rmtree`` error hook: the code may have removed permissions; restore them and retry."""
    parent = os.path.dirname(path)
    for target in (parent, path):
        try:
            os.chmod(target, stat.S_IRWXU)
        except OSError:
            continue
    with contextlib.suppress(OSError):  # leftovers are reported by _finish
        func(path)


def _finish(root: Path) -> dict[str, object] | None:
    """Read the child's status file and remove the run directory."""
    status: dict[str, object] | None = None
    try:
        loaded = json.loads((root / "status.json").read_text(encoding="utf-8"))
        status = loaded if isinstance(loaded, dict) else None
    except (OSError, ValueError):
        status = None
    shutil.rmtree(root, onerror=_make_writable)
    if root.exists():
        logger.warning("could not remove the sandbox directory %s", root)
    return status


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _command(limits: SandboxLimits, root: Path, has_test: bool) -> list[str]:
    config = {
        "workdir": str(root / "work"),
        "solution_path": str(root / "solution.py"),
        "test_path": str(root / "test.py") if has_test else None,
        "status_path": str(root / "status.json"),
        "memory_bytes": None if limits.memory_mb is None else limits.memory_mb * 1024 * 1024,
        "cpu_seconds": limits.cpu_time_s or math.ceil(limits.timeout_s) + 1,
        "file_size_bytes": limits.max_file_size_mb * 1024 * 1024,
        "max_processes": limits.max_processes,
        "allow_subprocess": limits.allow_subprocess,
        "isolate_network": limits.isolate_network,
    }
    flags = ["-I"] if limits.site_packages else ["-I", "-S"]
    return [sys.executable, *flags, str(_BOOTSTRAP), json.dumps(config)]


def _child_env(work: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(work),
        "TMPDIR": str(work),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


class _Capture:
    """Reads one output stream up to a byte cap."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.overflow = False
        self.done = anyio.Event()

    async def drain(
        self, stream: anyio.abc.ByteReceiveStream, on_overflow: Callable[[], None] | None
    ) -> None:
        try:
            async for chunk in stream:
                room = self.cap - len(self.data)
                self.data += chunk[: max(0, room)]
                if len(chunk) > room:
                    self.overflow = True
                    if on_overflow is not None:
                        on_overflow()
                        return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self.done.set()

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


async def _feed(stream: anyio.abc.ByteSendStream, data: bytes) -> None:
    try:
        if data:
            await stream.send(data)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass
    finally:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await stream.aclose()


def _classify(
    status: dict[str, object] | None, returncode: int | None, stderr: str, timed_out: bool, overflow: bool
) -> tuple[RunOutcome, str]:
    if overflow:
        return "output_limit", ""
    if timed_out:
        return "timeout", ""
    if status is not None:
        outcome = str(status.get("outcome", "error"))
        error_type = str(status.get("error_type", ""))
        return _REPORTED.get(outcome, "error"), error_type
    if returncode == _EXIT_MEMORY or any(hint in stderr for hint in _MEMORY_HINTS):
        return "memory", "MemoryError"
    if returncode is not None and returncode < 0:
        if -returncode == signal.SIGXCPU:
            return "timeout", "SIGXCPU"
        if -returncode == signal.SIGKILL:
            return "memory", "SIGKILL"
        return "error", signal.Signals(-returncode).name if -returncode in signal.valid_signals() else ""
    if returncode == 0:
        return "ok", ""
    return "exit", ""


async def run_python(
    code: str,
    *,
    stdin: str = "",
    test_code: str | None = None,
    limits: SandboxLimits | None = None,
    work_root: str | None = None,
) -> SandboxRun:
    """Run ``code`` (then ``test_code`` in the same namespace) in a fresh sandbox.

    Args:
        code: Python source of the solution, run as ``__main__``.
        stdin: Text fed to standard input.
        test_code: Optional Python run after the solution (assert-style tests).
        limits: Resource limits; defaults to :class:`SandboxLimits`.
        work_root: Directory in which the temporary run directory is created.

    Returns:
        A :class:`SandboxRun`. Failures of the code are outcomes, not exceptions;
        cancellation kills the process group and removes the directory.
    """
    limits = limits or SandboxLimits()
    root = Path(tempfile.mkdtemp(prefix="openjudge-code-", dir=work_root))
    stdout, stderr = _Capture(limits.max_output_bytes), _Capture(limits.max_output_bytes)
    status: dict[str, object] | None = None
    returncode: int | None = None
    exited = False
    timed_out = False
    elapsed = 0.0
    try:
        await anyio.to_thread.run_sync(_prepare, root, code, test_code)
        start = anyio.current_time()
        process = await anyio.open_process(
            _command(limits, root, test_code is not None),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=root / "work",
            env=_child_env(root / "work"),
            start_new_session=True,
        )
        try:
            with anyio.move_on_after(limits.timeout_s) as deadline:
                async with anyio.create_task_group() as tg:
                    if process.stdin is None or process.stdout is None or process.stderr is None:
                        raise RuntimeError("the sandbox child was started without pipes")
                    tg.start_soon(_feed, process.stdin, stdin.encode("utf-8", errors="surrogatepass"))
                    tg.start_soon(stdout.drain, process.stdout, lambda: _kill_group(process.pid))
                    tg.start_soon(stderr.drain, process.stderr, None)
                    returncode = await process.wait()
                    exited = True
                    elapsed = anyio.current_time() - start
                    _kill_group(process.pid)  # grandchildren must not outlive the run
                    with anyio.move_on_after(_DRAIN_GRACE_S):
                        await stdout.done.wait()
                        await stderr.done.wait()
                    tg.cancel_scope.cancel()
            if deadline.cancelled_caught and not exited:
                timed_out = True
                elapsed = anyio.current_time() - start
        finally:
            _kill_group(process.pid)
            with anyio.CancelScope(shield=True):
                returncode = await process.wait()
                await process.aclose()
    finally:
        with anyio.CancelScope(shield=True):
            status = await anyio.to_thread.run_sync(_finish, root)
    outcome, error_type = _classify(status, returncode, stderr.text(), timed_out, stdout.overflow)
    completed = status is not None and status.get("phase") == "done"
    violations = status.get("violations", []) if status is not None else []
    network = status.get("network", "unknown") if status is not None else "unknown"
    return SandboxRun(
        outcome=outcome,
        completed=completed,
        returncode=returncode,
        stdout=stdout.text(),
        stderr=stderr.text(),
        elapsed_s=elapsed,
        error_type=error_type,
        violations=tuple(str(v) for v in violations) if isinstance(violations, list) else (),
        network=str(network),
        workdir=str(root),
    )
