"""One failure ledger for the run: breakers, the failure rate, start errors and group rewards.

VERL sends each trajectory to a random ``RewardLoopWorker`` (``reward.num_workers``
Ray actors), so a breaker or a failure-rate window kept per worker sees a fraction of
the run, trips late, and once tripped drops ~1/num_workers of the trajectories. The
ledger keeps them once for the whole run:

* **In Ray** (every VERL worker): a named async actor, ``openjudge_ledger_<job id>``
  (``num_cpus=0``). Every reward worker, the agent-loop workers of group judging and the
  openjudge replay buffer in the driver reach the same one. Its breakers open and
  half-open for the cluster: after the cooldown exactly one sample, on whichever
  worker, probes the judge.
* **Out of Ray** (tests, a script, the batch call): one :class:`Ledger` per process.

**Who owns it.** A Ray actor lives as long as the process that created it. The openjudge
replay buffer creates it in VERL's driver (:func:`own_run_ledger`), when the trainer is
built and before any reward worker starts, and holds it for the run; the workers
:meth:`~Ledger.join` it with their options (the first sets the thresholds; each names
its providers). Without the buffer (the V0 trainer, VERL's experimental trainers) the
first reward worker that grades a sample creates it; a worker that cannot start never
does, since the ledger would die with it: it reports its error to a ledger that exists,
and VERL's own calls to it fail with that error (Ray's ``ActorDiedError`` carries the
constructor's exception), which ends a V0 step.

It also holds what neither a worker nor VERL can see alone:

* the *start errors* of reward workers: VERL never awaits a ``RewardLoopWorker``
  constructor, so on the V1 trainer a worker whose graders YAML is invalid dies unseen
  and the sessions sent to it are dropped one by one; it records its error here first,
  and the openjudge replay buffer stops the run with it;
* the *rewards of each group* on the streaming path, so that a sample the judge could
  not score can be given its group's mean (zero GRPO advantage) without the reward
  worker ever seeing the group (:meth:`Ledger.neutral`), and which groups are
  validation prompts (the buffer says so), whose size is ``val_kwargs.n``;
* the groups the async trainers evicted for a failed member (the buffer counts them).

Calls cost one Ray round trip (~1 ms on an idle machine, several under load), so a
reward worker does not make one per sample. It keeps a view of the ledger (the stop
message, the providers whose breaker is open) no older than ``VIEW_TTL_S`` (50 ms) and
asks the actor only for a provider whose breaker is open (so exactly one sample probes
it); it sends the outcomes and group rewards of scored samples in batches (at most
``RECORD_BATCH`` or ``VIEW_TTL_S`` old), and a failed sample's at once. So a breaker
opens on every worker within 50 ms of the failure that opened it, and the run's counts
lag by as much. ``python -m bench.verl_ledger`` measures the cost per sample.
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
    "driver_call",
    "driver_summary",
    "driver_view",
    "existing_ray_ledger",
    "own_run_ledger",
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


Join = tuple[FailurePolicy, tuple[tuple[str, str], ...]]
"""A worker's thresholds and provider names, as it joins the ledger (:meth:`~Ledger.join`)."""


class _RayLedger:
    """The named actor, called with ``await handle.method.remote(...)``, from one worker process.

    ``admit`` and ``record`` of samples that change nothing are answered from a view of
    the ledger at most :data:`VIEW_TTL_S` old, and their records (and group rewards) sent
    in batches (see the module docstring). Before its first call, and again after the
    actor was started anew, it joins the ledger with each set of options asked of it.
    """

    def __init__(self, handle: Any, make: Any = None) -> None:
        self.handle = handle
        self._make = make
        self._handles: list[Any] = []
        self._view = LedgerView(None, frozenset())
        self._view_at = -math.inf
        self._pending: list[tuple[dict[str, bool], list[str]]] = []
        self._posts: list[tuple[str, float | None, dict[str, float] | None]] = []
        self._wanted: dict[Join, None] = {}
        self._joined: set[Join] = set()
        self._flush_loop: asyncio.AbstractEventLoop | None = None
        self._flushes: set[asyncio.Task[LedgerView]] = set()
        _clients.add(self)

    def want(self, join: Join) -> None:
        """Join the ledger with these options before the next call (once per set of options)."""
        if join not in self._wanted:
            self._wanted[join] = None

    def forget(self) -> None:
        """A new run (tests): drop the view and the unsent records; the next call asks the actor."""
        self._view, self._view_at, self._pending, self._posts = (
            LedgerView(None, frozenset()),
            -math.inf,
            [],
            [],
        )
        self._joined.clear()

    async def _join(self) -> None:
        for join in [j for j in self._wanted if j not in self._joined]:
            self._joined.add(join)  # before the await: concurrent callers join once
            policy, describe = join
            await getattr(self.handle, "join").remote(policy, dict(describe))  # noqa: B009  # a Ray method

    async def _call(self, method: str, *args: object) -> Any:
        try:
            if len(self._joined) < len(self._wanted):
                await self._join()
            return await getattr(self.handle, method).remote(*args)
        except Exception as exc:
            from ray.exceptions import RayActorError

            if not isinstance(exc, RayActorError) or self._make is None:
                raise
            # The ledger died with the process that owned it: start it again (its counts restart).
            # Its name is released only once Ray has marked it dead, so another worker may still
            # get the dead actor back for a moment: try again, for a bounded time.
            logger.warning("openjudge: the failure ledger died (%s); starting it again", exc)
            for _ in range(_RESTART_ATTEMPTS - 1):
                # Keep every handle: a named actor ends when its last handle is dropped, so dropping
                # the handle of a new one (another call restarting it at the same moment) would end it.
                self._handles.append(self.handle)
                self.handle = self._make()
                self._joined.clear()
                try:
                    await self._join()
                    return await getattr(self.handle, method).remote(*args)
                except RayActorError:
                    await anyio.sleep(_RESTART_PAUSE_S)
            self._handles.append(self.handle)
            self.handle = self._make()
            self._joined.clear()
            await self._join()
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
        posts, self._posts = self._posts, []
        if not entries and not posts:
            return self._view
        view: LedgerView = await self._call("record_many", entries, posts)
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
        """A scored member's reward goes with the next batch of records (its failed siblings
        wait for it anyway); a failed member's at once, before it asks for its group's mean."""
        self._posts.append((uid, reward, values))
        if reward is None or len(self._posts) >= RECORD_BATCH:
            await self._flush()
        else:
            self._flush_soon()

    async def neutral(
        self, uid: str, expected: int, wait_s: float, validation_expected: int | None = None
    ) -> Neutral:
        result: Neutral = await self._call("neutral", uid, expected, wait_s, validation_expected)
        return result


_clients: weakref.WeakSet[_RayLedger] = weakref.WeakSet()
"""Every client of this process (scorers keep theirs), so that a new run resets their views."""
_local = Ledger()
"""The run's ledger outside Ray: one per process (joined like the actor)."""
_local_joins: set[Join] = set()
_ray: dict[str, _RayLedger] = {}
_owned: list[Any] = []
"""The handle of the ledger this process created as VERL's driver: a named actor ends with its last handle."""
_lock = threading.Lock()


def actor_name() -> str:
    """The ledger actor's name in this Ray job (``None`` outside Ray is the caller's check)."""
    import ray

    return f"{ACTOR_PREFIX}_{ray.get_runtime_context().get_job_id()}"


def _ray_running() -> bool:
    try:
        import ray
    except ImportError:  # pragma: no cover - VERL always brings Ray
        return False
    return bool(ray.is_initialized())


def _actor_class() -> Any:
    import ray

    return ray.remote(Ledger).options(
        name=actor_name(), get_if_exists=True, num_cpus=0, max_concurrency=10_000
    )


def own_run_ledger() -> None:
    """Create the run's ledger actor in this process, VERL's driver, and hold it for the run.

    Called where the trainer is built (the openjudge replay buffer's constructor), before
    any reward worker starts: the ledger then lives as long as the driver, so a reward
    worker that dies at start cannot take it (and its error) along. Outside Ray: nothing to do.
    """
    if not _ray_running():
        return
    import ray

    handle = _actor_class().remote()
    ray.get(handle.view.remote(), timeout=60)  # registered and alive before the workers look for it
    with _lock:
        _owned.append(handle)


def existing_ray_ledger() -> _RayLedger | None:
    """The run's ledger actor if it exists (for the driver's replay buffer and failed workers)."""
    if not _ray_running():
        return None
    import ray

    try:
        return _RayLedger(ray.get_actor(actor_name()))
    except ValueError:  # not created (yet): no reward worker has graded or failed
        return None


def driver_view(timeout_s: float = 10.0) -> tuple[str | None, dict[str, int]]:
    """From synchronous code (the driver's replay buffer): why the run must stop, and the run's counts.

    ``(None, {})`` when there is no ledger, or it did not answer in time. Outside Ray
    (tests, one process), the process's ledger.
    """
    ledger = existing_ray_ledger()
    if ledger is None:
        if _ray_running():
            return None, {}
        return _local.problem_now(), _local.counts_now()
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
        if _ray_running():
            return None
        return _local.guard.summary() if _local.guard.samples else None
    import ray

    try:
        summary: str = ray.get(ledger.handle.summary.remote(), timeout=timeout_s)
    except Exception:  # the ledger died with its owner, or is slow
        logger.warning("openjudge: the failure ledger did not answer", exc_info=True)
        return None
    return summary


def driver_call(method: str, *args: object, timeout_s: float = 10.0) -> object:
    """From synchronous code (the driver): one call to the run's ledger; ``None`` without one.

    A ledger that does not answer is logged, never raised: the run goes on without it.
    """
    ledger = existing_ray_ledger()
    if ledger is None:
        if _ray_running():
            return None
        return anyio.run(getattr(_local, method), *args)
    import ray

    try:
        return ray.get(getattr(ledger.handle, method).remote(*args), timeout=timeout_s)
    except Exception:
        logger.warning("openjudge: the failure ledger did not answer", exc_info=True)
        return None


def report_start_error(message: str) -> None:
    """From a reward worker's constructor: record why it cannot start, in the run's ledger.

    Only in a ledger that exists (VERL's driver created it, or a worker that started): a
    ledger this worker created would die with it. Without one, VERL's calls to the dead
    worker carry the error themselves (Ray's ``ActorDiedError``).
    """
    if not _ray_running():
        _local.start_errors.append(message)
        return
    import ray

    ledger = existing_ray_ledger()
    if ledger is None:
        logger.error(
            "%s (no failure ledger to report it to: VERL's calls to this worker will fail with it)", message
        )
        return
    try:
        ray.get(ledger.handle.start_failed.remote(message), timeout=30)
    except Exception:  # the error is re-raised by the caller either way
        logger.warning("openjudge: could not report the start error to the failure ledger", exc_info=True)


def run_ledger(policy: FailurePolicy, describe: Mapping[str, str] | None = None) -> FailureLedger:
    """The run's ledger, joined with ``policy`` and ``describe``: the named actor when Ray is
    running (created here when it does not exist yet), else this process's."""
    join: Join = (policy, tuple(sorted((describe or {}).items())))
    if _ray_running():
        name = actor_name()
        with _lock:
            client = _ray.get(name)
            if client is None:
                actor = _actor_class()
                client = _ray[name] = _RayLedger(actor.remote(), actor.remote)
        client.want(join)
        return client
    with _lock:
        if join not in _local_joins:
            _local_joins.add(join)
            _local.join_now(policy, describe or {})
    return _local


def reset_run_ledgers() -> None:
    """Start a fresh run (tests): clear this process's ledger and end the run's ledger actor,
    so the next worker (or the driver) creates it anew with its own options."""
    with _lock:
        _local.clear()
        _local_joins.clear()
        _ray.clear()
        _owned.clear()
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
