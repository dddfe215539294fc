"""One failure ledger for the run: breakers, the failure rate, start errors and group rewards.

VERL sends each trajectory to a random ``RewardLoopWorker`` (``reward.num_workers``
Ray actors), so a breaker or a failure-rate window kept per worker sees a fraction of
the run, trips late, and once tripped drops ~1/num_workers of the trajectories. The
ledger keeps them once for the whole run:

* **In Ray** (every VERL worker): a named async actor, ``openjudge_ledger_<job id>``,
  created by the first reward worker that needs it (``get_if_exists``; ``num_cpus=0``).
  Every worker, the agent-loop workers of group judging and the openjudge replay
  buffer in the driver reach the same one. Its breakers open and half-open for the
  cluster: after the cooldown exactly one sample, on whichever worker, probes the judge.
* **Out of Ray** (tests, a script, the batch call): one :class:`Ledger` per process.

It also holds what neither a worker nor VERL can see alone:

* the *start errors* of reward workers: VERL never awaits a ``RewardLoopWorker``
  constructor, so a worker whose graders YAML is invalid dies silently and its
  trajectories fail one by one; it records its error here first, and the openjudge
  replay buffer stops the run with it at its first ``sample()``;
* the *rewards of each group* on the streaming path, so that a sample the judge could
  not score can be given its group's mean (zero GRPO advantage) without the reward
  worker ever seeing the group (:meth:`Ledger.neutral`).

Calls cost one Ray round trip (~1 ms on an idle machine, several under load), so a
reward worker does not make one per sample. It keeps a view of the ledger (the stop
message, the providers whose breaker is open) no older than ``VIEW_TTL_S`` (50 ms) and
asks the actor only for a provider whose breaker is open (so exactly one sample probes
it); it sends the outcomes of scored samples in batches (at most ``RECORD_BATCH`` or
``VIEW_TTL_S`` old), and a failed sample's at once. So a breaker opens on every worker
within 50 ms of the failure that opened it, and the run's counts lag by as much.
``python -m bench.verl_ledger`` measures the cost per sample.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

import anyio

from openjudge.integrations.scoring._ledger import FailureLedger, Ledger, LedgerView, Neutral
from openjudge.integrations.scoring._settings import FailurePolicy

__all__ = [
    "ACTOR_PREFIX",
    "driver_summary",
    "driver_view",
    "existing_ray_ledger",
    "report_start_error",
    "reset_run_ledgers",
    "run_ledger",
]

logger = logging.getLogger(__name__)

ACTOR_PREFIX = "openjudge_ledger"


VIEW_TTL_S = 0.05
"""A worker's view of the ledger is refreshed, and its batched records sent, at least this often."""
RECORD_BATCH = 64
"""Scored samples' outcomes sent in one call at most."""

_RESTART_ATTEMPTS = 50
_RESTART_PAUSE_S = 0.2
"""A dead ledger is started again for up to ~10 s before the call fails."""


class _RayLedger:
    """The named actor, called with ``await handle.method.remote(...)``, from one worker process.

    ``admit`` and ``record`` of samples that change nothing are answered from a view of
    the ledger at most :data:`VIEW_TTL_S` old, and their records sent in batches (see
    the module docstring).
    """

    def __init__(self, handle: Any, make: Any = None) -> None:
        self.handle = handle
        self._make = make
        self._handles: list[Any] = []
        self._view = LedgerView(None, frozenset())
        self._view_at = -math.inf
        self._pending: list[tuple[dict[str, bool], list[str]]] = []
        self._flush_loop: asyncio.AbstractEventLoop | None = None
        self._flushes: set[asyncio.Task[LedgerView]] = set()
        _clients.add(self)

    def forget(self) -> None:
        """A new run (tests): drop the view and the unsent records; the next call asks the actor."""
        self._view, self._view_at, self._pending = LedgerView(None, frozenset()), -math.inf, []

    async def _call(self, method: str, *args: object) -> Any:
        try:
            return await getattr(self.handle, method).remote(*args)
        except Exception as exc:
            from ray.exceptions import RayActorError

            if not isinstance(exc, RayActorError) or self._make is None:
                raise
            # The ledger died with the worker that started it: start it again (its counts restart).
            # Its name is released only once Ray has marked it dead, so another worker may still
            # get the dead actor back for a moment: try again, for a bounded time.
            logger.warning("openjudge: the failure ledger died (%s); starting it again", exc)
            for _ in range(_RESTART_ATTEMPTS - 1):
                # Keep every handle: the actor is not detached, so dropping the handle of a new one
                # (another call restarting it at the same moment) would end it with its counts.
                self._handles.append(self.handle)
                self.handle = self._make()
                try:
                    return await getattr(self.handle, method).remote(*args)
                except RayActorError:
                    await anyio.sleep(_RESTART_PAUSE_S)
            self._handles.append(self.handle)
            self.handle = self._make()
            return await getattr(self.handle, method).remote(*args)

    def _seen(self, view: LedgerView) -> LedgerView:
        self._view, self._view_at = view, time.monotonic()
        return view

    async def _current(self) -> LedgerView:
        if time.monotonic() - self._view_at > VIEW_TTL_S:
            view: LedgerView = await self._call("view")
            return self._seen(view)
        return self._view

    async def admit(self, providers: list[str]) -> tuple[str | None, str | None]:
        view = await self._current()
        if view.problem is not None:
            return view.problem, None
        if view.open_providers.isdisjoint(providers):
            return None, None  # no breaker of these providers is open: call them
        problem, blocked = await self._call("admit", providers)  # the actor picks the one probe
        return problem, blocked

    async def record(self, outage: dict[str, bool], labels: list[str]) -> str | None:
        self._pending.append((dict(outage), list(labels)))
        urgent = bool(labels) or any(outage.values()) or not self._view.open_providers.isdisjoint(outage)
        if urgent or len(self._pending) >= RECORD_BATCH:  # failures and probes count at once
            return (await self._flush()).problem
        self._flush_soon()
        return self._view.problem

    async def _flush(self) -> LedgerView:
        entries, self._pending = self._pending, []
        if not entries:
            return self._view
        view: LedgerView = await self._call("record_many", entries)
        return self._seen(view)

    def _flush_soon(self) -> None:
        """Send the batched records within :data:`VIEW_TTL_S`, even if no sample follows."""
        loop = asyncio.get_running_loop()
        if self._flush_loop is loop:  # already due on this loop (a timer on a loop that ended never fires)
            return
        self._flush_loop = loop

        def fire() -> None:
            self._flush_loop = None
            task = loop.create_task(self._flush())
            self._flushes.add(task)
            task.add_done_callback(self._flushed)

        loop.call_later(VIEW_TTL_S, fire)

    def _flushed(self, task: asyncio.Task[LedgerView]) -> None:
        self._flushes.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.warning(
                "openjudge: could not send records to the failure ledger", exc_info=task.exception()
            )

    async def problem(self) -> str | None:
        result: str | None = await self._call("problem")
        return result

    async def start_failed(self, message: str) -> None:
        await self._call("start_failed", message)

    async def counts(self) -> dict[str, int]:
        result: dict[str, int] = await self._call("counts")
        return result

    async def summary(self) -> str:
        result: str = await self._call("summary")
        return result

    async def post(self, uid: str, reward: float | None, values: dict[str, float] | None = None) -> None:
        await self._call("post", uid, reward, values)

    async def neutral(self, uid: str, expected: int, wait_s: float) -> Neutral:
        result: Neutral = await self._call("neutral", uid, expected, wait_s)
        return result


_clients: weakref.WeakSet[_RayLedger] = weakref.WeakSet()
"""Every client of this process (scorers keep theirs), so that a new run resets their views."""
_local: dict[tuple[FailurePolicy, tuple[tuple[str, str], ...]], Ledger] = {}
_ray: dict[str, _RayLedger] = {}
_lock = threading.Lock()


def actor_name() -> str:
    """The ledger actor's name in this Ray job (``None`` outside Ray is the caller's check)."""
    import ray

    return f"{ACTOR_PREFIX}_{ray.get_runtime_context().get_job_id()}"


def existing_ray_ledger() -> _RayLedger | None:
    """The run's ledger actor if a reward worker created it (for the driver's replay buffer)."""
    try:
        import ray
    except ImportError:  # pragma: no cover - VERL always brings Ray
        return None
    if not ray.is_initialized():
        return None
    try:
        return _RayLedger(ray.get_actor(actor_name()))
    except ValueError:  # not created (yet): no reward worker has graded or failed
        return None


def driver_view(timeout_s: float = 10.0) -> tuple[str | None, dict[str, int]]:
    """From synchronous code (the driver's replay buffer): why the run must stop, and the run's counts.

    ``(None, {})`` when no reward worker created the ledger, or it did not answer in time.
    Outside Ray (tests, one process), the process's ledgers.
    """
    ledger = existing_ray_ledger()
    if ledger is None:
        with _lock:
            local = list(_local.values())
        problems = [p for p in (led.problem_now() for led in local) if p is not None]
        counts: dict[str, int] = {}
        for led in local:
            for name, count in led.counts_now().items():
                counts[name] = counts.get(name, 0) + count
        return (problems[0] if problems else None), counts
    import ray

    handle = ledger.handle
    try:
        problem, totals = ray.get([handle.problem.remote(), handle.counts.remote()], timeout=timeout_s)
    except Exception:  # the ledger died with its owner, or is slow: never stop the run on that
        logger.warning("openjudge: the failure ledger did not answer", exc_info=True)
        return None, {}
    return problem, totals


def driver_summary(timeout_s: float = 10.0) -> str | None:
    """From synchronous code (the driver): the run's recent failures by provider
    (:meth:`Ledger.summary`), or ``None`` when there is no ledger or it did not answer."""
    ledger = existing_ray_ledger()
    if ledger is None:
        with _lock:
            local = list(_local.values())
        summaries = [led.guard.summary() for led in local if led.guard.samples]
        return "; ".join(summaries) or None
    import ray

    try:
        summary: str = ray.get(ledger.handle.summary.remote(), timeout=timeout_s)
    except Exception:  # the ledger died with its owner, or is slow
        logger.warning("openjudge: the failure ledger did not answer", exc_info=True)
        return None
    return summary


def report_start_error(message: str) -> None:
    """From a reward worker's constructor: record why it cannot start (best effort)."""
    client = run_ledger(FailurePolicy())
    if isinstance(client, Ledger):
        client.start_errors.append(message)
        return
    assert isinstance(client, _RayLedger)
    import ray

    try:
        ray.get(client.handle.start_failed.remote(message), timeout=30)
    except Exception:  # the error is re-raised by the caller either way
        logger.warning("openjudge: could not report the start error to the failure ledger", exc_info=True)


def _ray_running() -> bool:
    try:
        import ray
    except ImportError:  # pragma: no cover - VERL always brings Ray
        return False
    return bool(ray.is_initialized())


def run_ledger(policy: FailurePolicy, describe: Mapping[str, str] | None = None) -> FailureLedger:
    """The run's ledger: the named actor when Ray is running, else this process's.

    The first caller's ``policy`` and ``describe`` configure it; every reward worker of
    a run reads the same options, so they agree.
    """
    items = tuple(sorted((describe or {}).items()))
    if _ray_running():
        import ray

        name = actor_name()
        with _lock:
            client = _ray.get(name)
            if client is None:
                actor = ray.remote(Ledger).options(
                    name=name, get_if_exists=True, num_cpus=0, max_concurrency=10_000
                )

                def make() -> Any:
                    return actor.remote(policy, dict(items))

                client = _ray[name] = _RayLedger(make(), make)
            return client
    key = (policy, items)
    with _lock:
        ledger = _local.get(key)
        if ledger is None:
            ledger = _local[key] = Ledger(policy, dict(items))
        return ledger


def reset_run_ledgers() -> None:
    """Start a fresh run (tests): reset this process's ledgers in place and end the run's
    ledger actor, so the next reward worker creates it anew with its own options."""
    with _lock:
        for ledger in _local.values():
            ledger.reset()
        _ray.clear()
        for client in list(_clients):
            client.forget()
    if not _ray_running():
        return
    import ray

    try:
        ray.kill(ray.get_actor(actor_name()))
    except ValueError:  # no reward worker created it
        return
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:  # the name is free once the actor is gone
        try:
            ray.get_actor(actor_name())
        except ValueError:
            return
        time.sleep(0.05)
