"""The judges' HTTP clients close on TRL's event loop: no "Unclosed client session" at the end.

TRL awaits async reward functions on a loop run by a daemon thread (``GRPOTrainer.__init__``
starts it) and stops that loop with ``loop.stop()`` in an ``atexit`` handler, never cancelling
its tasks: an aiohttp session opened on it used to be reported unclosed as the process ended.
``trl_loop`` is that loop, without importing TRL.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from openjudge.integrations.trl import OpenJudgeRewards
from openjudge.testing.judge_server import JudgeServerProcess
from tests.integrations.trl.helpers import write_graders_yaml
from tests.integrations.trl.trl_loop import trl_loop

ROOT = Path(__file__).resolve().parents[3]


@contextlib.contextmanager
def reports(caplog: pytest.LogCaptureFixture) -> Iterator[Callable[[], list[str]]]:
    """What asyncio reports after a collection: aiohttp's unclosed sessions and connectors
    (aiohttp reports them through the loop's exception handler) and pending tasks."""
    with caplog.at_level(logging.ERROR, logger="asyncio"):

        def collect() -> list[str]:
            gc.collect()
            found = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
            return [
                r
                for r in found
                if r.startswith(("Unclosed client session", "Unclosed connector", "Task was"))
            ]

        yield collect


def grade_on(loop: asyncio.AbstractEventLoop, rewards: OpenJudgeRewards) -> list[float | None]:
    helpful = rewards.grader("helpful")
    call = helpful(prompts=["2+2?"], completions=["4 #oj:score=5"], completion_ids=[[1]], answer=["4"])
    return asyncio.run_coroutine_threadsafe(call, loop).result(timeout=30)


@pytest.mark.parametrize("close", [True, False])
def test_close_closes_the_clients_on_the_loop_that_opened_them(
    tmp_path: Path, judge_server: JudgeServerProcess, caplog: pytest.LogCaptureFixture, close: bool
) -> None:
    with reports(caplog) as unclosed:
        loop, shutdown = trl_loop()
        rewards = OpenJudgeRewards.from_config(write_graders_yaml(tmp_path, judge_server.base_url))
        assert grade_on(loop, rewards) == [1.0]
        if close:
            rewards.close()
            rewards.close()  # twice is harmless
            assert grade_on(loop, rewards) == [1.0]  # and the functions still work: a new client
            rewards.close()
        shutdown()
        del rewards  # collected after TRL stopped the loop, as at a process's end: nothing can close on it
        found = unclosed()
        if close:
            assert found == []
        else:  # what every TRL run printed before: the session and its keeper task left on the loop
            assert any(r.startswith(("Unclosed client session", "Unclosed connector")) for r in found), found
            assert any(r.startswith("Task was destroyed but it is pending!") for r in found), found
        loop.close()


def test_a_collected_set_closes_its_clients(
    tmp_path: Path, judge_server: JudgeServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    loop, shutdown = trl_loop()
    rewards = OpenJudgeRewards.from_config(write_graders_yaml(tmp_path, judge_server.base_url))
    assert grade_on(loop, rewards) == [1.0]
    with reports(caplog) as unclosed:
        del rewards  # its finalizer closes the clients on the loop, which still runs
        before_the_loop_stops = unclosed()
        shutdown()
        assert before_the_loop_stops == [] and unclosed() == []
    loop.close()


@pytest.mark.slow  # a fresh interpreter
def test_a_script_that_never_closes_them_exits_without_a_report(
    tmp_path: Path, judge_server: JudgeServerProcess
) -> None:
    """A training script as written: the trainer's loop first, then reward calls, then exit."""
    graders = write_graders_yaml(tmp_path, judge_server.base_url)
    script = textwrap.dedent(f"""
        import asyncio, atexit
        from openjudge.integrations.trl import OpenJudgeRewards
        from tests.integrations.trl.trl_loop import trl_loop

        loop, shutdown = trl_loop()
        atexit.register(shutdown)  # as GRPOTrainer.__init__ does, before any reward call
        rewards = OpenJudgeRewards.from_config({str(graders)!r})
        call = rewards.grader("helpful")(prompts=["2+2?"], completions=["4 #oj:score=5"], answer=["4"])
        print(asyncio.run_coroutine_threadsafe(call, loop).result(timeout=30))
    """)
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[1.0]"
    assert "Unclosed client session" not in done.stderr and "destroyed" not in done.stderr, done.stderr
