"""The worker process of :class:`openjudge.graders._workers.WorkerPool`, run as a script.

Started as ``python -I <this file>``: by path, not ``-m``, so a worker imports nothing from
openjudge (not even the package ``__init__``) before it has read the grader's ``sys.path``,
and the isolated mode keeps the environment's PYTHONPATH and the current directory out.
Standard library only, for the same reason.

Protocol, on stdin and a private copy of stdout, each message a 4-byte big-endian length and
JSON: the parent sends ``{"sys_path", "preload", "parent", "memory_bytes"}`` and the worker
answers ``{"ready": true}``; then each ``{"function": "module:name", "args": [...]}`` gets
``{"ok": true, "value": ...}`` or ``{"ok": false, "error": "Type: message"}``. End of input
ends the worker.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import struct
import sys
from typing import IO, Any

HEADER = struct.Struct(">I")


def read(source: IO[bytes]) -> Any:
    header = source.read(4)
    if len(header) < 4:
        raise SystemExit(0)
    return json.loads(source.read(HEADER.unpack(header)[0]))


def write(channel: IO[bytes], message: object) -> None:
    data = json.dumps(message).encode()
    channel.write(HEADER.pack(len(data)) + data)
    channel.flush()


def _die_with_parent() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG: SIGKILL when the grader dies
    except Exception:  # not Linux: end of input still ends the worker
        pass


def main() -> None:
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what imported code prints must not reach the channel
    source = sys.stdin.buffer
    _die_with_parent()
    hello = read(source)
    sys.path[:] = hello["sys_path"]
    if os.getppid() != hello["parent"]:
        raise SystemExit(0)
    for name in hello["preload"]:
        with contextlib.suppress(ImportError):  # the call itself then says what is missing
            importlib.import_module(name)
    if hello["memory_bytes"]:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (hello["memory_bytes"], hello["memory_bytes"]))
    write(channel, {"ready": True})
    while True:
        request = read(source)
        try:
            module, _, name = request["function"].partition(":")
            value = getattr(importlib.import_module(module), name)(*request["args"])
            write(channel, {"ok": True, "value": value})
        except Exception as exc:
            write(channel, {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]})


if __name__ == "__main__":
    main()
