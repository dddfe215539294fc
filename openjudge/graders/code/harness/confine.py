"""Kernel-enforced limits the sandbox child puts on itself before the solution runs.

Standard library only (``ctypes`` for ``prctl``). Three layers, each applied in every
backend:

* resource limits (``setrlimit``): address space, CPU time, file size, no core files,
  and the number of processes;
* a seccomp filter (Linux x86-64 and AArch64) that makes the kernel refuse, with an
  error the program sees, what a solution never needs: starting processes (unless
  allowed), signalling any process but itself, ``ptrace`` and reading other processes'
  memory, new namespaces and mounts, and sockets other than ``AF_UNIX``; plus a few
  kernel interfaces with a history of exploits (``bpf``, ``perf_event_open``,
  ``userfaultfd``, ``io_uring``, key rings);
* ``PR_SET_NO_NEW_PRIVS``, so no set-uid program can regain privileges.

The filter is inherited by every thread and (when allowed) every child, and cannot be
removed by the code it confines.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import struct
import sys

__all__ = [
    "apply_rlimits",
    "build_filter",
    "clear_capabilities",
    "drop_bounding_set",
    "install_seccomp",
    "seccomp_supported",
]

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_PR_CAPBSET_DROP = 24
_SECCOMP_MODE_FILTER = 2
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
_CLONE_THREAD = 0x00010000
_AF_UNIX = 1
_LAST_CAP = 63

# BPF opcodes: load word at absolute offset; jumps on equal / bits set / >=; return constant.
_LD_ABS = 0x20
_JEQ = 0x15
_JSET = 0x45
_JGE = 0x35
_RET = 0x06
# Offsets in struct seccomp_data: nr, arch, instruction pointer, args[6] (64-bit each).
_NR, _ARCH, _ARG0 = 0, 4, 16

# fmt: off
_SYSCALLS: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "fork": 57, "vfork": 58, "clone": 56, "clone3": 435, "kill": 62, "tkill": 200,
            "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "pidfd_open": 434,
            "pidfd_send_signal": 424, "pidfd_getfd": 438, "ptrace": 101, "process_vm_readv": 310,
            "process_vm_writev": 311, "unshare": 272, "setns": 308, "mount": 165, "umount2": 166,
            "pivot_root": 155, "chroot": 161, "socket": 41, "bpf": 321, "perf_event_open": 298,
            "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
            "io_uring_register": 427, "keyctl": 250, "add_key": 248, "request_key": 249,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "clone": 220, "clone3": 435, "kill": 129, "tkill": 130, "tgkill": 131,
            "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240, "pidfd_open": 434,
            "pidfd_send_signal": 424, "pidfd_getfd": 438, "ptrace": 117, "process_vm_readv": 270,
            "process_vm_writev": 271, "unshare": 97, "setns": 268, "mount": 40, "umount2": 39,
            "pivot_root": 41, "chroot": 51, "socket": 198, "bpf": 280, "perf_event_open": 241,
            "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426,
            "io_uring_register": 427, "keyctl": 219, "add_key": 217, "request_key": 218,
        },
    ),
}
_DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "unshare", "setns", "mount", "umount2",
    "pivot_root", "chroot", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "keyctl", "add_key", "request_key", "pidfd_open",
    "pidfd_send_signal", "pidfd_getfd", "tkill",
)
# fmt: on


def apply_rlimits(limits: dict[str, object]) -> None:
    """Set the limits in ``limits`` (``memory_bytes``, ``cpu_s``, ``file_size_bytes``, ``processes``)."""
    for key, kind, slack in (
        ("memory_bytes", resource.RLIMIT_AS, 0),
        ("cpu_s", resource.RLIMIT_CPU, 1),  # soft: SIGXCPU; hard one second later: SIGKILL
        ("file_size_bytes", resource.RLIMIT_FSIZE, 0),
        ("processes", resource.RLIMIT_NPROC, 0),
    ):
        value = limits.get(key)
        if isinstance(value, int) and value > 0:
            _set_limit(kind, value, value + slack)
    _set_limit(resource.RLIMIT_CORE, 0, 0)


def _set_limit(kind: int, soft: int, hard: int) -> None:
    _, current_hard = resource.getrlimit(kind)
    if current_hard != resource.RLIM_INFINITY:
        hard = min(hard, current_hard)
        soft = min(soft, hard)
    resource.setrlimit(kind, (soft, hard))


def seccomp_supported() -> bool:
    """Whether this machine's architecture has a filter table here."""
    return os.uname().machine in _SYSCALLS


class _Program:
    """A tiny classic-BPF assembler with forward labels."""

    def __init__(self) -> None:
        self.code: list[tuple[int, int | str, int | str, int]] = []
        self.labels: dict[str, int] = {}

    def op(self, code: int, k: int, jt: int | str = 0, jf: int | str = 0) -> None:
        self.code.append((code, jt, jf, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def assemble(self) -> bytes:
        out = bytearray()
        for i, (code, jt, jf, k) in enumerate(self.code):
            offsets = [self.labels[j] - i - 1 if isinstance(j, str) else j for j in (jt, jf)]
            if any(not 0 <= o <= 255 for o in offsets):
                raise ValueError("seccomp program jump out of range")
            out += struct.pack("=HBBI", code, offsets[0], offsets[1], k & 0xFFFFFFFF)
        return bytes(out)


def build_filter(machine: str, *, pid: int, allow_processes: bool) -> bytes:
    """The seccomp program for ``machine`` (``os.uname().machine``) as raw ``sock_filter`` bytes."""
    arch, numbers = _SYSCALLS[machine]
    deny = _RET_ERRNO | errno.EPERM
    p = _Program()
    p.op(_LD_ABS, _ARCH)
    p.op(_JEQ, arch, "arch_ok", 0)
    p.op(_RET, _RET_KILL_PROCESS)
    p.label("arch_ok")
    p.op(_LD_ABS, _NR)
    if machine == "x86_64":
        p.op(_JGE, 0x40000000, "deny", 0)  # the x32 ABI: same calls under other numbers
    for name in _DENIED:
        p.op(_JEQ, numbers[name], "deny", 0)
    p.op(_JEQ, numbers["socket"], "socket", 0)
    p.op(_JEQ, numbers["clone3"], "nosys", 0)  # its flags sit behind a pointer; libc falls back to clone
    if not allow_processes:
        for name in ("fork", "vfork"):
            if name in numbers:
                p.op(_JEQ, numbers[name], "deny", 0)
        p.op(_JEQ, numbers["clone"], "clone", 0)
        for name in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
            p.op(_JEQ, numbers[name], "own_pid", 0)
    p.op(_RET, _RET_ALLOW)
    p.label("socket")  # only AF_UNIX: socketpair() and asyncio's self-pipe, never a network
    p.op(_LD_ABS, _ARG0)
    p.op(_JEQ, _AF_UNIX, "allow", 0)
    p.op(_RET, _RET_ERRNO | errno.EACCES)
    if not allow_processes:
        p.label("clone")  # threads yes, processes no
        p.op(_LD_ABS, _ARG0)
        p.op(_JSET, _CLONE_THREAD, "allow", "deny")
        p.label("own_pid")  # signals to itself (pid) or its own process group (0)
        p.op(_LD_ABS, _ARG0)
        p.op(_JEQ, pid, "allow", 0)
        p.op(_JEQ, 0, "allow", "deny")
    p.label("allow")
    p.op(_RET, _RET_ALLOW)
    p.label("nosys")
    p.op(_RET, _RET_ERRNO | errno.ENOSYS)
    p.label("deny")
    p.op(_RET, deny)
    return p.assemble()


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]  # ctypes protocol


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def install_seccomp(*, allow_processes: bool) -> bool:
    """Set ``no_new_privs`` and install the filter; False if this system has no table (not Linux x86-64/AArch64).

    Raises:
        OSError: The kernel refused (the sandbox must not run unconfined).
    """
    if sys.platform != "linux":  # no prctl: the process backend then runs with rlimits only
        return False
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    machine = os.uname().machine
    if machine not in _SYSCALLS:
        return False
    program = build_filter(machine, pid=os.getpid(), allow_processes=allow_processes)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
    return True


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]  # ctypes protocol


class _CapData(ctypes.Structure):
    _fields_ = [  # ctypes protocol
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_bounding_set() -> None:
    """Empty the capability bounding set (needs ``CAP_SETPCAP``; without it this does nothing)."""
    libc = _libc()
    for cap in range(_LAST_CAP + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the kernel's last cap: fine


def clear_capabilities() -> None:
    """Empty the effective, permitted and inheritable capability sets.

    Raises:
        OSError: ``capset`` failed.
    """
    libc = _libc()
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
