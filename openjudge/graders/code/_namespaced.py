"""The namespace backends: ``bwrap`` (bubblewrap) and ``unshare`` (the harness's own system calls).

Both show the child the same file system: an empty read-only root holding read-only
binds of ``/usr`` (and the ``/bin``, ``/lib*`` links or directories), the interpreter's
prefix with its ``site-packages`` covered by an empty directory (unless
``site_packages``), ``/etc/ld.so.cache``, a fresh ``/proc`` of the new PID namespace, a
minimal ``/dev``, and one writable size-limited tmpfs, ``/sandbox/work`` (also ``/tmp``,
``HOME`` and the working directory). When the interpreter, its virtual environment or an
importable project lives under ``/tmp`` (as on CI runners and in containers), ``/tmp`` is
instead a separate size-limited tmpfs holding those read-only mount points. Nothing of
``/home``, ``/root``, ``/etc``, ``/work``, the grader's files or its environment is visible.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from openjudge.graders.code._local import HARNESS_DIR, Launch, LocalBackend, boot_command, child_env
from openjudge.graders.code._sandbox import SandboxLimits

__all__ = ["BwrapBackend", "FileSystemView", "UnshareBackend", "file_system_view"]

WORK = "/sandbox/work"
_HARNESS_MOUNT = "/sandbox/harness"
_TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


@dataclass(frozen=True, slots=True)
class FileSystemView:
    """What the child sees: read-only binds, symlinks, and directories hidden under an empty tmpfs."""

    python: str
    binds: tuple[tuple[str, str], ...]
    symlinks: tuple[tuple[str, str], ...]
    hide: tuple[str, ...]

    @property
    def tmp_holds_mounts(self) -> bool:
        """Whether something is mounted under ``/tmp`` (an interpreter, a virtual environment or a
        project there): ``/tmp`` is then a directory (a size-limited tmpfs holding those mount
        points), not a link to the work directory."""
        return any(_inside(path, ["/tmp"]) for path in (*(t for _, t in self.binds), *self.hide))


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def file_system_view(limits: SandboxLimits) -> FileSystemView:
    """The view for ``limits`` on this machine (interpreter paths resolved, symlinks kept)."""
    return _view(limits.site_packages, tuple(sys.path))


def _package_dirs() -> set[str]:
    """Where installed packages live for this interpreter, its base and the OS.

    A grader in a virtual environment runs the base interpreter's binary in the sandbox,
    and that binary finds the base prefix's site-packages (and, on Debian, the system's
    dist-packages) whether or not the grader's own ``sys.path`` lists them.
    """
    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
    dirs = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    dirs |= {sysconfig.get_paths(vars=base)[key] for key in ("purelib", "platlib")}
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for root in ("/usr/lib", "/usr/local/lib"):
        dirs |= {
            f"{root}/python3/dist-packages",
            f"{root}/{version}/dist-packages",
            f"{root}/{version}/site-packages",
        }
    return dirs


@functools.lru_cache(maxsize=8)
def _view(site_packages: bool, sys_path: tuple[str, ...]) -> FileSystemView:
    python = os.path.realpath(sys.executable)
    binds: list[tuple[str, str]] = [("/usr", "/usr")]
    symlinks: list[tuple[str, str]] = []
    for path in _TOP_LEVEL:
        if os.path.islink(path):
            symlinks.append((os.readlink(path), path))
        elif os.path.isdir(path):
            binds.append((path, path))
    if os.path.isfile("/etc/ld.so.cache"):
        binds.append(("/etc/ld.so.cache", "/etc/ld.so.cache"))
    roots = [target for _, target in binds]
    prefix = os.path.realpath(sys.base_prefix)
    for tree in (prefix, os.path.dirname(os.path.dirname(python))):
        if not _inside(tree, roots):
            binds.append((tree, tree))
            roots.append(tree)
    hide: list[str] = []
    if site_packages:
        for entry in sys_path:
            real = os.path.realpath(entry) if entry else ""
            if real and os.path.isdir(real) and not _inside(real, roots):
                binds.append((real, real))
                roots.append(real)
    else:
        candidates = {*_package_dirs(), *sys_path}
        for entry in sorted(candidates):
            real = os.path.realpath(entry) if entry else ""
            packages = os.path.basename(real) in ("site-packages", "dist-packages") and os.path.isdir(real)
            if packages and _inside(real, roots) and real not in hide:
                hide.append(real)
    return FileSystemView(python, tuple(binds), tuple(symlinks), tuple(hide))


class BwrapBackend(LocalBackend):
    """Bubblewrap (``bwrap`` from the OS packages) builds the namespaces and the file-system view.

    When the grader runs as root, bubblewrap maps the sandbox user to root's uid
    outside, so ``RLIMIT_NPROC`` does not bind (the kernel exempts root); processes are
    then refused by the seccomp filter unless ``allow_subprocess``, and with it only
    the time limit bounds how many there are. Prefer ``unshare`` there if you allow
    subprocesses.
    """

    name = "bwrap"
    signal_in_status = True

    def __init__(self, *, executable: str = "bwrap", work_root: str | None = None) -> None:
        super().__init__(work_root=work_root)
        self.executable = executable

    def launch(self, config: dict[str, object], limits: SandboxLimits) -> Launch:
        view = file_system_view(limits)
        config.update(isolation="bwrap", workdir=WORK)
        argv = [
            shutil.which(self.executable) or self.executable,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--uid", "65534", "--gid", "65534",
            "--hostname", "sandbox",
            "--clearenv",
        ]  # fmt: skip
        for key, value in child_env(WORK).items():
            argv += ["--setenv", key, value]
        size = str(limits.work_dir_mb * 1024 * 1024)
        if view.tmp_holds_mounts:  # the mount points under /tmp need a directory there, made first
            argv += ["--size", size, "--tmpfs", "/tmp"]
        for source, target in view.binds:
            argv += ["--ro-bind", source, target]
        for target, link in view.symlinks:
            argv += ["--symlink", target, link]
        for target in view.hide:
            argv += ["--tmpfs", target, "--remount-ro", target]
        argv += ["--ro-bind", str(HARNESS_DIR), _HARNESS_MOUNT, "--proc", "/proc", "--dev", "/dev"]
        argv += ["--size", size, "--tmpfs", WORK]
        if not view.tmp_holds_mounts:
            argv += ["--symlink", WORK, "/tmp"]
        argv += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", WORK]
        argv += boot_command(view.python, os.path.dirname(_HARNESS_MOUNT), config)
        return Launch(argv=argv, cwd="/", env=child_env(WORK))


class UnshareBackend(LocalBackend):
    """The harness enters new namespaces itself (:mod:`openjudge.graders.code.harness.namespaces`).

    Needs user namespaces (or root). The new root is built on an empty directory under
    ``work_root`` that is removed after the run.
    """

    name = "unshare"
    signal_in_status = True

    def launch(self, config: dict[str, object], limits: SandboxLimits) -> Launch:
        view = file_system_view(limits)
        run_dir = Path(tempfile.mkdtemp(prefix="openjudge-ns-", dir=self.work_root))
        root = run_dir / "root"
        root.mkdir()
        config.update(
            isolation="unshare",
            workdir=WORK,
            parent_pid=os.getpid(),
            namespaces={
                "root": str(root),
                "binds": [list(pair) for pair in view.binds],
                "symlinks": [list(pair) for pair in view.symlinks],
                "hide": list(view.hide),
                "work": WORK,
                "work_bytes": limits.work_dir_mb * 1024 * 1024,
                "tmp_dir": view.tmp_holds_mounts,
                "hostname": "sandbox",
            },
        )
        return Launch(argv=None, cwd="/", env=child_env(WORK), cleanup=[run_dir])
