"""The seccomp program the sandbox child installs: well-formed, and what it lets through."""

from __future__ import annotations

import struct

import pytest

from openjudge.graders.code.harness.confine import build_filter

RET = 0x06
ALLOW, KILL = 0x7FFF0000, 0x80000000


def run_filter(program: bytes, nr: int, arch: int, arg0: int = 0) -> int:
    """A tiny classic-BPF interpreter for the opcodes the filter uses."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    code = [struct.unpack_from("=HBBI", program, i) for i in range(0, len(program), 8)]
    pc, acc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif op == RET:
            return int(k)
        else:
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[op]
            pc += 1 + (jt if taken else jf)


X86 = 0xC000003E


@pytest.mark.parametrize(
    ("nr", "arg0", "allowed"),
    [
        (0, 0, True),  # read
        (57, 0, False),  # fork
        (58, 0, False),  # vfork
        (56, 0x00010000 | 0x100, True),  # clone of a thread
        (56, 0x4111, False),  # clone of a process
        (56, 0x00010000 | 0x10000000, False),  # a thread in a new user namespace
        (62, 4242, True),  # kill(own pid)
        (62, 0, True),  # kill(own process group)
        (62, 1, False),  # kill(init / parent)
        (62, 0xFFFFFFFF, False),  # kill(-1)
        (234, 4242, True),  # tgkill(own pid, ...)
        (101, 0, False),  # ptrace
        (41, 1, True),  # socket(AF_UNIX)
        (41, 2, False),  # socket(AF_INET)
        (272, 0, False),  # unshare
        (0x40000000 + 57, 0, False),  # an x32 system call
    ],
)
def test_x86_64_filter_without_processes(nr: int, arg0: int, allowed: bool) -> None:
    program = build_filter("x86_64", pid=4242, allow_processes=False)
    assert (run_filter(program, nr, X86, arg0) == ALLOW) is allowed


def test_allowing_processes_keeps_the_rest() -> None:
    program = build_filter("x86_64", pid=4242, allow_processes=True)
    assert run_filter(program, 57, X86) == ALLOW
    assert run_filter(program, 62, X86, 1) == ALLOW
    assert run_filter(program, 101, X86) != ALLOW
    assert run_filter(program, 435, X86) == 0x00050000 | 38  # clone3: ENOSYS, so libc falls back to clone
    assert run_filter(program, 56, X86, 0x01200011) == ALLOW  # clone of a process, as fork() does it


@pytest.mark.parametrize(
    "flag", [0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000]
)
def test_no_clone_makes_a_namespace_even_with_processes(flag: int) -> None:
    program = build_filter("x86_64", pid=4242, allow_processes=True)
    assert run_filter(program, 56, X86, 0x01200011 | flag) == 0x00050000 | 1  # EPERM, as for unshare


def test_a_foreign_architecture_is_killed() -> None:
    program = build_filter("aarch64", pid=1, allow_processes=False)
    assert run_filter(program, 0, X86) == KILL
    assert run_filter(program, 220, 0xC00000B7, 0x4111) != ALLOW  # aarch64 clone of a process
    assert run_filter(program, 63, 0xC00000B7) == ALLOW  # aarch64 read
