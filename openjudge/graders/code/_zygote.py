"""The grader's side of the warm fork server (:mod:`openjudge.graders.code.harness.zygote`).

Starting an interpreter and importing the harness is most of what a sandboxed run costs
(HumanEval's canonical solutions run in a few milliseconds each). A :class:`ForkServer` starts
one interpreter per backend and event loop, with the harness imported, and asks it to fork
once per run; the forked child then builds the run's sandbox exactly as a freshly started
one would (new namespaces, limits, seccomp), so each run is as isolated from the next as
before. The server holds no job, test or verdict: those go on pipes between the grader and
the child. It exits when idle for :data:`IDLE_S` seconds, when the grader closes it, or with
the grader; the next run starts a new one.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import socket
import subprocess
import weakref
from pathlib import Path

import anyio

from openjudge.graders.code._sandbox import SandboxError

__all__ = ["IDLE_S", "ForkServer", "ForkedChild"]

IDLE_S = 10.0
_MAX_STDERR = 4096


class ForkServer:
    """One warm fork server process for one backend in one event loop (started on first use).

    Args:
        python: The interpreter to run it with (started with ``-I -S``).
        harness_parent: The directory holding the ``harness`` package.
        env: Its environment (each run sets its own).
        name: The backend's name, for error messages.
    """

    def __init__(self, python: str, harness_parent: Path, env: dict[str, str], name: str) -> None:
        self.python = python
        self.harness_parent = harness_parent
        self.env = env
        self.name = name
        self._server: _Process | None = None
        self._sending = anyio.Lock()

    def _spawn(self) -> _Process:
        # Started from the event loop's thread: the server dies with that thread (PR_SET_PDEATHSIG),
        # so it must not be a worker thread that may end while the loop still runs.
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        boot = (
            f"import sys;sys.path.insert(0,{str(self.harness_parent)!r});"
            f"from harness.zygote import serve;serve({IDLE_S!r})"
        )
        try:
            # Pipes for all three streams, never written: the interpreter then builds sys.stdin,
            # stdout and stderr as it does for a run's pipes, which each child puts in their place.
            process = subprocess.Popen(
                [self.python, "-I", "-S", "-c", boot, str(theirs.fileno()), str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd="/",
                env=self.env,
                start_new_session=True,
                pass_fds=(theirs.fileno(),),
            )
        except OSError as exc:
            ours.close()
            raise SandboxError(f"could not start the {self.name} sandbox: {exc}") from exc
        finally:
            theirs.close()
        ours.setblocking(False)
        assert process.stderr is not None  # stderr=PIPE above
        os.set_blocking(process.stderr.fileno(), False)
        return _Process(process, ours)

    async def start(self, config: dict[str, object], fds: list[int]) -> ForkedChild:
        """Fork a child that runs ``config`` with ``fds`` as its descriptors 0, 1, 2, 3, ...

        Raises:
            SandboxError: The server could not be started, or ended before it forked (twice).
        """
        data = marshal.dumps(config)
        for attempt in range(2):
            if self._server is None or self._server.gone:
                self._server = self._spawn()
            server = self._server
            status, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                status.setblocking(False)
                try:
                    async with self._sending:
                        await _send(server.control, data, [theirs.fileno(), *fds])
                finally:
                    theirs.close()
                reply = await _receive(status)
            except BaseException:
                status.close()
                raise
            if reply.startswith(b"P"):
                return ForkedChild(status, int(reply[1:]), self)
            status.close()
            if reply.startswith(b"E"):
                raise SandboxError(
                    f"could not start the {self.name} sandbox: {reply[1:].decode(errors='replace')}"
                )
            # No answer: the server ended before it forked (idle, or broken). Nothing of the run
            # exists, so it is safe to ask a new one.
            why = server.retire()
            if attempt == 1:
                raise SandboxError(f"the {self.name} sandbox's fork server ended: {why}")
        raise AssertionError("unreachable")  # pragma: no cover

    @property
    def pid(self) -> int | None:
        """The server's process id, while one runs."""
        server = self._server
        return (
            None if server is None or server.gone or server.process.poll() is not None else server.process.pid
        )

    def close(self) -> None:
        """Stop the server now (its runs, if any, die with it)."""
        if self._server is not None:
            self._server.retire()
            self._server = None


class _Process:
    """A running fork server: the process and the grader's end of its control socket."""

    def __init__(self, process: subprocess.Popen[bytes], control: socket.socket) -> None:
        self.process = process
        self.control = control
        self.gone = False
        self._ended: str | None = None
        self._finalizer = weakref.finalize(self, _stop, process, control)

    def retire(self) -> str:
        """Stop it (if it still runs) and say how it ended.

        Every run that found it gone calls this (concurrent runs all do when an idle server
        exits under them): the first stops it and keeps the answer, the others get that answer.
        """
        if self._ended is None:
            self.gone = True
            stderr = b""
            if self.process.stderr is not None:
                with contextlib.suppress(OSError, TypeError):
                    stderr = self.process.stderr.read(_MAX_STDERR) or b""
            self._finalizer()
            text = stderr.decode(errors="replace").strip()[-300:]
            self._ended = text or f"exit status {self.process.returncode}"
        return self._ended


def _stop(process: subprocess.Popen[bytes], control: socket.socket) -> None:
    control.close()
    if process.poll() is None:
        process.kill()
    process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


class ForkedChild:
    """A run's child forked by the server: its exit status, and a way to kill its whole group."""

    def __init__(self, status: socket.socket, pid: int, server: ForkServer) -> None:
        self.status = status
        self.pid = pid
        self.returncode: int | None = None
        self._server = server  # kept alive while the run is
        self._waiting = anyio.Lock()

    def kill(self) -> None:
        """Ask the server to SIGKILL the child's process group (nothing happens once it has ended)."""
        if self.returncode is None:
            with contextlib.suppress(OSError):
                self.status.send(b"K")

    async def wait(self) -> int:
        """The exit status (minus the signal that killed it); when this returns, the group is dead.

        Raises:
            SandboxError: The server ended during the run (the run died with it).
        """
        async with self._waiting:
            if self.returncode is None:
                reply = await _receive(self.status)
                if not reply.startswith(b"X"):
                    self.status.close()
                    raise SandboxError(f"the {self._server.name} sandbox's fork server ended during the run")
                self.returncode = int(reply[1:])
                self.status.close()
        return self.returncode

    def close(self) -> None:
        """Forget the run (the server kills what is left of it when this end closes)."""
        self.status.close()


async def _send(sock: socket.socket, data: bytes, fds: list[int]) -> None:
    while True:
        try:
            socket.send_fds(sock, [data], fds)
            return
        except BlockingIOError:
            await anyio.wait_writable(sock.fileno())
        except OSError:  # the server is gone: its queue, with any request in it, went with it
            return


async def _receive(sock: socket.socket) -> bytes:
    """One message, or ``b""`` when the other end closed."""
    while True:
        try:
            return sock.recv(64)
        except BlockingIOError:
            await anyio.wait_readable(sock.fileno())
        except OSError:
            return b""
