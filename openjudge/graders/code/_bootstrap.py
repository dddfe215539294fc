"""Child-side bootstrap of the code sandbox. Runs as a script: ``python -I -S _bootstrap.py CONFIG``.

It must use only the standard library and must not import ``openjudge``. Before the
solution runs it (1) optionally moves into fresh network (and user) namespaces,
(2) sets resource limits, (3) installs Python-level guards that refuse network
access, writes outside the working directory and (unless allowed) new processes,
and then (4) runs the solution and the optional test snippet in one ``__main__``
namespace, and (5) writes a small JSON status file for the parent.

The guards are best effort, not a security boundary: code can bypass Python-level
patches (``ctypes``, the ``posix``/``_io`` modules, reading this process's memory).
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import os
import resource
import sys
from collections.abc import Callable
from typing import NoReturn

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_MEMORY = 86
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


class SandboxViolation(PermissionError):
    """Raised when sandboxed code attempts something the sandbox forbids."""


_violations: list[str] = []
_real_open = builtins.open


def _deny(what: str) -> NoReturn:
    message = f"openjudge sandbox: {what} is not allowed"
    if len(_violations) < 20:
        _violations.append(what)
    with contextlib.suppress(Exception):  # stderr may be closed by the solution
        sys.stderr.write(f"[openjudge-sandbox-violation] {what}\n")
    raise SandboxViolation(message)


def _unshare_network() -> str:
    """Move into a new network namespace (and user namespace if needed); report what happened."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        clone_newnet, clone_newuser = 0x40000000, 0x10000000
        if libc.unshare(clone_newnet) == 0:
            return "namespace"
        if libc.unshare(clone_newuser | clone_newnet) == 0:
            return "user_namespace"
    except Exception:  # any failure leaves only the Python-level guard
        pass
    return "python_guard"


def _set_limit(kind: int, soft: int, hard: int | None = None) -> None:
    hard = soft if hard is None else hard
    try:
        _, current_hard = resource.getrlimit(kind)
        if current_hard != resource.RLIM_INFINITY:
            hard = min(hard, current_hard)
            soft = min(soft, hard)
        resource.setrlimit(kind, (soft, hard))
    except (ValueError, OSError):
        pass


def _positive(config: dict[str, object], key: str) -> int | None:
    value = config.get(key)
    return value if isinstance(value, int) and value > 0 else None


def _apply_limits(config: dict[str, object]) -> None:
    if (memory := _positive(config, "memory_bytes")) is not None:
        _set_limit(resource.RLIMIT_AS, memory)
    if (cpu := _positive(config, "cpu_seconds")) is not None:
        _set_limit(resource.RLIMIT_CPU, cpu, cpu + 1)
    if (file_size := _positive(config, "file_size_bytes")) is not None:
        _set_limit(resource.RLIMIT_FSIZE, file_size)
    _set_limit(resource.RLIMIT_CORE, 0)
    if (nproc := _positive(config, "max_processes")) is not None:
        _set_limit(resource.RLIMIT_NPROC, nproc)


def _install_file_guard(workdir: str) -> None:
    root = os.path.realpath(workdir)
    real_open = builtins.open
    real_os_open = os.open

    def resolve(path: object, dir_fd: int | None = None) -> str:
        raw = os.fsdecode(os.fspath(path))  # type: ignore[call-overload]  # PathLike/str/bytes checked by fspath
        if dir_fd is not None and not os.path.isabs(raw):
            raw = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), raw)
        return raw

    def check(path: object, action: str, dir_fd: int | None = None) -> None:
        if isinstance(path, int):
            return
        raw = resolve(path, dir_fd)
        if raw in _DEVICES:
            return
        real = os.path.realpath(raw)
        if real != root and not real.startswith(root + os.sep):
            _deny(f"{action} {raw!r} (outside the sandbox directory)")

    def guarded_open(file: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        if any(flag in str(mode) for flag in "wax+"):
            check(file, "writing")
        return real_open(file, mode, *args, **kwargs)  # type: ignore[call-overload]  # forwards open()'s own signature

    def guarded_os_open(path: object, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if flags & _WRITE_FLAGS:
            check(path, "writing", dir_fd)
        return real_os_open(path, flags, mode, dir_fd=dir_fd)  # type: ignore[arg-type]  # same as os.open

    def wrap(name: str, action: str, arity: int = 1) -> None:
        original: Callable[..., object] | None = getattr(os, name, None)
        if original is None:
            return

        def guarded(*args: object, **kwargs: object) -> object:
            dir_fd = kwargs.get("dir_fd")
            for path in args[:arity]:
                check(path, action, dir_fd if isinstance(dir_fd, int) else None)
            return original(*args, **kwargs)

        setattr(os, name, guarded)

    builtins.open = guarded_open  # type: ignore[assignment]  # same call signature as open()
    io.open = guarded_open  # type: ignore[assignment]  # pathlib writes through io.open
    os.open = guarded_os_open
    for name in ("remove", "unlink", "rmdir", "mkdir", "truncate", "chmod", "chown", "lchown", "utime"):
        wrap(name, "changing")
    for name in ("mkfifo", "mknod"):
        wrap(name, "creating")
    for name in ("rename", "replace", "link"):
        wrap(name, "moving or linking", arity=2)

    def guarded_symlink(src: object, dst: object, *args: object, **kwargs: object) -> None:
        check(dst, "creating a link at")
        real_symlink(src, dst, *args, **kwargs)  # type: ignore[arg-type]  # same as os.symlink

    real_symlink = os.symlink
    os.symlink = guarded_symlink


def _install_network_guard() -> None:
    import _socket
    import socket

    c_init = _socket.socket.__init__

    class GuardedSocket(socket.socket):
        """Wrapping an existing descriptor (``socketpair``, ``fromfd``) is allowed; opening a new socket is not."""

        def __init__(
            self, family: int = -1, type: int = -1, proto: int = -1, fileno: int | None = None
        ) -> None:
            if fileno is None:
                _deny("network access (socket)")
            super().__init__(family, type, proto, fileno)

    class GuardedCSocket(_socket.socket):
        # socket.socket.__init__ calls _socket.socket.__init__ by module lookup, so this
        # guard also sees the Python-level path; it only lets existing descriptors through.
        def __init__(
            self, family: int = -1, type: int = -1, proto: int = -1, fileno: int | None = None
        ) -> None:
            if fileno is None:
                _deny("network access (socket)")
            c_init(self, family, type, proto, fileno)

    def blocked(*args: object, **kwargs: object) -> NoReturn:
        _deny("network access")

    socket.socket = GuardedSocket  # type: ignore[misc]  # replacing the class is the point
    _socket.socket = GuardedCSocket  # type: ignore[misc, assignment]  # also the C-level name
    # socketpair() stays usable: asyncio needs it for its self-pipe, and it cannot reach a network.
    for name in ("create_connection", "create_server", "getaddrinfo", "gethostbyname", "gethostbyname_ex"):
        if hasattr(socket, name):
            setattr(socket, name, blocked)
    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex"):
        if hasattr(_socket, name):
            setattr(_socket, name, blocked)


def _install_process_guard() -> None:
    import _posixsubprocess
    import subprocess

    def blocked(*args: object, **kwargs: object) -> NoReturn:
        _deny("starting a process")

    for name in ("fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp", "execv", "execve"):
        if hasattr(os, name):
            setattr(os, name, blocked)
    _posixsubprocess.fork_exec = blocked
    if hasattr(subprocess, "_fork_exec"):
        subprocess._fork_exec = blocked


def _write_status(path: str, status: dict[str, object]) -> None:
    try:
        with _real_open(path, "w", encoding="utf-8") as handle:
            json.dump(status, handle)
    except Exception:  # nothing more we can do; the parent classifies by exit code
        pass


def _run(config: dict[str, object], network: str) -> int:
    with _real_open(str(config["solution_path"]), encoding="utf-8", errors="replace") as handle:
        solution = handle.read()
    test_path = config.get("test_path")
    test = None
    if isinstance(test_path, str):
        with _real_open(test_path, encoding="utf-8", errors="replace") as handle:
            test = handle.read()
    namespace: dict[str, object] = {
        "__name__": "__main__",
        "__builtins__": builtins,
        "__file__": "solution.py",
    }
    status: dict[str, object] = {"outcome": "ok", "phase": "solution", "error_type": "", "network": network}
    code = EXIT_OK
    try:
        exec(compile(solution, "solution.py", "exec"), namespace)
        if test is not None:
            status["phase"] = "test"
            exec(compile(test, "test.py", "exec"), namespace)
        status["phase"] = "done"
    except SystemExit as exc:
        if exc.code not in (None, 0):
            status.update(outcome="exit", error_type=f"SystemExit({exc.code!r})")
            code = EXIT_ERROR
    except MemoryError:
        namespace.clear()
        status.update(outcome="memory", error_type="MemoryError")
        code = EXIT_MEMORY
    except BaseException as exc:
        namespace.clear()
        kind = "violation" if isinstance(exc, SandboxViolation) else "error"
        status.update(outcome=kind, error_type=type(exc).__name__)
        code = EXIT_ERROR
        try:
            import traceback

            # Drop this bootstrap's own frame so the traceback starts in the solution.
            tb = exc.__traceback__
            traceback.print_exception(type(exc), exc, tb.tb_next if tb is not None else None)
        except BaseException:  # printing must not mask the outcome
            pass
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # the parent may have stopped reading (output limit)
            stream.flush()
    status["violations"] = list(_violations)
    _write_status(str(config["status_path"]), status)
    return code


def main() -> NoReturn:
    config: dict[str, object] = json.loads(sys.argv[1])
    network = _unshare_network() if config.get("isolate_network") else "python_guard"
    _apply_limits(config)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(encoding="utf-8", errors="backslashreplace")
    if isinstance(sys.stdin, io.TextIOWrapper):
        sys.stdin.reconfigure(encoding="utf-8", errors="replace")
    builtins.exit = builtins.quit = sys.exit  # type: ignore[assignment]  # -S skips site, which defines them
    sys.argv = ["solution.py"]
    _install_network_guard()
    _install_file_guard(str(config["workdir"]))
    if not config.get("allow_subprocess"):
        _install_process_guard()
    os._exit(_run(config, network))


if __name__ == "__main__":
    main()
