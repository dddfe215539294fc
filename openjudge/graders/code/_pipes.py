"""The grader's ends of a sandbox child's pipes: non-blocking writes and capped reads on the event loop.

Every pipe of a run (standard input, output and error, the job, the reports, the test and
the verdict) is a plain descriptor here, whether the child was started by ``exec`` or forked
by the fork server (:mod:`openjudge.graders.code._zygote`), so both read and write them alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import anyio

__all__ = ["Capture", "Fds", "nonblocking_pipe", "prefill", "read_fd", "write_fd"]


def nonblocking_pipe(fds: Fds, *, ours: str) -> tuple[int, int]:
    """A new pipe ``(read, write)`` registered in ``fds``; the grader's end (``ours``: ``read`` or ``write``)
    is non-blocking, the child's end blocks as a program expects."""
    read, write = os.pipe()
    fds.open.update((read, write))
    os.set_blocking(read if ours == "read" else write, False)
    return read, write


class Fds:
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


class Capture:
    """Reads one output stream (a non-blocking descriptor) up to a byte cap."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.overflow = False
        self.done = anyio.Event()

    async def drain(self, fd: int, on_overflow: Callable[[], None] | None) -> None:
        try:
            while True:
                await anyio.wait_readable(fd)
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    return
                room = self.cap - len(self.data)
                self.data += chunk[: max(0, room)]
                if len(chunk) > room:
                    self.overflow = True
                    if on_overflow is not None:
                        on_overflow()
                        return
        except OSError:
            pass
        finally:
            self.done.set()

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def prefill(fd: int, data: bytes) -> bytes:
    """Write what fits now into a fresh non-blocking pipe (up to its buffer); what is left to send."""
    try:
        return data[os.write(fd, data) :] if data else data
    except BlockingIOError:
        return data
    except OSError:  # the child is gone already: write_fd finds out and closes the pipe
        return data


async def write_fd(fds: Fds, fd: int, data: bytes) -> None:
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


async def read_fd(fd: int, sink: bytearray, done: anyio.Event, cap: int) -> None:
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
