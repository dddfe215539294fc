"""The ``unshare`` backend's isolation, built with system calls (standard library and ``ctypes`` only).

:func:`enter` turns the calling process into a small tree and returns only in the last
process, which then runs the solution:

1. *outer* (started by the grader) forks *holder*, which calls ``unshare`` for new user,
   mount, PID, network, IPC, UTS and cgroup namespaces; outer, still in the parent user
   namespace, writes holder's uid/gid maps (so when the grader runs as root, the sandbox
   user is the unprivileged ``nobody`` of the host, and ``RLIMIT_NPROC`` binds);
2. holder forks *init* (PID 1 of the new PID namespace), which builds a new root: an empty
   read-only tmpfs with read-only binds of the interpreter and system libraries, a fresh
   ``/proc`` for the new PID namespace, a few device nodes, and a size-limited tmpfs work
   directory; then ``pivot_root`` into it and detaches the old root;
3. init forks *runner* (PID 2), which drops to the sandbox user and every capability and
   returns to the harness. When runner exits, init exits, and the kernel kills whatever
   is left in the PID namespace; each process dies with its parent (``PR_SET_PDEATHSIG``).

Exit statuses travel up unchanged; a death by signal N becomes exit status 128 + N. Init
reports the runner's status to outer on a pipe of their own (the runner closes its copy
first), so outer exits with it without waiting for the namespaces' teardown.
"""

from __future__ import annotations

import ctypes
import os
import sys

from . import confine

TYPE_CHECKING = False  # typing costs start-up time in the sandbox; mypy reads this name as True
if TYPE_CHECKING:
    from typing import NoReturn

__all__ = ["EXIT_SETUP", "enter", "exit_status"]

EXIT_SETUP = 70
_NEW_NAMESPACES = 0x10000000 | 0x00020000 | 0x20000000 | 0x40000000 | 0x08000000 | 0x04000000
_NEWCGROUP = 0x02000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MNT_DETACH = 2
_PR_SET_PDEATHSIG = 1
_SIGKILL = 9
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
# statvfs flag -> mount flag: the flags a bind mount inherited must be kept on remount.
_KEPT_FLAGS = ((os.ST_NOSUID, _MS_NOSUID), (os.ST_NODEV, _MS_NODEV), (os.ST_NOEXEC, _MS_NOEXEC),
               (os.ST_NOATIME, 1024), (os.ST_NODIRATIME, 2048), (os.ST_RELATIME, 1 << 21))  # fmt: skip
_DEVICES = ("null", "zero", "full", "random", "urandom")
SANDBOX_ID = 65534


class _Libc:
    def __init__(self) -> None:
        self.lib = ctypes.CDLL(None, use_errno=True)
        self.lib.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]

    def check(self, result: int, what: str) -> None:
        if result != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"{what}: {os.strerror(error)}")

    def mount(self, source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
        encoded = [None if s is None else os.fsencode(s) for s in (source, target, fstype)]
        self.check(self.lib.mount(*encoded, flags, data.encode() or None), f"mount {target}")

    def die_with_parent(self, parent: int) -> None:
        self.lib.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request took effect
            _fail("the parent process is gone")


def exit_status(status: int) -> int:
    """A ``waitpid`` status as an exit code: the code itself, or 128 + N for a death by signal N."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


def _wait_exit(pid: int) -> NoReturn:
    _, status = os.waitpid(pid, 0)
    os._exit(exit_status(status))


def _fail(message: str) -> NoReturn:
    os.write(2, f"openjudge sandbox setup failed: {message}\n".encode(errors="replace"))
    os._exit(EXIT_SETUP)


def enter(spec: dict[str, object]) -> None:
    """Isolate the process; returns only in the sandboxed runner (see the module docstring).

    ``spec`` keys: ``root`` (an empty host directory to build the new root on), ``binds``
    (``[source, target]`` pairs mounted read-only), ``symlinks`` (``[target, link]``), ``hide`` (targets covered by an empty
    read-only tmpfs), ``work`` (the writable directory), ``work_bytes`` (its size),
    ``hostname``.
    """
    libc = _Libc()
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    done_r, done_w = os.pipe()
    outer = os.getpid()
    holder = os.fork()
    if holder == 0:
        os.close(ready_r)
        os.close(go_w)
        os.close(done_r)
        try:
            libc.die_with_parent(outer)
            flags = _NEW_NAMESPACES
            if libc.lib.unshare(flags | _NEWCGROUP) != 0:
                libc.check(libc.lib.unshare(flags), "unshare")
        except OSError as exc:
            _fail(str(exc))
        os.write(ready_w, b"u")
        os.close(ready_w)
        if os.read(go_r, 1) != b"g":
            _fail("the uid map was not written")
        os.close(go_r)
        _start_init(spec, libc, done_w)
        return
    os.close(ready_w)
    os.close(go_r)
    os.close(done_w)
    if os.read(ready_r, 1) != b"u":
        _wait_exit(holder)
    try:
        _write_maps(holder)
    except OSError as exc:
        _fail(f"writing the uid map: {exc}")
    os.write(go_w, b"g")
    os.close(go_w)
    _exit_with_runner(done_r, holder)


def _exit_with_runner(done: int, holder: int) -> NoReturn:
    """Exit with the runner's status as soon as init reports it.

    The namespaces are then still being taken down (the kernel unmounts the tree and frees
    the network namespace when their last process is gone): that need not delay the run's
    result, and the fork server that started this process reaps the holder. No process of
    the sandbox is left by then: init reports only after the runner ended, and its own exit
    kills the rest of the PID namespace. Without a report (the sandbox failed before the
    runner existed), the holder's exit status says why.
    """
    report = b""
    while len(report) < 4:
        chunk = os.read(done, 4 - len(report))
        if not chunk:
            _wait_exit(holder)
        report += chunk
    os._exit(int.from_bytes(report, "little"))


def _write_maps(child: int) -> None:
    uid, gid = os.getuid(), os.getgid()
    if uid == 0:
        # Root maps itself (to build the root) and the host's nobody, which the runner becomes.
        maps = (f"0 0 1\n{SANDBOX_ID} {SANDBOX_ID} 1\n", f"0 0 1\n{SANDBOX_ID} {SANDBOX_ID} 1\n")
    else:
        with open(f"/proc/{child}/setgroups", "w") as handle:
            handle.write("deny")  # required before an unprivileged gid_map
        maps = (f"{SANDBOX_ID} {uid} 1\n", f"{SANDBOX_ID} {gid} 1\n")
    for name, text in zip(("uid_map", "gid_map"), maps, strict=True):
        with open(f"/proc/{child}/{name}", "w") as handle:
            handle.write(text)


def _start_init(spec: dict[str, object], libc: _Libc, done: int) -> None:
    init = os.fork()
    if init != 0:
        os.close(done)  # only init reports: the pipe ends when init does
        _wait_exit(init)
    try:
        libc.die_with_parent(0)  # the holder is outside the new PID namespace: getppid() says 0
        _build_root(spec, libc)
    except (OSError, ValueError) as exc:
        _fail(str(exc))
    runner = os.fork()
    if runner == 0:
        os.close(done)  # the solution must not be able to report its own exit status
        try:
            libc.die_with_parent(1)
            os.setsid()
            _become_sandbox_user()
            os.chdir(str(spec["work"]))
        except OSError as exc:
            _fail(str(exc))
        return
    while True:  # init: reap orphans until the runner ends, then take the namespace down
        pid, status = os.wait()
        if pid == runner:
            code = exit_status(status)
            os.write(done, code.to_bytes(4, "little"))
            os._exit(code)


def _become_sandbox_user() -> None:
    confine.drop_bounding_set()  # needs CAP_SETPCAP, so before the uid changes
    if os.getuid() == 0:
        os.setgroups([])
        os.setresgid(SANDBOX_ID, SANDBOX_ID, SANDBOX_ID)
        os.setresuid(SANDBOX_ID, SANDBOX_ID, SANDBOX_ID)
    confine.clear_capabilities()


def _remount_read_only(libc: _Libc, target: str) -> None:
    flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV
    current = os.statvfs(target).f_flag
    for statvfs_flag, mount_flag in _KEPT_FLAGS:
        if current & statvfs_flag:
            flags |= mount_flag
    libc.mount(None, target, None, flags)


def _build_root(spec: dict[str, object], libc: _Libc) -> None:
    root = str(spec["root"])
    libc.mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing below propagates to the host
    libc.mount("tmpfs", root, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755,size=1m")
    size = int(str(spec["work_bytes"]))
    tmp_dir = spec.get("tmp_dir") is True
    if tmp_dir:  # mounts under /tmp (an interpreter or venv there): /tmp is a directory, made first
        os.makedirs(root + "/tmp")
        libc.mount("tmpfs", root + "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=1777,size={size}")
    binds = spec.get("binds")
    for pair in binds if isinstance(binds, list) else []:
        source, target = str(pair[0]), root + str(pair[1])
        if os.path.isdir(source):
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            open(target, "a").close()  # a mount point for a file bind
        libc.mount(source, target, None, _MS_BIND | _MS_REC)
        _remount_read_only(libc, target)
    symlinks = spec.get("symlinks")
    for pair in symlinks if isinstance(symlinks, list) else []:
        os.symlink(str(pair[0]), root + str(pair[1]))
    hide = spec.get("hide")
    for target in hide if isinstance(hide, list) else []:
        libc.mount("tmpfs", root + str(target), "tmpfs", _MS_RDONLY | _MS_NOSUID | _MS_NODEV, "size=4k")
    os.makedirs(root + "/dev")
    for name in _DEVICES:
        node = f"{root}/dev/{name}"
        open(node, "a").close()  # device nodes cannot be made in a user namespace: bind them
        libc.mount(f"/dev/{name}", node, None, _MS_BIND)
    for link, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):  # fmt: skip
        os.symlink(target, f"{root}/dev/{link}")
    os.makedirs(root + "/proc")
    libc.mount("proc", root + "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    work = str(spec["work"])
    os.makedirs(root + work)
    libc.mount("tmpfs", root + work, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=1777,size={size}")
    if not tmp_dir:
        os.symlink(work, root + "/tmp")
    number = _SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"pivot_root is not known on {os.uname().machine}")
    os.chdir(root)
    libc.check(libc.lib.syscall(number, b".", b"."), "pivot_root")  # new root on top of the old
    libc.check(libc.lib.umount2(b".", _MNT_DETACH), "detaching the old root")
    os.chdir("/")
    libc.mount(None, "/", None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    hostname = str(spec.get("hostname", "sandbox")).encode()
    libc.check(libc.lib.sethostname(hostname, len(hostname)), "sethostname")
    sys.path_importer_cache.clear()  # cached finders point at paths of the old root
