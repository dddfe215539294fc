"""The collector's young threshold while runs are active: left alone unless asked; raised, shared, put back."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import anyio
import pytest

from openjudge.graders.function_grader import FunctionGrader
from openjudge.runner import GradingRunner
from openjudge.runner._collector import YOUNG_THRESHOLD, batch_collector

pytestmark = pytest.mark.anyio

DEFAULT = (700, 10, 10)


@pytest.fixture(autouse=True)
def default_thresholds() -> Iterator[None]:
    found, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(*DEFAULT)
    gc.enable()
    yield
    gc.set_threshold(*found)
    if enabled:
        gc.enable()
    else:
        gc.disable()


def recording_runner(
    seen: list[tuple[int, int, int]], *, tune_collector: bool | None = True
) -> GradingRunner:
    """A runner whose grader notes the thresholds each call runs under (``None``: the default runner)."""

    async def note(response: str) -> float:
        await anyio.sleep(0.01)
        seen.append(gc.get_threshold())
        return 1.0

    graders = {"note": FunctionGrader(note)}
    if tune_collector is None:
        return GradingRunner(graders, show_progress=False)
    return GradingRunner(graders, show_progress=False, tune_collector=tune_collector)


async def test_by_default_a_run_leaves_the_host_process_collector_alone() -> None:
    """The thresholds are process-wide: a library run changes them only when asked."""
    seen: list[tuple[int, int, int]] = []
    runner = recording_runner(seen, tune_collector=None)
    assert runner.settings.tune_collector is False
    await runner.arun([{"response": "a"}, {"response": "b"}])
    assert seen == [DEFAULT] * 2 and gc.get_threshold() == DEFAULT


async def test_a_run_raises_the_young_threshold_and_puts_the_defaults_back() -> None:
    seen: list[tuple[int, int, int]] = []
    result = await recording_runner(seen).arun([{"response": "a"}, {"response": "b"}])
    assert [getattr(r, "score", None) for r in result["note"]] == [1.0, 1.0]
    assert seen == [(YOUNG_THRESHOLD, 10, 10)] * 2
    assert gc.get_threshold() == DEFAULT


async def test_tune_collector_false_leaves_the_collector_alone() -> None:
    seen: list[tuple[int, int, int]] = []
    await recording_runner(seen, tune_collector=False).arun([{"response": "a"}])
    assert seen == [DEFAULT]
    replaced: list[tuple[int, int, int]] = []
    await recording_runner(replaced).replace(tune_collector=False).arun([{"response": "a"}])
    assert replaced == [DEFAULT]


async def test_a_higher_threshold_or_an_automatic_collector_turned_off_is_kept() -> None:
    seen: list[tuple[int, int, int]] = []
    gc.set_threshold(50_000, 20, 20)
    await recording_runner(seen).arun([{"response": "a"}])
    gc.set_threshold(0, 10, 10)  # threshold 0: no automatic collections at all
    await recording_runner(seen).arun([{"response": "a"}])
    gc.set_threshold(*DEFAULT)
    gc.disable()
    await recording_runner(seen).arun([{"response": "a"}])
    assert seen == [(50_000, 20, 20), (0, 10, 10), DEFAULT]
    assert gc.get_threshold() == DEFAULT and not gc.isenabled()


async def test_overlapping_runs_share_one_raise_and_the_last_puts_it_back() -> None:
    short: list[tuple[int, int, int]] = []
    long: list[tuple[int, int, int]] = []
    after_short: list[tuple[int, int, int]] = []

    async def first() -> None:
        await recording_runner(short).arun([{"response": "a"}])
        after_short.append(gc.get_threshold())

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        tg.start_soon(recording_runner(long).arun, [{"response": str(i)} for i in range(40)])
    assert after_short == [(YOUNG_THRESHOLD, 10, 10)]  # the long run is still active
    assert set(short) == set(long) == {(YOUNG_THRESHOLD, 10, 10)}
    assert gc.get_threshold() == DEFAULT


def test_thresholds_changed_during_a_run_are_not_overwritten() -> None:
    with batch_collector():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        gc.set_threshold(2_000, 5, 5)
    assert gc.get_threshold() == (2_000, 5, 5)


def test_a_failing_block_still_puts_the_thresholds_back() -> None:
    with pytest.raises(RuntimeError, match="boom"), batch_collector():
        raise RuntimeError("boom")
    assert gc.get_threshold() == DEFAULT


def test_a_sync_run_in_its_portal_thread_puts_the_thresholds_back() -> None:
    seen: list[tuple[int, int, int]] = []
    runner = recording_runner(seen)
    result = runner.run([{"response": "a"}])
    assert getattr(result["note"][0], "score", None) == 1.0
    assert seen == [(YOUNG_THRESHOLD, 10, 10)]
    assert gc.get_threshold() == DEFAULT
