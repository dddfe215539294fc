"""The failure ledger a :class:`~openjudge.integrations.scoring.RewardScorer` calls: the hook for outages.

The scorer asks the ledger before grading a sample (is the run stopped? is a provider's
breaker open?) and tells it after (which providers failed, whether the sample did); a
neutral sample asks it for its group's rewards. Where that state lives is the adapter's
choice, behind one interface (:data:`FailureLedger`):

* TRL and SkyRL: one ledger per scorer, in the process (:func:`process_ledger`);
* VERL: one for the whole run, a named Ray actor every reward worker reaches
  (:func:`openjudge.integrations.verl._ledger.run_ledger`), since VERL spreads a run's
  trajectories over many worker processes.

Both keep breakers and the failure rate by the same rules
(:class:`~openjudge.integrations.scoring._guard.FailureGuard`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from openjudge.integrations.scoring._guard import FailureGuard
from openjudge.integrations.scoring._settings import FailurePolicy

__all__ = [
    "FailureLedger",
    "GroupRewards",
    "Ledger",
    "LedgerView",
    "Neutral",
    "group_means",
    "process_ledger",
]

_QUIET_S = 60.0
"""A neutral sample stops waiting when no member of its group arrived for this long, once a
member was scored (with none scored there is no mean yet: it waits for the deadline)."""
_KEEP_S = 3600.0
"""Group rewards older than this are forgotten (their groups were trained long ago)."""


@dataclass(slots=True)
class _Group:
    first: float
    last: float
    rewards: list[float] = field(default_factory=list)
    values: list[dict[str, float]] = field(default_factory=list)
    failed: int = 0


@dataclass(frozen=True, slots=True)
class Neutral:
    """What a failed member of a group gets: the means over the members that were scored.

    Attributes:
        reward: The mean reward (0.0 when no member was scored).
        values: Each posted value's mean (e.g. every grader's ``openjudge/<name>``), for
            estimators that read them (GDPO).
        scored: How many members were scored.
        complete: Every member of the group arrived (scored or failed).
    """

    reward: float
    values: dict[str, float]
    scored: int
    complete: bool = True

    @property
    def known(self) -> bool:
        """Whether :attr:`reward` is the group's mean: a member was scored, or every member failed.

        With no member scored and members still missing, 0.0 would be an invented reward:
        the missing members may yet be scored, and the failed one's advantage would not be zero.
        """
        return self.scored > 0 or self.complete


def group_means(rewards: list[float], values: list[dict[str, float]], *, complete: bool = True) -> Neutral:
    """:class:`Neutral` of the scored members' rewards and values."""
    if not rewards:
        return Neutral(0.0, {}, 0, complete)
    keys = set(values[0]).intersection(*values[1:]) if values else set()
    means = {k: sum(v[k] for v in values) / len(values) for k in keys}
    return Neutral(sum(rewards) / len(rewards), means, len(rewards), complete)


class GroupRewards:
    """Rewards of each group (by ``uid``) as its members are scored, for neutral values."""

    def __init__(self, *, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._groups: dict[str, _Group] = {}
        self._lock = threading.Lock()

    def post(self, uid: str, reward: float | None, values: Mapping[str, float] | None = None) -> None:
        """One member of ``uid`` was scored (``reward``, its ``values``) or failed (``None``)."""
        now = self._clock()
        with self._lock:
            group = self._groups.get(uid)
            if group is None:
                if len(self._groups) > 10_000:
                    self._forget(now)
                group = self._groups[uid] = _Group(now, now)
            group.last = now
            if reward is None:
                group.failed += 1
            else:
                group.rewards.append(reward)
                group.values.append(dict(values or {}))

    def _forget(self, now: float) -> None:
        for uid in [u for u, g in self._groups.items() if now - g.first > _KEEP_S]:
            del self._groups[uid]

    def settled(self, uid: str, expected: int, deadline: float) -> tuple[bool, Neutral]:
        """Whether ``uid`` is complete (or waited long enough), and its scored members' means.

        A group this ledger does not hold (a restarted ledger lost it) is settled at once,
        incomplete: its mean is unknown.
        """
        now = self._clock()
        with self._lock:
            group = self._groups.get(uid)
            if group is None:
                return True, group_means([], [], complete=False)
            complete = len(group.rewards) + group.failed >= expected
            quiet = bool(group.rewards) and now - group.last >= _QUIET_S
            done = complete or now >= deadline or quiet
            return done, group_means(group.rewards, group.values, complete=complete)


@dataclass(frozen=True, slots=True)
class LedgerView:
    """What a reward worker needs to know between its calls to the ledger.

    Attributes:
        problem: Why the run must stop (``None``: it goes on).
        open_providers: Providers whose breaker is open or half-open.
    """

    problem: str | None
    open_providers: frozenset[str]


class Ledger:
    """The ledger's state and rules (held by the named actor in Ray, or per process)."""

    def __init__(self, policy: FailurePolicy, describe: Mapping[str, str] | None = None) -> None:
        self.policy = policy
        self._describe = dict(describe or {})
        self.reset()

    def reset(self) -> None:
        """Forget everything (a new run in the same process: tests)."""
        self.guard = FailureGuard(self.policy, self._describe)
        self.groups = GroupRewards()
        self.start_errors: list[str] = []

    async def admit(self, providers: list[str]) -> tuple[str | None, str | None]:
        """Before grading a sample: (why the run must stop, or ``None``; the provider whose
        breaker is open, or ``None``: call them). A blocked sample is recorded here."""
        problem = await self.problem()
        if problem is not None:
            return problem, None
        blocked = self.guard.open_provider(providers)
        if blocked is not None:
            self.guard.record_blocked(blocked)
            return self.guard.tripped, blocked
        return None, None

    async def record(self, outage: dict[str, bool], labels: list[str]) -> str | None:
        """Record one graded sample; the stop message once the failure rate is passed."""
        self.guard.record(outage, labels)
        return self.guard.tripped

    async def record_many(self, entries: list[tuple[dict[str, bool], list[str]]]) -> LedgerView:
        """Record several graded samples (:meth:`record`, in order); the view after them."""
        for outage, labels in entries:
            self.guard.record(outage, labels)
        return self.view_now()

    async def view(self) -> LedgerView:
        return self.view_now()

    def view_now(self) -> LedgerView:
        return LedgerView(self.problem_now(), frozenset(self.guard.open_providers()))

    async def problem(self) -> str | None:
        """Why the run must stop: a worker's start error, or the tripped failure rate."""
        return self.problem_now()

    def problem_now(self) -> str | None:
        """:meth:`problem`, from synchronous code in the same process."""
        if self.start_errors:
            return self.start_errors[0]
        return self.guard.tripped

    def counts_now(self) -> dict[str, int]:
        return {"samples": self.guard.samples, "failed": self.guard.failed, "blocked": self.guard.blocked}

    async def start_failed(self, message: str) -> None:
        self.start_errors.append(message)

    async def counts(self) -> dict[str, int]:
        return self.counts_now()

    async def summary(self) -> str:
        """The failures of the run's last ``failure_window`` samples, by provider and kind."""
        return self.guard.summary()

    async def post(self, uid: str, reward: float | None, values: dict[str, float] | None = None) -> None:
        self.groups.post(uid, reward, values)

    async def neutral(self, uid: str, expected: int, wait_s: float) -> Neutral:
        """The means of ``uid``'s scored members (:class:`Neutral`; reward 0.0 when none was scored).

        Waits until ``expected`` members arrived (scored or failed), ``wait_s`` passed,
        no member arrived for a minute after one was scored, or the run must stop. The
        caller posted its own failure first.
        """
        deadline = time.monotonic() + wait_s
        delay_s = 0.01
        while True:
            done, means = self.groups.settled(uid, expected, deadline)
            if done or self.problem_now() is not None:  # a stopping run: the caller raises
                return means
            await anyio.sleep(delay_s)
            delay_s = min(delay_s * 2, 0.5)


class FailureLedger(Protocol):
    """What a :class:`~openjudge.integrations.scoring.RewardScorer` calls: a :class:`Ledger` in
    the process, or VERL's run-wide named actor (:mod:`openjudge.integrations.verl._ledger`)."""

    async def admit(self, providers: list[str]) -> tuple[str | None, str | None]: ...
    async def record(self, outage: dict[str, bool], labels: list[str]) -> str | None: ...
    async def problem(self) -> str | None: ...
    async def start_failed(self, message: str) -> None: ...
    async def counts(self) -> dict[str, int]: ...
    async def summary(self) -> str: ...
    async def post(self, uid: str, reward: float | None, values: dict[str, float] | None = None) -> None: ...
    async def neutral(self, uid: str, expected: int, wait_s: float) -> Neutral: ...


def process_ledger(policy: FailurePolicy, describe: Mapping[str, str] | None = None) -> FailureLedger:
    """A ledger of this process alone, for one scorer (or one set of TRL reward functions)."""
    return Ledger(policy, describe)
