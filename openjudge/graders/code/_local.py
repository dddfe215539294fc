"""Running the harness in a local child process: pipes, limits, the kill, and the ``process`` backend.

:class:`LocalBackend` owns everything the local backends share: the job goes to the
child on one pipe and its reports come back on another (both passed as inherited file
descriptors), standard output and error are captured up to a cap, the wall-clock limit
is enforced from here, and when the run ends, times out or is cancelled the child's
whole process group is killed with SIGKILL (the namespace backends then lose their
whole PID namespace). Subclasses only say how to start the child.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread

from openjudge.graders.code._reports import RunFacts, finish_run, parse_report, parse_verdict
from openjudge.graders.code._sandbox import SandboxError, SandboxJob, SandboxLimits, SandboxRun
from openjudge.graders.code.harness import values

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
    """How to start one child: its command, directory, environment and leftovers to remove."""

    argv: list[str]
    cwd: str
    env: dict[str, str]
    cleanup: list[Path] = field(default_factory=list)


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


class _VerdictPipes:
    """The verifier's two pipes: the test (and a fresh token) in, the verdict out."""

    def __init__(self, fds: _Fds, test: str) -> None:
        self.test_r, self.test_w = os.pipe()
        self.verdict_r, self.verdict_w = os.pipe()
        fds.open.update((self.test_r, self.test_w, self.verdict_r, self.verdict_w))
        for fd in (self.test_w, self.verdict_r):
            os.set_blocking(fd, False)
        self.token = secrets.token_hex(16)
        self.payload = test_bytes(test, self.token)
        self.data = bytearray()


class _Fds:
    """Pipe ends this run still holds; each is closed exactly once (a number may be reused after)."""

    def __init__(self, *fds: int) -> None:
        self.open = set(fds)

    def close(self, *fds: int) -> None:
        for fd in fds:
            if fd in self.open:
                self.open.discard(fd)
                os.close(fd)

    def close_all(self) -> None:
        self.close(*list(self.open))


async def _write_fd(fds: _Fds, fd: int, data: bytes) -> None:
    """Write ``data`` to a non-blocking pipe, then close it (a child that stops reading just loses it)."""
    view = memoryview(data)
    try:
        while view:
            await anyio.wait_writable(fd)
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
    except OSError:  # BrokenPipeError: the child is gone
        pass
    finally:
        fds.close(fd)


async def _read_fd(fd: int, sink: bytearray, done: anyio.Event, cap: int = _MAX_REPORT_BYTES) -> None:
    """Read a non-blocking pipe to its end (or the cap) into ``sink``."""
    try:
        while len(sink) < cap:
            await anyio.wait_readable(fd)
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                break
            sink += chunk
    except OSError:
        pass
    finally:
        done.set()


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
    """The shared machinery of the local backends (see the module docstring)."""

    name = "local"
    signal_in_status = False

    def __init__(self, *, work_root: str | None = None) -> None:
        self.work_root = work_root

    def launch(self, config: dict[str, object], limits: SandboxLimits) -> Launch:
        """How to start the child; ``config`` already holds the pipes and limits."""
        raise NotImplementedError

    async def run(self, job: SandboxJob, limits: SandboxLimits) -> SandboxRun:
        try:
            data = job_bytes(job)
        except ValueError as exc:  # ValueTooLarge, or a value json cannot write
            raise SandboxError(f"the test's arguments cannot be sent to the sandbox: {exc}") from exc
        job_r, job_w = os.pipe()
        result_r, result_w = os.pipe()
        fds = _Fds(job_r, job_w, result_r, result_w)
        verdict: _VerdictPipes | None = None
        if job.test_code is not None:
            verdict = _VerdictPipes(fds, job.test_code)
        for fd in (job_w, result_r):
            os.set_blocking(fd, False)
        config: dict[str, object] = {
            "job_fd": job_r,
            "result_fd": result_w,
            "limits": harness_limits(limits),
            "allow_processes": limits.allow_subprocess,
            "sys_path": [p for p in sys.path if p] if limits.site_packages else None,
        }
        child_fds: tuple[int, ...] = (job_r, result_w)
        if verdict is not None:
            config["verifier"] = {"test_fd": verdict.test_r, "verdict_fd": verdict.verdict_w}
            child_fds += (verdict.test_r, verdict.verdict_w)
        launch: Launch | None = None
        try:
            launch = await anyio.to_thread.run_sync(self.launch, config, limits)
            return await self._run(launch, job, data, limits, fds, job_w, result_r, child_fds, verdict)
        finally:
            fds.close_all()
            if launch is not None and launch.cleanup:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(_remove, launch.cleanup)

    async def _run(
        self,
        launch: Launch,
        job: SandboxJob,
        data: bytes,
        limits: SandboxLimits,
        fds: _Fds,
        job_w: int,
        result_r: int,
        child_fds: tuple[int, ...],
        verdict: _VerdictPipes | None,
    ) -> SandboxRun:
        stdout, stderr = _Capture(limits.max_output_bytes), _Capture(limits.max_output_bytes)
        results = bytearray()
        results_done = anyio.Event()
        verdict_done = anyio.Event()
        if verdict is None:
            verdict_done.set()
        returncode: int | None = None
        exited = timed_out = False
        start = anyio.current_time()
        elapsed_s = 0.0
        try:
            process = await anyio.open_process(
                launch.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=launch.cwd,
                env=launch.env,
                start_new_session=True,
                pass_fds=child_fds,
            )
        except OSError as exc:
            raise SandboxError(f"could not start the {self.name} sandbox: {exc}") from exc
        fds.close(*child_fds)  # the child has its copies; ours would keep the pipes open
        try:
            with anyio.move_on_after(limits.timeout_s) as deadline:
                async with anyio.create_task_group() as tg:
                    if process.stdin is None or process.stdout is None or process.stderr is None:
                        raise RuntimeError("the sandbox child was started without pipes")
                    tg.start_soon(_write_fd, fds, job_w, data)
                    tg.start_soon(_feed, process.stdin, job.stdin.encode("utf-8", errors="surrogatepass"))
                    tg.start_soon(_read_fd, result_r, results, results_done)
                    if verdict is not None:
                        tg.start_soon(_write_fd, fds, verdict.test_w, verdict.payload)
                        tg.start_soon(
                            _read_fd, verdict.verdict_r, verdict.data, verdict_done, _MAX_VERDICT_BYTES
                        )
                    tg.start_soon(stdout.drain, process.stdout, lambda: _kill_group(process.pid))
                    tg.start_soon(stderr.drain, process.stderr, None)
                    returncode = await process.wait()
                    exited = True
                    elapsed_s = anyio.current_time() - start
                    _kill_group(process.pid)  # grandchildren must not outlive the run
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
            _kill_group(process.pid)
            with anyio.CancelScope(shield=True):
                returncode = await process.wait()
                await process.aclose()
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
        argv = boot_command(sys.executable, str(HARNESS_DIR.parent), config)
        return Launch(argv=argv, cwd=str(work), env=child_env(str(work)), cleanup=[root])
