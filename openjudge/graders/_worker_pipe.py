"""One worker process of a :class:`~openjudge.graders._workers.WorkerPool` and its pipes.

The process is a fresh ``python -I`` running :mod:`openjudge.graders._worker_process` by
path; messages are a 4-byte big-endian length and JSON. :class:`WorkerProcess` is used by
one lane thread at a time (:mod:`._worker_lanes`) and may be killed from any thread. Reads
wait with ``poll`` up to a deadline, so the lane that reads a reply is also the clock of
the call that computes it.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["WorkFailed", "WorkTimeout", "WorkerProcess", "frame"]

_HEADER = struct.Struct(">I")
_MAX_FRAME = 256 * 1024 * 1024
_WORKER = str(Path(__file__).with_name("_worker_process.py"))
"""The worker's code: a script of the standard library only, run by path (see its docstring)."""


class WorkTimeout(TimeoutError):
    """A call overran its budget; its worker was killed."""


class WorkFailed(RuntimeError):
    """A worker could not start, died, or the function raised (the message says which)."""


class WorkerProcess:
    """A worker process and its pipes, used by one lane thread at a time (and killed from anywhere)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        self._in = process.stdin.fileno()
        self._out = process.stdout.fileno()
        self._buffer = bytearray()
        self._poll = select.poll()  # not select(): it refuses descriptors past 1023
        self._poll.register(self._out, select.POLLIN)

    @classmethod
    def start(
        cls, preload: tuple[str, ...], memory_mb: int | None, startup_timeout_s: float
    ) -> WorkerProcess:
        """Blocking: a new worker that has imported ``preload``. Called from its lane thread:
        PR_SET_PDEATHSIG fires when the creating *thread* ends, and a lane outlives its worker."""
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", _WORKER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                bufsize=0,
                start_new_session=True,  # Ctrl-C in a terminal goes to the grader, which kills workers itself
            )
        except OSError as exc:
            raise WorkFailed(f"could not start a worker process: {exc}") from exc
        worker = cls(process)
        hello = {
            "sys_path": sys.path,
            "preload": list(preload),
            "parent": os.getpid(),
            "memory_bytes": None if memory_mb is None else memory_mb * 1024 * 1024,
        }
        try:
            worker.send(frame(hello))
            worker.receive(time.monotonic() + startup_timeout_s)
        except WorkTimeout:
            worker.kill()
            raise WorkFailed(f"a worker process did not start within {startup_timeout_s:g} s") from None
        except WorkFailed as exc:
            worker.kill()
            raise WorkFailed(f"the worker process did not start: {exc}") from exc
        return worker

    def send(self, frame: bytes) -> None:
        """Blocking: write one framed message."""
        view = memoryview(frame)
        try:
            while view:
                view = view[os.write(self._in, view) :]
        except OSError as exc:
            raise WorkFailed(f"the worker process failed: {exc}") from exc

    def receive(self, deadline: float) -> dict[str, Any]:
        """Blocking: the next reply; WorkTimeout at ``deadline`` (monotonic), WorkFailed at end of file."""
        header = self._read(4, deadline)
        size = _HEADER.unpack(header)[0]
        if size > _MAX_FRAME:
            raise WorkFailed("the worker sent an oversized reply")
        try:
            reply = json.loads(self._read(size, deadline))
        except ValueError as exc:
            raise WorkFailed("the worker sent a malformed reply") from exc
        if not isinstance(reply, dict):
            raise WorkFailed("the worker sent a malformed reply")
        return reply

    def _read(self, size: int, deadline: float) -> bytes:
        while len(self._buffer) < size:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise WorkTimeout
            try:
                readable = self._poll.poll(max(1, int(wait * 1000 + 0.999)))
                chunk = os.read(self._out, 1 << 16) if readable else None
            except (OSError, ValueError) as exc:
                raise WorkFailed(f"the worker process failed: {exc}") from exc
            if chunk == b"":
                status = self.process.poll()
                raise WorkFailed(f"the worker process ended (exit status {status})")
            if chunk:
                self._buffer += chunk
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def kill(self) -> None:
        """SIGKILL the worker and close its pipes (its lane then reads the end of file)."""
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()


def frame(message: object) -> bytes:
    """A message as the worker reads it: its length, then its JSON."""
    data = json.dumps(message).encode()
    return _HEADER.pack(len(data)) + data
