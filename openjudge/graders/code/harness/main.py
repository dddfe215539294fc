"""The sandbox child: read the job, confine this process, run the solution, report plain facts.

Started as ``python -I -S -c "...; from harness.main import main; main()" CONFIG``, or
forked, already warm, by the fork server (:mod:`.zygote`), which calls :func:`start`. It
imports as little as it can (no ``json``, ``re`` or ``typing``: each costs milliseconds
per test case). It never decides whether a test passed: it reports what happened (the program started,
raised, exited; what each called function returned, as plain data) as JSON lines on a
result pipe, and the grader, outside, compares those facts and the captured output with
the expected values, which never enter the sandbox. The solution can write to that pipe
too; it can then only claim what its own functions returned, which gains it nothing.
"""

from __future__ import annotations

import builtins
import ctypes
import io
import marshal
import os
import sys

from . import confine, values, verifier

TYPE_CHECKING = False  # typing and collections.abc cost start-up time; mypy reads this name as True
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import CodeType
    from typing import NoReturn

__all__ = ["EXIT_ERROR", "EXIT_MEMORY", "EXIT_SETUP", "fail_setup", "main", "run_job", "start"]

EXIT_ERROR = 1
EXIT_SETUP = 70
EXIT_MEMORY = 86
_PR_SET_PDEATHSIG = 1
_SIGKILL = 9

_JSON_ESCAPES = {ord('"'): '\\"', ord("\\"): "\\\\", **{c: f"\\u{c:04x}" for c in (*range(0x20), 0x7F)}}
_JSON_ESCAPES.update({c: f"\\u{c:04x}" for c in range(0xD800, 0xE000)})  # lone surrogates


def dumps(value: object) -> str:
    """JSON for the plain values the harness reports (``json`` itself would import ``re``)."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return float.__repr__(value)  # finite: values.encode tags the others
    if isinstance(value, str):
        return '"' + value.translate(_JSON_ESCAPES) + '"'
    if isinstance(value, list | tuple):
        return "[" + ",".join(dumps(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(dumps(str(k)) + ":" + dumps(v) for k, v in value.items()) + "}"
    raise TypeError(f"cannot report a {type(value).__name__}")


# Taken before any solution code runs, so patching builtins or modules cannot reach them.
_exec: Callable[[CodeType, dict[str, object]], None] = builtins.exec
_compile = builtins.compile
_dumps = dumps
_write = os.write
_encode = values.encode
_decode = values.decode


class Emitter:
    """Writes one JSON object per line to a file descriptor (or hands lines to a callback)."""

    def __init__(self, fd: int | None = None, sink: Callable[[str], None] | None = None) -> None:
        self.fd = fd
        self.sink = sink

    def __call__(self, record: dict[str, object]) -> None:
        line = _dumps(record) + "\n"
        if self.sink is not None:
            self.sink(line)
            return
        data = memoryview(line.encode())
        try:
            while data and self.fd is not None:
                data = data[_write(self.fd, data) :]
        except OSError:  # the grader stopped reading: nothing to do
            pass


def _print_error(exc: BaseException) -> None:
    """The traceback without this module's own frame, so it starts in the solution."""
    try:
        import traceback  # only on failure: it is a noticeable part of the start-up time

        tb = exc.__traceback__
        traceback.print_exception(type(exc), exc, tb.tb_next if tb is not None else None)
    except BaseException:  # printing must never hide the outcome
        pass


def _function(namespace: dict[str, object], name: str) -> Callable[..., object]:
    """``name`` in the solution's namespace, else a method of ``Solution()`` (LeetCode style)."""
    target = namespace.get(name)
    if target is None and isinstance(namespace.get("Solution"), type):
        target = getattr(namespace["Solution"](), name, None)  # type: ignore[operator]  # checked: a class
    if not callable(target):
        raise NameError(f"the solution defines no function {name!r}")
    return target


def _run_calls(namespace: dict[str, object], calls: list[dict[str, object]], emit: Emitter) -> int:
    for index, call in enumerate(calls):
        try:
            function = _function(namespace, str(call["function"]))
            args = _decode(call.get("args", []))
            kwargs = _decode(call.get("kwargs", {"$dict": []}))
            if not isinstance(args, list | tuple) or not isinstance(kwargs, dict):
                raise TypeError("malformed call")
            returned = function(*args, **kwargs)
            encoded = _encode(returned)
        except MemoryError:
            emit({"event": "memory"})
            return EXIT_MEMORY
        except BaseException as exc:  # the solution's failure, reported as a fact
            _print_error(exc)
            emit({"event": "call", "index": index, "ok": False, "error": type(exc).__name__})
            continue
        emit({"event": "call", "index": index, "ok": True, "value": encoded})
    return 0


def run_job(job: dict[str, object], emit: Emitter, channel: verifier.Channel | None = None) -> int:
    """Run the solution, its calls, then serve the verifier (``channel``) or run an in-process
    test snippet (remote backends only); the exit status for the process."""
    emit({"event": "started"})
    namespace: dict[str, object] = {
        "__name__": "__main__",
        "__builtins__": builtins,
        "__file__": "solution.py",
    }
    status = 0
    try:
        _exec(_compile(str(job["code"]), "solution.py", "exec"), namespace)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            emit({"event": "exit", "code": repr(exc.code)[:80]})
            status = EXIT_ERROR
    except MemoryError:
        namespace.clear()
        emit({"event": "memory"})
        return EXIT_MEMORY
    except BaseException as exc:
        namespace.clear()
        _print_error(exc)
        emit({"event": "error", "phase": "solution", "type": type(exc).__name__})
        return EXIT_ERROR
    if status == 0:
        calls = job.get("calls")
        if isinstance(calls, list) and calls:
            status = _run_calls(namespace, calls, emit)
        if status == 0 and channel is not None:
            status = channel.serve(namespace, _dumps, _print_error)
            if status == EXIT_MEMORY:
                emit({"event": "memory"})
                return status
        test = job.get("test")
        if status == 0 and isinstance(test, str):
            try:
                _exec(_compile(test, "test.py", "exec"), namespace)
            except MemoryError:
                emit({"event": "memory"})
                return EXIT_MEMORY
            except BaseException as exc:  # SystemExit too: a test that did not finish did not pass
                _print_error(exc)
                emit({"event": "test", "ok": False, "error": type(exc).__name__})
                status = EXIT_ERROR
            else:
                emit({"event": "test", "ok": True})
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # the grader may have stopped reading (output limit)
            pass
    emit({"event": "done"})
    return status


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _die_with_parent(parent: int) -> None:
    if sys.platform == "linux":  # elsewhere only the grader's kill of the process group remains
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(EXIT_SETUP)


def _setup_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(encoding="utf-8", errors="backslashreplace")
    if isinstance(sys.stdin, io.TextIOWrapper):
        sys.stdin.reconfigure(encoding="utf-8", errors="replace")
    builtins.exit = builtins.quit = sys.exit  # type: ignore[assignment]  # -S skips site, which defines them
    sys.argv = ["solution.py"]


def _confine(config: dict[str, object], emit: Emitter, *, guard: bool = True) -> None:
    isolation = config["isolation"]
    if isolation == "process" and guard:
        from .guards import install_file_guard

        def report(what: str) -> None:
            emit({"event": "violation", "what": what})

        install_file_guard(str(config["workdir"]), report)
    limits = config.get("limits")
    confine.apply_rlimits(limits if isinstance(limits, dict) else {})
    if os.getuid() == 0 and isolation == "process" and sys.platform == "linux":
        confine.drop_bounding_set()
        confine.clear_capabilities()
    if not confine.install_seccomp(allow_processes=bool(config.get("allow_processes"))):
        os.write(2, b"openjudge sandbox: no seccomp filter on this system\n")


def main() -> None:
    """Entry point of a freshly started sandbox child: the config is ``sys.argv[1]``; never returns."""
    try:
        config = marshal.loads(bytes.fromhex(sys.argv[1]))
    except Exception as exc:
        fail_setup(exc)
    start(config)


def start(config: dict[str, object]) -> None:
    """Become the sandbox child for ``config`` (see the module docstring); never returns.

    Called by :func:`main` in a fresh interpreter, or by the fork server
    (:mod:`.zygote`) in a child it just forked, with the run's descriptors in place.
    """
    try:
        parent = config.get("parent_pid")
        if isinstance(parent, int):
            _die_with_parent(parent)
        job = marshal.loads(_read_all(int(str(config["job_fd"]))))  # written by the grader: trusted
        emit = Emitter(int(str(config["result_fd"])))
        if config["isolation"] == "unshare":
            from . import namespaces

            spec = config["namespaces"]
            if not isinstance(spec, dict):
                raise TypeError("the namespaces spec must be a dict")
            namespaces.enter(spec)  # returns only in the sandboxed runner
        os.chdir(str(config["workdir"]))
        paths = config.get("sys_path")
        if isinstance(paths, list):
            sys.path[:] = [str(p) for p in paths]
        _setup_streams()
        channel = None
        spec = config.get("verifier")
        if isinstance(spec, dict):  # the parent verifies (and never returns here); the child runs the code
            channel = verifier.split(spec, lambda: _confine(config, emit, guard=False), _dumps)
        _confine(config, emit)
    except Exception as exc:  # nothing of the solution has run: the sandbox itself failed
        fail_setup(exc)
    os._exit(run_job(job, emit, channel))


def fail_setup(exc: BaseException) -> NoReturn:
    """Say on standard error that the sandbox (not the solution) failed, and exit with ``EXIT_SETUP``."""
    os.write(2, f"openjudge sandbox setup failed: {type(exc).__name__}: {exc}\n".encode(errors="replace"))
    os._exit(EXIT_SETUP)
