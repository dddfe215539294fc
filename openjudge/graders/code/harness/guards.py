"""Python-level refusal of writes outside the work directory, for the ``process`` backend only.

The namespace backends make everything outside the work directory read-only in the
kernel. The ``process`` backend has no mount namespace, so these patches of ``open``,
``os.open``, ``os.remove`` ... refuse such writes from ordinary Python code. They are a
guard against accidents, not a boundary: ``ctypes``, ``_io.FileIO``, ``posix`` and
``sqlite3`` bypass them.
"""

from __future__ import annotations

import builtins
import io
import os

TYPE_CHECKING = False  # typing costs start-up time in the sandbox; mypy reads this name as True
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

__all__ = ["SandboxViolation", "install_file_guard"]

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


class SandboxViolation(PermissionError):
    """Raised when sandboxed code attempts something the sandbox forbids."""


def install_file_guard(workdir: str, report: Callable[[str], None]) -> None:
    """Refuse writes that resolve outside ``workdir``; ``report`` hears of each refusal."""
    root = os.path.realpath(workdir)
    real_open = builtins.open
    real_os_open = os.open

    def deny(what: str) -> NoReturn:
        report(what)
        raise SandboxViolation(f"openjudge sandbox: {what} is not allowed")

    def check(path: object, action: str, dir_fd: int | None = None) -> None:
        if isinstance(path, int):
            return
        raw = os.fsdecode(os.fspath(path))  # type: ignore[call-overload]  # str/bytes/PathLike, checked by fspath
        if dir_fd is not None and not os.path.isabs(raw):
            raw = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), raw)
        if raw in _DEVICES:
            return
        real = os.path.realpath(raw)
        if real != root and not real.startswith(root + os.sep):
            deny(f"{action} {raw!r} (outside the sandbox directory)")

    def guarded_open(file: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        if any(flag in str(mode) for flag in "wax+"):
            check(file, "writing")
        return real_open(file, mode, *args, **kwargs)  # type: ignore[call-overload]  # open()'s own signature

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
    real_symlink = os.symlink

    def guarded_symlink(src: object, dst: object, *args: object, **kwargs: object) -> None:
        check(dst, "creating a link at")
        real_symlink(src, dst, *args, **kwargs)  # type: ignore[arg-type]  # same as os.symlink

    os.symlink = guarded_symlink
