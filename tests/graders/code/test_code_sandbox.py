"""The local sandbox backends: what the child reports, limits, isolation, cleanup (each backend in turn)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from openjudge.graders.code import (
    FunctionCall,
    SandboxError,
    SandboxJob,
    SandboxLimits,
    SandboxRun,
    sandbox_backend,
)
from openjudge.graders.code._namespaced import BwrapBackend
from openjudge.graders.code.harness.values import Opaque, decode

from ._support import is_running, processes_mentioning

pytestmark = pytest.mark.anyio


async def run(backend: str, code: str, limits: SandboxLimits | None = None, **job: object) -> SandboxRun:
    return await sandbox_backend(backend).run(SandboxJob(code, **job), limits or SandboxLimits())  # type: ignore[arg-type]  # names and job fields checked by the tests


async def test_stdin_stdout_and_unicode(backend_name: str) -> None:
    result = await run(backend_name, "import sys\nprint(sys.stdin.read().upper(), '北京👍')", stdin="héllo")
    assert (result.outcome, result.stdout, result.returncode, result.backend) == (
        "ok",
        "HÉLLO 北京👍\n",
        0,
        backend_name,
    )


async def test_calls_come_back_as_plain_data(backend_name: str) -> None:
    code = (
        "class Eq:\n    def __eq__(self, other): return True\n"
        "def values(n): return [n, (n, 'x'), {n}, {'k': None}, 2 ** 100, float('nan'), b'ab', Eq()]\n"
        "def boom(): raise KeyError('k')\n"
        "class Solution:\n    def twice(self, n): return 2 * n\n"
    )
    calls = (
        FunctionCall("values", (3,)),
        FunctionCall("boom"),
        FunctionCall("twice", (), {"n": 4}),
        FunctionCall("nope"),
    )
    result = await run(backend_name, code, calls=calls)
    assert result.outcome == "ok"
    first, boom, twice, missing = result.calls
    assert first is not None and first.ok
    decoded = decode(first.value)
    assert isinstance(decoded, list)
    assert decoded[:5] == [3, (3, "x"), frozenset({3}), {"k": None}, 2**100]
    assert decoded[5] != decoded[5] and decoded[6] == b"ab"  # nan, bytes
    assert (
        isinstance(decoded[7], Opaque) and decoded[7] != decoded[7]
    )  # the always-equal object equals nothing
    assert (boom is not None, boom and boom.ok, boom and boom.error) == (True, False, "KeyError")
    assert twice is not None and decode(twice.value) == 8
    assert missing is not None and (missing.ok, missing.error) == (False, "NameError")
    assert "KeyError: 'k'" in result.stderr


async def test_test_code_runs_in_the_verifier(backend_name: str) -> None:
    ok = await run(backend_name, "def add(a, b):\n    return a + b", test_code="assert add(2, 3) == 5")
    assert (ok.outcome, ok.test_passed, ok.test_isolated) == ("ok", True, True)
    bad = await run(backend_name, "def add(a, b):\n    return a - b", test_code="assert add(2, 3) == 5")
    assert (bad.outcome, bad.test_passed, bad.test_error) == ("ok", False, "AssertionError")
    assert 'File "test.py", line 1' in bad.stderr and "harness" not in bad.stderr


async def test_exits_and_errors(backend_name: str) -> None:
    clean_exit = await run(backend_name, "import sys\nsys.exit(0)", test_code="assert True")
    assert (clean_exit.outcome, clean_exit.test_passed) == ("ok", True)  # the test still runs
    hard_exit = await run(backend_name, "import os\nos._exit(0)", test_code="assert True")
    assert (hard_exit.outcome, hard_exit.test_passed) == ("ok", False)  # the verifier never heard from it
    assert hard_exit.test_error == "the solution did not run to the end"
    failing = await run(backend_name, "exit(3)")
    assert (failing.outcome, failing.error_type) == ("exit", "SystemExit(3)")
    crash = await run(backend_name, "1 / 0")
    assert (crash.outcome, crash.error_type) == ("error", "ZeroDivisionError")
    syntax = await run(backend_name, "def (:")
    assert (syntax.outcome, syntax.error_type) == ("error", "SyntaxError")


async def test_wall_clock_limit(backend_name: str) -> None:
    start = time.monotonic()
    result = await run(
        backend_name, "import time\nwhile True:\n    time.sleep(0.01)", SandboxLimits(timeout_s=1.0)
    )
    assert result.outcome == "timeout"
    assert 1.0 <= result.elapsed_s < 1.0 + 2.0
    assert time.monotonic() - start < 1.0 + 3.0


@pytest.mark.slow  # each backend's child burns its CPU limit (4 s each)
async def test_cpu_time_limit(backend_name: str) -> None:
    code = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass"
    result = await run(backend_name, code, SandboxLimits(timeout_s=30.0, cpu_time_s=1))
    assert result.outcome == "timeout"  # ignoring SIGXCPU only buys the second until the hard limit
    assert result.elapsed_s < 15.0


async def test_memory_limit(backend_name: str) -> None:
    result = await run(backend_name, "block = bytearray(1024 ** 3)", SandboxLimits(memory_mb=256))
    assert (result.outcome, result.error_type) == ("memory", "MemoryError")


async def test_output_limit(backend_name: str) -> None:
    result = await run(
        backend_name, "while True:\n    print('x' * 1000)", SandboxLimits(max_output_bytes=10_000)
    )
    assert result.outcome == "output_limit"
    assert len(result.stdout) == 10_000


async def test_environment_holds_no_secrets(backend_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    result = await run(backend_name, "import os\nprint(sorted(os.environ))")
    assert "OPENAI_API_KEY" not in result.stdout and "sk-secret" not in result.stdout
    assert set(eval(result.stdout)) <= {"HOME", "LANG", "LC_ALL", "PATH", "TMPDIR", "PWD"}


NETWORK = """
import ctypes, socket, struct
try:
    socket.create_connection(('127.0.0.1', {port}), timeout=2)
    print('connected')
except OSError as exc:
    print('socket', exc.errno)
libc = ctypes.CDLL(None, use_errno=True)
print('raw', libc.socket(2, 1, 0), ctypes.get_errno())
a, b = socket.socketpair()
a.sendall(b'hi')
print(b.recv(2).decode())
"""


async def test_no_network_even_through_raw_syscalls(backend_name: str) -> None:
    with anyio.fail_after(30):
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        try:
            result = await run(backend_name, NETWORK.format(port=port))
        finally:
            await listener.aclose()
    assert result.stdout.splitlines() == [
        "socket 13",
        "raw -1 13",
        "hi",
    ]  # EACCES from seccomp; AF_UNIX works


PROCESSES = """
import ctypes, os, subprocess
def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
for label, attempt in [
    ('fork', fork),
    ('subprocess', lambda: subprocess.run(['true'])),
    ('posix_spawn', lambda: os.posix_spawn('/bin/true', ['true'], {})),
]:
    try:
        attempt()
        print(label, 'allowed')
    except OSError:
        print(label, 'refused')
print('system', 'allowed' if ctypes.CDLL(None).system(b'true') == 0 else 'refused')
"""


async def test_no_new_processes_by_default(backend_name: str) -> None:
    result = await run(backend_name, PROCESSES)
    assert result.stdout.splitlines() == [
        "fork refused",
        "subprocess refused",
        "posix_spawn refused",
        "system refused",
    ]


async def test_allowed_processes_run(backend_name: str) -> None:
    result = await run(backend_name, PROCESSES, SandboxLimits(allow_subprocess=True))
    assert result.stdout.splitlines() == [
        "fork allowed",
        "subprocess allowed",
        "posix_spawn allowed",
        "system allowed",
    ]


async def test_no_signals_or_ptrace_to_other_processes(backend_name: str) -> None:
    code = """
import ctypes, os, signal
for label, target in [('parent', os.getppid()), ('everyone', -1), ('grader', {grader})]:
    try:
        os.kill(target, signal.SIGKILL)
        print(label, 'signalled')
    except OSError as exc:
        print(label, 'refused' if exc.errno in (1, 3) else exc.errno)
libc = ctypes.CDLL(None, use_errno=True)
print('ptrace', libc.ptrace(16, os.getppid(), None, None), ctypes.get_errno())
os.kill(os.getpid(), 0)
print('self ok')
""".replace("{grader}", str(os.getpid()))
    result = await run(backend_name, code)
    assert result.stdout.splitlines() == [
        "parent refused",
        "everyone refused",
        "grader refused",
        "ptrace -1 1",
        "self ok",
    ]
    assert is_running(os.getpid())


async def test_namespaces_hide_the_machine(namespaced_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    code = """
import os
print(os.getpid(), os.getuid())
for path in ['/etc/passwd', '/home', '/root/.bashrc', '/work', '/proc/1/environ']:
    try:
        data = os.listdir(path) if os.path.isdir(path) else open(path, 'rb').read()
        print(path, 'sk-secret' in str(data))
    except OSError as exc:
        print(path, type(exc).__name__)
print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))
for path in ['/usr/evil', '/tmp/../usr/evil', '/dev/shm/x', '/newfile']:
    try:
        open(path, 'w')
        print(path, 'written')
    except OSError as exc:
        print(path, exc.errno)
open('/tmp/scratch', 'w').write('fine')
print(open(os.path.expanduser('~/scratch')).read())
"""
    result = await run(namespaced_backend, code)
    lines = result.stdout.splitlines()
    assert lines[0] == "2 65534"  # PID 2 of a new PID namespace, as nobody
    assert lines[1:5] == [
        "/etc/passwd FileNotFoundError",
        "/home FileNotFoundError",
        "/root/.bashrc FileNotFoundError",
        "/work FileNotFoundError",
    ]
    assert lines[5] in ("/proc/1/environ False", "/proc/1/environ PermissionError")  # the sandbox's own init
    assert lines[6] == "[1, 2]"  # nothing of the host's processes
    assert all(line.endswith((" 30", " 2")) for line in lines[7:11])  # EROFS / ENOENT
    assert lines[11] == "fine"


async def test_allowed_subprocesses_die_with_the_run(namespaced_backend: str) -> None:
    code = (
        "import subprocess, sys, os\n"
        "child = subprocess.Popen(['/bin/sh', '-c', 'setsid sleep 60 & echo $!; wait'], stdout=subprocess.PIPE)\n"
        "print(child.stdout.readline().decode().strip(), flush=True)\n"
    )
    result = await run(namespaced_backend, code, SandboxLimits(allow_subprocess=True))
    assert result.outcome == "ok" and result.stdout.strip().isdigit()
    await anyio.sleep(0.2)
    assert processes_mentioning("sleep 60") == []  # even the setsid grandchild: the PID namespace died


async def test_process_count_is_limited(namespaced_backend: str) -> None:
    if namespaced_backend == "bwrap" and os.getuid() == 0:
        pytest.skip("bwrap keeps root's uid outside, and the kernel exempts root from RLIMIT_NPROC")
    code = (
        "import os, time\nn = 0\nfor i in range(100):\n"
        "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
        "    if pid == 0:\n        time.sleep(5)\n        os._exit(0)\n    n += 1\nprint(n)\n"
    )
    result = await run(namespaced_backend, code, SandboxLimits(allow_subprocess=True, max_processes=8))
    assert result.outcome == "ok" and int(result.stdout) < 8


async def test_process_backend_guards_writes(tmp_path: Path, backend_problems: dict[str, str | None]) -> None:
    target = tmp_path / "escaped.txt"
    code = f"import pathlib\ntry:\n    pathlib.Path({str(target)!r}).write_text('x')\nexcept PermissionError:\n    print('refused')\n"
    result = await run("process", code)
    assert result.stdout == "refused\n" and not target.exists()
    assert len(result.violations) == 1 and "outside the sandbox directory" in result.violations[0]


async def test_only_the_standard_library_by_default(backend_name: str) -> None:
    plain = await run(backend_name, "import pydantic")
    assert (plain.outcome, plain.error_type) == ("error", "ModuleNotFoundError")
    hidden = await run(
        backend_name,
        "import sys, sysconfig\nsys.path.append(sysconfig.get_paths()['purelib'])\nimport pydantic",
    )
    if backend_name != "process":  # the namespace backends hide site-packages altogether
        assert (hidden.outcome, hidden.error_type) == ("error", "ModuleNotFoundError")
    with_site = await run(backend_name, "import pydantic\nprint('ok')", SandboxLimits(site_packages=True))
    assert (with_site.outcome, with_site.stdout) == ("ok", "ok\n")


async def test_a_sandbox_that_cannot_start_is_an_error_not_an_outcome() -> None:
    broken = BwrapBackend(executable="/nonexistent/bwrap")
    with pytest.raises(SandboxError, match="could not start the bwrap sandbox"):
        await broken.run(SandboxJob("print(1)"), SandboxLimits())


async def test_the_child_cannot_fake_a_setup_failure(backend_name: str) -> None:
    result = await run(backend_name, "import os\nos._exit(70)")  # the harness's own setup-failure status
    assert (result.outcome, result.error_type) == ("exit", "exit status 70")


async def test_cancellation_kills_the_child_and_cleans_up(backend_name: str, tmp_path: Path) -> None:
    root = tmp_path / "cancelled"
    root.mkdir()
    marker = "openjudge-cancel-marker"
    with anyio.move_on_after(1.0) as scope:
        await sandbox_backend(backend_name, work_root=str(root)).run(  # type: ignore[arg-type]  # a local name
            SandboxJob(f"# {marker}\nwhile True:\n    pass"), SandboxLimits(timeout_s=30)
        )
    assert scope.cancelled_caught
    await anyio.sleep(0.2)
    assert processes_mentioning(marker) == []
    assert list(root.iterdir()) == []


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        SandboxLimits(timeout_s=0)
    with pytest.raises(ValueError, match="memory_mb"):
        SandboxLimits(memory_mb=0)
    with pytest.raises(ValueError, match="max_output_bytes"):
        SandboxLimits(max_output_bytes=0)
    assert SandboxLimits(timeout_s=2.5).cpu_s == 4


def test_unknown_backends_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown sandbox 'docker'"):
        sandbox_backend("docker")  # type: ignore[arg-type]  # deliberately wrong
    with pytest.raises(ValueError, match="needs sandbox_url"):
        sandbox_backend("sandbox_fusion")
    with pytest.raises(ValueError, match="only used with sandbox='sandbox_fusion'"):
        sandbox_backend("bwrap", url="http://localhost:8080/run_code")
