"""The warm fork server of the ``unshare`` and ``process`` backends: runs it forks share nothing,
hold nothing of it or of each other, die with a kill, and a server that ends is replaced."""

from __future__ import annotations

import gc
import os
import signal
from pathlib import Path

import anyio
import pytest

from openjudge.graders.code import (
    SandboxError,
    SandboxJob,
    SandboxLimits,
    SandboxRun,
    _zygote,
    sandbox_backend,
)
from openjudge.graders.code._local import LocalBackend

from ._support import is_running

pytestmark = pytest.mark.anyio

FORKED = ("unshare", "process")


@pytest.fixture(params=FORKED)
def forked(request: pytest.FixtureRequest, backend_problems: dict[str, str | None]) -> LocalBackend:
    """A fresh backend whose runs the fork server forks, skipped where it cannot run."""
    name = str(request.param)
    if backend_problems[name] is not None:
        pytest.skip(f"the {name} backend does not work here: {backend_problems[name]}")
    backend = sandbox_backend(name)  # type: ignore[arg-type]  # the literal names above
    assert isinstance(backend, LocalBackend)
    return backend


async def run(backend: LocalBackend, code: str, limits: SandboxLimits | None = None) -> SandboxRun:
    return await backend.run(SandboxJob(code), limits or SandboxLimits(timeout_s=20))


def children(pid: int) -> list[int]:
    """Live child processes of ``pid``."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return [p for p in found if is_running(p)]


async def test_one_server_forks_every_run_of_a_loop(forked: LocalBackend) -> None:
    first = await run(forked, "print(1)")
    server = forked.fork_server().pid
    second = await run(forked, "print(2)")
    assert (first.stdout, second.stdout) == ("1\n", "2\n")
    assert server is not None and forked.fork_server().pid == server
    assert children(server) == []  # nothing of either run is left


async def test_runs_share_nothing(forked: LocalBackend) -> None:
    leave = (
        "import builtins, json, os, sys\n"
        "builtins.LEFT = 1\njson.dumps = None\nos.environ['LEFT'] = '1'\nsys.path.append('/left')\n"
        "open('left.txt', 'w').write('x')\n"
    )
    look = (
        "import builtins, json, os, sys\n"
        "print(hasattr(builtins, 'LEFT'), json.dumps is None, 'LEFT' in os.environ, '/left' in sys.path,"
        " os.path.exists('left.txt'), os.listdir('.'))\n"
    )
    assert (await run(forked, leave)).outcome == "ok"
    assert (await run(forked, look)).stdout == "False False False False False []\n"


async def test_each_run_draws_fresh_randomness(forked: LocalBackend) -> None:
    draws = [(await run(forked, "import random\nprint(random.random())")).stdout for _ in range(2)]
    assert draws[0] != draws[1]


OPEN_FDS = """
import os, sys, time
time.sleep(0.3)  # the runs overlap: each could see the others' descriptors, were they leaked
def is_open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False
print([fd for fd in range(1024) if is_open(fd)])
"""


async def test_a_run_holds_only_its_own_descriptors(forked: LocalBackend) -> None:
    results: list[SandboxRun] = []

    async def one() -> None:
        results.append(await run(forked, OPEN_FDS))

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(one)
    # Standard input, output, error and the report pipe; the job pipe (3) was read and closed.
    assert [r.stdout for r in results] == ["[0, 1, 2, 4]\n"] * 4


async def test_the_server_is_out_of_reach(backend_problems: dict[str, str | None]) -> None:
    if backend_problems["process"] is not None:
        pytest.skip(f"the process backend does not work here: {backend_problems['process']}")
    backend = sandbox_backend("process")
    assert isinstance(backend, LocalBackend)
    code = """
import os, signal
server = os.getppid()
for what in ('mem', 'environ', 'fd/0', 'fd/3'):
    try:
        open(f'/proc/{server}/{what}', 'rb').read(1)
        print(what, 'read')
    except OSError as exc:
        print(what, type(exc).__name__)
try:
    os.kill(server, signal.SIGKILL)
    print('signalled')
except OSError as exc:
    print('kill', exc.errno)
"""
    result = await run(backend, code)
    assert result.stdout.splitlines() == [
        "mem PermissionError",  # the server is non-dumpable: no process of its user opens it
        "environ PermissionError",
        "fd/0 PermissionError",  # nor its descriptors (3: its control socket)
        "fd/3 PermissionError",
        "kill 1",  # seccomp: signals only to itself
    ]
    assert is_running(backend.fork_server().pid or -1)


async def test_cancellation_kills_the_forked_run(forked: LocalBackend) -> None:
    await run(forked, "pass")  # the server is up
    server = forked.fork_server().pid
    assert server is not None
    with anyio.move_on_after(1.0) as scope:
        await run(forked, "while True:\n    pass")
    assert scope.cancelled_caught
    for _ in range(50):  # the server kills the group at once; the reaping takes a moment
        if not children(server):
            break
        await anyio.sleep(0.1)
    assert children(server) == []


async def test_a_run_whose_server_dies_is_an_error_and_the_next_run_gets_a_new_server(
    forked: LocalBackend,
) -> None:
    await run(forked, "pass")
    server = forked.fork_server().pid
    assert server is not None

    async def kill_server() -> None:
        await anyio.sleep(0.5)
        os.kill(server, signal.SIGKILL)

    async with anyio.create_task_group() as tg:
        tg.start_soon(kill_server)
        with pytest.raises(SandboxError, match="fork server ended during the run"):
            await run(forked, "import time\ntime.sleep(10)")
    assert (await run(forked, "print('again')")).stdout == "again\n"
    assert forked.fork_server().pid not in (None, server)


async def idled_out(backend: LocalBackend, monkeypatch: pytest.MonkeyPatch) -> int:
    """Start ``backend``'s fork server, let it idle out (``IDLE_S`` of 0.3 s) and return its old pid."""
    monkeypatch.setattr(_zygote, "IDLE_S", 0.3)
    await run(backend, "pass")
    server = backend.fork_server().pid
    assert server is not None
    for _ in range(50):
        if not is_running(server):
            break
        await anyio.sleep(0.1)
    return server


async def test_an_idle_server_exits_and_is_replaced(
    forked: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await idled_out(forked, monkeypatch)
    assert not is_running(server)
    assert (await run(forked, "print('after')")).stdout == "after\n"


async def test_concurrent_runs_that_find_the_server_gone_all_run_on_a_new_one(
    forked: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As in a trainer's reward loop: the server idles out between two batches, and the next
    # batch's runs all find it gone at once; each retries on the one new server.
    server = await idled_out(forked, monkeypatch)
    outputs: list[str] = []

    async def one(i: int) -> None:
        outputs.append((await run(forked, f"print({i})")).stdout)

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(one, i)
    assert sorted(outputs) == [f"{i}\n" for i in range(8)]
    assert forked.fork_server().pid not in (None, server)


async def test_the_server_stops_with_its_backend(forked: LocalBackend) -> None:
    backend = sandbox_backend(forked.name)  # type: ignore[arg-type]  # a local backend's name
    assert isinstance(backend, LocalBackend)
    await run(backend, "pass")
    server = backend.fork_server().pid
    assert server is not None and is_running(server)
    del backend
    gc.collect()
    assert not is_running(server)
