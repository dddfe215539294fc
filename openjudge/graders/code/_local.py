"""Running the harness in a local child process: pipes, limits, the kill, and the ``process`` backend.

:class:`LocalBackend` owns everything the local backends share: the job goes to the
child on one pipe and its reports come back on another (both passed as inherited file
descriptors), standard output and error are captured up to a cap, the wall-clock limit
is enforced from here, and when the run ends, times out or is cancelled the child's
whole process group is killed with SIGKILL (the namespace backends then lose their
whole PID namespace). Subclasses only say how to start the child: ``process`` and
``unshare`` children are forked by a warm fork server (:mod:`._zygote`), which saves the
interpreter's start and the harness's import on every run; ``bwrap`` children are
started by executing bubblewrap, whose sandbox can only begin with a new process.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import secrets
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import anyio
import anyio.abc
import anyio.to_thread

from openjudge.graders.code._pipes import Capture, Fds, nonblocking_pipe, prefill, read_fd, write_fd
from openjudge.graders.code._reports import RunFacts, finish_run, parse_report, parse_verdict
from openjudge.graders.code._sandbox import SandboxError, SandboxJob, SandboxLimits, SandboxRun
from openjudge.graders.code._zygote import ForkedChild, ForkServer
from openjudge.graders.code.harness import values
from openjudge.graders.code.harness.zygote import FIRST_RUN_FD
from openjudge.models._loop_local import LoopLocal

__all__ = ["HARNESS_DIR", "Launch", "LocalBackend", "ProcessBackend", "boot_command", "child_env"]

HARNESS_DIR = Path(__file__).resolve().with_name("harness")
_DRAIN_GRACE_S = 0.5
_MAX_REPORT_BYTES = 8_000_000
_MAX_VERDICT_BYTES = 64_000


def boot_command(python: str, harness_parent: str, config: dict[str, object]) -> list[str]:
    """The interpreter command that imports the harness from ``harness_parent`` and runs it.

    The config travels as hex-encoded ``marshal`` data (the child runs this same
    interpreter, and ``marshal`` costs it no imports).
    """
    boot = f"import sys;sys.path.insert(0,{harness_parent!r});from harness.main import main;main()"
    return [python, "-I", "-S", "-c", boot, marshal.dumps(config).hex()]


def child_env(home: str) -> dict[str, str]:
    """The whole environment of a sandboxed program: no variable of the grader's."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


def job_message(job: SandboxJob, *, with_test: bool = True) -> dict[str, object]:
    """The job as the child reads it: code, calls with encoded arguments, and the test snippet
    when it runs in the solution's own process (remote backends); local backends send the
    test to the verifier alone (:mod:`.harness.verifier`)."""
    calls = [
        {"function": c.function, "args": values.encode(list(c.args)), "kwargs": values.encode(dict(c.kwargs))}
        for c in job.calls
    ]
    return {"code": job.code, "calls": calls, "test": job.test_code if with_test else None}


def job_bytes(job: SandboxJob) -> bytes:
    """:func:`job_message` without the test, as ``marshal`` data for a child running this same interpreter."""
    return marshal.dumps(job_message(job, with_test=False))


def test_bytes(test: str, token: str) -> bytes:
    """What the verifier reads on its own pipe: the test and the token its verdict must carry."""
    return marshal.dumps({"test": test, "token": token})


def harness_limits(limits: SandboxLimits) -> dict[str, object]:
    """The ``limits`` part of the child's config."""
    return {
        "memory_bytes": None if limits.memory_mb is None else limits.memory_mb * 1024 * 1024,
        "cpu_s": limits.cpu_s,
        "file_size_bytes": limits.max_file_size_mb * 1024 * 1024,
        "processes": limits.max_processes if limits.allow_subprocess else None,
    }


@dataclass
class Launch:
    """How to start one child: its command (None: forked by the fork server), directory,
    environment and leftovers to remove."""

    argv: list[str] | None
    cwd: str
    env: dict[str, str]
    cleanup: list[Path] = field(default_factory=list)


class _VerdictPipes:
    """The verifier's two pipes: the test (and a fresh token) in, the verdict out."""

    def __init__(self, fds: Fds, test: str) -> None:
        self.test_r, self.test_w = nonblocking_pipe(fds, ours="write")
        self.verdict_r, self.verdict_w = nonblocking_pipe(fds, ours="read")
        self.token = secrets.token_hex(16)
        self.payload = test_bytes(test, self.token)
        self.data = bytearray()


@dataclass
class _Pipes:
    """A run's pipes; the child's ends, in the order the fork server numbers them 0, 1, 2, 3, ..."""

    fds: Fds
    stdin_r: int
    stdin_w: int
    stdout_r: int
    stdout_w: int
    stderr_r: int
    stderr_w: int
    job_r: int
    job_w: int
    result_r: int
    result_w: int
    verdict: _VerdictPipes | None

    @classmethod
    def open(cls, test: str | None) -> _Pipes:
        fds = Fds()
        try:
            stdin = nonblocking_pipe(fds, ours="write")
            stdout = nonblocking_pipe(fds, ours="read")
            stderr = nonblocking_pipe(fds, ours="read")
            job = nonblocking_pipe(fds, ours="write")
            result = nonblocking_pipe(fds, ours="read")
            verdict = None if test is None else _VerdictPipes(fds, test)
        except OSError as exc:
            fds.close_all()
            raise SandboxError(f"could not create the sandbox's pipes: {exc}") from exc
        return cls(fds, *stdin, *stdout, *stderr, *job, *result, verdict)

    def child_ends(self) -> list[int]:
        ends = [self.stdin_r, self.stdout_w, self.stderr_w, self.job_r, self.result_w]
        if self.verdict is not None:
            ends += [self.verdict.test_r, self.verdict.verdict_w]
        return ends


class _Child(Protocol):
    """A started child, however it was started."""

    lost: str  # why the sandbox machinery lost the run, if it did

    def kill(self) -> None:
        """SIGKILL the child's whole process group (harmless once it has ended)."""

    async def wait(self) -> int:
        """Its exit status (minus the signal that killed it)."""
        ...

    async def aclose(self) -> None:
        """Release it (after :meth:`wait`)."""


class _ExecChild:
    """A child started by ``exec`` (the ``bwrap`` command)."""

    lost = ""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process

    def kill(self) -> None:
        _kill_group(self.process.pid)

    async def wait(self) -> int:
        returncode = await self.process.wait()
        _kill_group(self.process.pid)  # grandchildren must not outlive the run
        return returncode

    async def aclose(self) -> None:
        await self.process.aclose()


class _Forked:
    """A child forked by the fork server, which kills its group before it reaps it."""

    def __init__(self, child: ForkedChild) -> None:
        self.child = child
        self.lost = ""

    def kill(self) -> None:
        self.child.kill()

    async def wait(self) -> int:
        try:
            return await self.child.wait()
        except SandboxError as exc:
            self.lost = str(exc)
            return -signal.SIGKILL

    async def aclose(self) -> None:
        self.child.close()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _remove(paths: list[Path]) -> None:
    for path in paths:
        shutil.rmtree(path, onerror=_make_writable)


def _make_writable(func: Callable[..., object], path: str, _exc: object) -> None:
    """``rmtree`` error hook: the code may have removed permissions; restore them and retry."""
    for target in (os.path.dirname(path), path):
        with contextlib.suppress(OSError):
            os.chmod(target, 0o700)
    with contextlib.suppress(OSError):
        func(path)


class LocalBackend:
    """The shared machinery of the local backends (see the module docstring).

    Backends whose :meth:`launch` returns no command are forked, already warm, by a fork
    server (:class:`~openjudge.graders.code._zygote.ForkServer`) kept per event loop and run
    with :attr:`python`.
    """

    name = "local"
    signal_in_status = False

    def __init__(self, *, work_root: str | None = None) -> None:
        self.work_root = work_root
        self._servers = LoopLocal(
            lambda: ForkServer(self.python, HARNESS_DIR.parent, child_env("/"), self.name)
        )

    @property
    def python(self) -> str:
        """The interpreter of the fork server (and so of every forked child)."""
        return os.path.realpath(sys.executable)

    def launch(self, config: dict[str, object], limits: SandboxLimits) -> Launch:
        """How to start the child; ``config`` already holds the pipes and limits."""
        raise NotImplementedError

    def fork_server(self) -> ForkServer:
        """The running event loop's fork server (started by its first run)."""
        return self._servers.get()

    async def run(self, job: SandboxJob, limits: SandboxLimits) -> SandboxRun:
        try:
            data = job_bytes(job)
        except ValueError as exc:  # ValueTooLarge, or a value json cannot write
            raise SandboxError(f"the test's arguments cannot be sent to the sandbox: {exc}") from exc
        pipes = _Pipes.open(job.test_code)
        config: dict[str, object] = {
            "job_fd": pipes.job_r,
            "result_fd": pipes.result_w,
            "limits": harness_limits(limits),
            "allow_processes": limits.allow_subprocess,
            "sys_path": [p for p in sys.path if p] if limits.site_packages else None,
        }
        if pipes.verdict is not None:
            config["verifier"] = {"test_fd": pipes.verdict.test_r, "verdict_fd": pipes.verdict.verdict_w}
        launch: Launch | None = None
        try:
            launch = await anyio.to_thread.run_sync(self.launch, config, limits)
            return await self._run(launch, config, job, data, limits, pipes)
        finally:
            pipes.fds.close_all()
            if launch is not None and launch.cleanup:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(_remove, launch.cleanup)

    async def _start(self, launch: Launch, config: dict[str, object], pipes: _Pipes) -> _Child:
        ends = pipes.child_ends()
        if launch.argv is None:
            # The fork server puts the child's ends at 0, 1, 2, then 3, 4, ... in this order.
            first = FIRST_RUN_FD
            config.update(job_fd=first, result_fd=first + 1, env=launch.env, cwd=launch.cwd)
            if pipes.verdict is not None:
                config["verifier"] = {"test_fd": first + 2, "verdict_fd": first + 3}
            return _Forked(await self.fork_server().start(config, ends))
        try:
            process = await anyio.open_process(
                launch.argv,
                stdin=pipes.stdin_r,
                stdout=pipes.stdout_w,
                stderr=pipes.stderr_w,
                cwd=launch.cwd,
                env=launch.env,
                start_new_session=True,
                pass_fds=tuple(ends[3:]),
            )
        except OSError as exc:
            raise SandboxError(f"could not start the {self.name} sandbox: {exc}") from exc
        return _ExecChild(process)

    async def _run(
        self,
        launch: Launch,
        config: dict[str, object],
        job: SandboxJob,
        data: bytes,
        limits: SandboxLimits,
        pipes: _Pipes,
    ) -> SandboxRun:
        fds, verdict = pipes.fds, pipes.verdict
        stdout, stderr = Capture(limits.max_output_bytes), Capture(limits.max_output_bytes)
        results = bytearray()
        results_done = anyio.Event()
        verdict_done = anyio.Event()
        if verdict is None:
            verdict_done.set()
        returncode: int | None = None
        exited = timed_out = False
        # The job, standard input and test wait in their pipes (closed when complete) before the
        # child starts: it reads them without a round trip through this event loop.
        inputs = [(pipes.job_w, data), (pipes.stdin_w, job.stdin.encode("utf-8", errors="surrogatepass"))]
        if verdict is not None:
            inputs.append((verdict.test_w, verdict.payload))
        pending: list[tuple[int, bytes]] = []
        for fd, payload in inputs:
            rest = prefill(fd, payload)
            if rest:
                pending.append((fd, rest))
            else:
                fds.close(fd)
        start = anyio.current_time()
        elapsed_s = 0.0
        child = await self._start(launch, config, pipes)
        fds.close(*pipes.child_ends())  # the child has its copies; ours would keep the pipes open
        try:
            with anyio.move_on_after(limits.timeout_s) as deadline:
                async with anyio.create_task_group() as tg:
                    for fd, rest in pending:
                        tg.start_soon(write_fd, fds, fd, rest)
                    tg.start_soon(read_fd, pipes.result_r, results, results_done, _MAX_REPORT_BYTES)
                    if verdict is not None:
                        tg.start_soon(
                            read_fd, verdict.verdict_r, verdict.data, verdict_done, _MAX_VERDICT_BYTES
                        )
                    tg.start_soon(stdout.drain, pipes.stdout_r, child.kill)
                    tg.start_soon(stderr.drain, pipes.stderr_r, None)
                    returncode = await child.wait()
                    exited = True
                    elapsed_s = anyio.current_time() - start
                    with anyio.move_on_after(_DRAIN_GRACE_S):
                        await stdout.done.wait()
                        await stderr.done.wait()
                        await results_done.wait()
                        await verdict_done.wait()
                    tg.cancel_scope.cancel()
            if deadline.cancelled_caught and not exited:
                timed_out = True
                elapsed_s = anyio.current_time() - start
        finally:
            child.kill()
            with anyio.CancelScope(shield=True):
                returncode = await child.wait()
                await child.aclose()
        if child.lost:
            raise SandboxError(child.lost)
        facts = RunFacts(
            backend=self.name,
            returncode=returncode,
            stdout=stdout.text(),
            stderr=stderr.text(),
            elapsed_s=elapsed_s,
            timed_out=timed_out,
            output_overflow=stdout.overflow,
            signal_in_status=self.signal_in_status,
            cpu_s=limits.cpu_s,
        )
        test_verdict = None if verdict is None else parse_verdict(bytes(verdict.data), verdict.token)
        return finish_run(facts, parse_report(bytes(results)), len(job.calls), test_verdict)


class ProcessBackend(LocalBackend):
    """A plain child process: clean environment, temporary directory, rlimits, seccomp.

    No namespaces: the child can read whatever its user can read (including the
    grader's ``/proc/<pid>/environ`` when they share a user). Writes outside its
    directory are refused only by Python-level guards. Use it where user namespaces are
    unavailable, with no secrets in the grader's environment.
    """

    name = "process"

    def launch(self, config: dict[str, object], limits: SandboxLimits) -> Launch:
        root = Path(tempfile.mkdtemp(prefix="openjudge-code-", dir=self.work_root))
        work = root / "work"
        work.mkdir()
        config.update(isolation="process", workdir=str(work), parent_pid=os.getpid())
        return Launch(argv=None, cwd=str(work), env=child_env(str(work)), cleanup=[root])

    @property
    def python(self) -> str:
        return sys.executable
