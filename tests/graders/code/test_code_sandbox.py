"""The sandbox: limits, guards, cleanup and process-group handling of run_python."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import anyio
import pytest

from openjudge.graders.code.sandbox import SandboxLimits, run_python

pytestmark = pytest.mark.anyio


def is_running(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie (killed orphans may linger as zombies)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def processes_mentioning(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and is_running(int(entry.name)):
            found.append(int(entry.name))
    return found


async def test_stdin_stdout_and_unicode() -> None:
    run = await run_python(
        "import sys\ndata = sys.stdin.read()\nprint(data.upper(), '北京👍')", stdin="héllo"
    )
    assert run.outcome == "ok"
    assert run.completed
    assert run.stdout == "HÉLLO 北京👍\n"
    assert run.returncode == 0


async def test_test_code_shares_the_namespace() -> None:
    ok = await run_python("def add(a, b):\n    return a + b", test_code="assert add(2, 3) == 5")
    assert (ok.outcome, ok.completed) == ("ok", True)
    bad = await run_python("def add(a, b):\n    return a - b", test_code="assert add(2, 3) == 5")
    assert (bad.outcome, bad.error_type) == ("error", "AssertionError")
    assert 'File "test.py", line 1' in bad.stderr
    assert "_bootstrap" not in bad.stderr


async def test_exit_before_tests_is_not_completed() -> None:
    run = await run_python("import sys\nsys.exit(0)", test_code="assert False")
    assert (run.outcome, run.completed) == ("ok", False)
    hard = await run_python("import os\nos._exit(0)", test_code="assert False")
    assert (hard.outcome, hard.completed) == ("ok", False)
    failing = await run_python("exit(3)")
    assert (failing.outcome, failing.error_type) == ("exit", "SystemExit(3)")


async def test_wall_clock_limit() -> None:
    start = time.monotonic()
    run = await run_python("while True:\n    pass", limits=SandboxLimits(timeout_s=1.0))
    assert run.outcome == "timeout"
    assert 1.0 <= run.elapsed_s < 1.0 + 1.5
    assert time.monotonic() - start < 1.0 + 3.0


async def test_cpu_time_limit() -> None:
    run = await run_python("while True:\n    pass", limits=SandboxLimits(timeout_s=20.0, cpu_time_s=1))
    assert (run.outcome, run.error_type) == ("timeout", "SIGXCPU")
    assert run.elapsed_s < 10.0


async def test_memory_limit() -> None:
    run = await run_python("block = bytearray(1024 ** 3)", limits=SandboxLimits(memory_mb=256))
    assert (run.outcome, run.error_type) == ("memory", "MemoryError")


async def test_output_limit() -> None:
    run = await run_python(
        "while True:\n    print('x' * 1000)", limits=SandboxLimits(max_output_bytes=10_000)
    )
    assert run.outcome == "output_limit"
    assert len(run.stdout) == 10_000


async def test_no_network_through_python() -> None:
    code = "import socket\nsocket.create_connection(('127.0.0.1', 9))"
    run = await run_python(code)
    assert run.outcome == "violation"
    assert run.violations == ("network access",)
    raw = await run_python("import _socket\n_socket.socket()")
    assert raw.outcome == "violation"
    assert raw.violations == ("network access (socket)",)


async def test_local_socketpair_and_asyncio_still_work() -> None:
    code = (
        "import asyncio, socket\n"
        "a, b = socket.socketpair()\n"
        "a.sendall(b'hi')\n"
        "async def main():\n"
        "    await asyncio.sleep(0)\n"
        "    return b.recv(2).decode()\n"
        "print(asyncio.run(main()))\n"
    )
    run = await run_python(code)
    assert (run.outcome, run.stdout, run.violations) == ("ok", "hi\n", ())


async def test_network_namespace_stops_raw_syscalls() -> None:
    # Bypass the Python guard with a raw socket()/connect() through ctypes: only a
    # network namespace stops this. The parent listens on 127.0.0.1.
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    code = (
        "import ctypes, struct\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = libc.socket(2, 1, 0)\n"
        f"addr = struct.pack('=H', 2) + struct.pack('>H', {port}) + bytes([127, 0, 0, 1]) + bytes(8)\n"
        "print('connected' if libc.connect(fd, addr, len(addr)) == 0 else 'refused')\n"
    )
    try:
        run = await run_python(code)
        if run.network == "python_guard":
            pytest.skip("this kernel does not allow an unprivileged network namespace")
        assert run.stdout == "refused\n"
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()


async def test_writes_outside_the_sandbox_are_refused(tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    existing = tmp_path / "keep.txt"
    existing.write_text("keep")
    code = f"""
import os, pathlib
attempts = [
    lambda: open({str(target)!r}, "w").write("x"),
    lambda: open({str(target)!r}, "a"),
    lambda: os.open({str(target)!r}, os.O_WRONLY | os.O_CREAT),
    lambda: pathlib.Path({str(target)!r}).write_text("x"),
    lambda: os.remove({str(existing)!r}),
    lambda: os.mkdir({str(tmp_path / "newdir")!r}),
    lambda: os.rename("inside.txt", {str(target)!r}),
    lambda: (os.symlink({str(target)!r}, "link.txt"), open("link.txt", "w")),
    lambda: open("../escape-by-relative-path.txt", "w"),
]
open("inside.txt", "w").write("fine")
for attempt in attempts:
    try:
        attempt()
        print("allowed")
    except PermissionError:
        print("blocked")
print(open("inside.txt").read())
open({str(target)!r}, "w")
"""
    run = await run_python(code)
    assert run.stdout.splitlines() == ["blocked"] * 9 + ["fine"]
    assert run.outcome == "violation"
    assert not target.exists()
    assert existing.read_text() == "keep"
    assert not (tmp_path / "newdir").exists()
    assert not (Path(run.workdir).parent / "escape-by-relative-path.txt").exists()
    assert len(run.violations) == 10


async def test_reading_and_dev_null_are_allowed() -> None:
    code = "print(open('/dev/null', 'w').write('x'))\nimport json\nprint(len(open(json.__file__).read()) > 0)"
    run = await run_python(code)
    assert run.stdout == "1\nTrue\n"


async def test_temp_dir_is_removed(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    code = (
        "import os\n"
        "os.makedirs('a/b')\n"
        "open('a/b/f.txt', 'w').write('x')\n"
        "os.chmod('a', 0o500)\n"
        "print(os.getcwd())"
    )
    run = await run_python(code, work_root=str(root))
    assert run.outcome == "ok"
    assert run.stdout.strip() == str(Path(run.workdir) / "work")
    assert not await anyio.Path(run.workdir).exists()
    assert list(root.iterdir()) == []


async def test_environment_holds_no_parent_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    run = await run_python("import os\nprint(sorted(os.environ))")
    assert "OPENAI_API_KEY" not in run.stdout
    assert "sk-secret" not in run.stdout


async def test_subprocesses_are_refused_by_default() -> None:
    run = await run_python("import subprocess\nsubprocess.run(['true'])")
    assert run.outcome == "violation"
    assert run.violations == ("starting a process",)
    forked = await run_python("import os\nos.fork()")
    assert forked.violations == ("starting a process",)


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_grandchild_does_not_outlive_the_run() -> None:
    code = (
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(child.pid, flush=True)\n"
    )
    run = await run_python(code, limits=SandboxLimits(allow_subprocess=True))
    assert run.outcome == "ok"
    grandchild = int(run.stdout)
    await anyio.sleep(0.1)
    assert not is_running(grandchild)


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_waiting_on_a_grandchild_is_killed_at_the_limit() -> None:
    code = (
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(child.pid, flush=True)\n"
        "child.wait()\n"
    )
    start = time.monotonic()
    run = await run_python(code, limits=SandboxLimits(timeout_s=1.0, allow_subprocess=True))
    assert run.outcome == "timeout"
    assert time.monotonic() - start < 1.0 + 3.0
    grandchild = int(run.stdout)
    await anyio.sleep(0.1)
    assert not is_running(grandchild)


async def test_cancellation_kills_the_child_and_cleans_up(tmp_path: Path) -> None:
    root = tmp_path / "cancelled"
    root.mkdir()
    with anyio.move_on_after(0.8) as scope:
        await run_python("while True:\n    pass", work_root=str(root), limits=SandboxLimits(timeout_s=30))
    assert scope.cancelled_caught
    assert processes_mentioning(str(root)) == []
    assert list(root.iterdir()) == []


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        SandboxLimits(timeout_s=0)
    with pytest.raises(ValueError, match="memory_mb"):
        SandboxLimits(memory_mb=0)
    with pytest.raises(ValueError, match="max_output_bytes"):
        SandboxLimits(max_output_bytes=0)


async def test_only_the_standard_library_by_default() -> None:
    plain = await run_python("import pydantic")
    assert (plain.outcome, plain.error_type) == ("error", "ModuleNotFoundError")
    with_site = await run_python("import pydantic\nprint('ok')", limits=SandboxLimits(site_packages=True))
    assert (with_site.outcome, with_site.stdout) == ("ok", "ok\n")
