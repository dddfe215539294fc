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

import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
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

logger = logging.getLogger(__name__)

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
        self._validation: dict[str, float] = {}
        self._lock = threading.Lock()

    def mark_validation(self, uids: Iterable[str]) -> None:
        """These groups are validation prompts: they have ``val_kwargs.n`` members, not ``rollout.n``.

        VERL sends a reward worker neither the phase nor the group size; the trainer's driver
        knows which prompts it is validating (the openjudge replay buffer says so here).
        """
        now = self._clock()
        with self._lock:
            if len(self._validation) > 100_000:
                self._validation = {u: t for u, t in self._validation.items() if now - t <= _KEEP_S}
            for uid in uids:
                self._validation[uid] = now

    def expected(self, uid: str, training: int, validation: int | None) -> int:
        """The members ``uid`` has: ``validation`` for a validation prompt (when given), else ``training``."""
        with self._lock:
            is_validation = uid in self._validation
        return validation if validation is not None and is_validation else training

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

    def failed(self, uids: Iterable[str]) -> int:
        """How many members of these groups failed (posted ``None``)."""
        with self._lock:
            return sum(g.failed for u in uids if (g := self._groups.get(u)) is not None)

    def _forget(self, now: float) -> None:
        for uid in [u for u, g in self._groups.items() if now - g.first > _KEEP_S]:
            del self._groups[uid]
        self._validation = {u: t for u, t in self._validation.items() if now - t <= _KEEP_S}

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
    """The ledger's state and rules (held by the named actor in Ray, or per process).

    Args:
        policy: The breaker and failure-rate thresholds; ``None``: the first worker that
            joins (:meth:`join`) sets them (VERL's driver starts the run's ledger before any
            reward worker has read the options).
        describe: Provider name -> endpoint and model, for messages.
    """

    def __init__(
        self, policy: FailurePolicy | None = None, describe: Mapping[str, str] | None = None
    ) -> None:
        self._policy = policy
        self._describe = dict(describe or {})
        self.reset()

    @property
    def policy(self) -> FailurePolicy:
        return self._policy if self._policy is not None else FailurePolicy()

    def reset(self) -> None:
        """Forget everything (a new run in the same process: tests)."""
        self.guard = FailureGuard(self.policy, self._describe)
        self.groups = GroupRewards()
        self.start_errors: list[str] = []

    def clear(self) -> None:
        """Forget the options too (a new run in the same process: tests)."""
        self._policy, self._describe = None, {}
        self.reset()

    async def join(self, policy: FailurePolicy, describe: Mapping[str, str]) -> None:
        """A worker's options: the first one sets the thresholds; every worker's providers are named.

        Workers of one run read the same options; a worker whose thresholds differ keeps
        the ledger's (with a warning). Each worker adds how to name its providers, so a
        stop message names every judge (endpoint and model), whoever configured it first.
        """
        self.join_now(policy, describe)

    def join_now(self, policy: FailurePolicy, describe: Mapping[str, str]) -> None:
        """:meth:`join`, from synchronous code in the same process."""
        self._describe.update(describe)
        self.guard.name_providers(describe)
        if self._policy is None:
            self._policy = policy
            if self.guard.samples == 0 and self.guard.groups == 0:
                self.guard = FailureGuard(policy, self._describe)
        elif _thresholds(policy) != _thresholds(self._policy):
            logger.warning(
                "openjudge: a worker's failure thresholds %s differ from the run's %s; the run's apply",
                _thresholds(policy),
                _thresholds(self._policy),
            )

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

    async def record_many(
        self,
        entries: list[tuple[dict[str, bool], list[str]]],
        posts: Sequence[tuple[str, float | None, dict[str, float] | None]] = (),
    ) -> LedgerView:
        """Record several graded samples (:meth:`record`, in order) and group rewards
        (:meth:`post`); the view after them."""
        for outage, labels in entries:
            self.guard.record(outage, labels)
        for uid, reward, values in posts:
            self.groups.post(uid, reward, values)
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
        return {
            "samples": self.guard.samples,
            "failed": self.guard.failed,
            "blocked": self.guard.blocked,
            "evicted_groups": self.guard.evicted_groups,
        }

    async def start_failed(self, message: str) -> None:
        self.start_errors.append(message)

    async def counts(self) -> dict[str, int]:
        return self.counts_now()

    async def summary(self) -> str:
        """The failures of the run's last ``failure_window`` samples, by provider and kind."""
        return self.guard.summary()

    async def post(self, uid: str, reward: float | None, values: dict[str, float] | None = None) -> None:
        self.groups.post(uid, reward, values)

    async def failed_members(self, uids: list[str]) -> int:
        """How many members of these groups could not be scored (:meth:`GroupRewards.failed`)."""
        return self.groups.failed(uids)

    async def mark_validation(self, uids: list[str]) -> None:
        """These groups are validation prompts (:meth:`GroupRewards.mark_validation`)."""
        self.groups.mark_validation(uids)

    async def record_groups(self, evicted: int, trained: int, batch: int = 0) -> str | None:
        """Prompt groups of an async trainer, ``evicted`` for a failed member or ``trained``; the
        stop message once too many were evicted (:meth:`FailureGuard.record_groups`)."""
        self.guard.record_groups(evicted, trained, batch)
        return self.problem_now()

    async def neutral(
        self, uid: str, expected: int, wait_s: float, validation_expected: int | None = None
    ) -> Neutral:
        """The means of ``uid``'s scored members (:class:`Neutral`; reward 0.0 when none was scored).

        Waits until the group's members arrived (scored or failed): ``expected``, or
        ``validation_expected`` once the driver said ``uid`` is a validation prompt;
        or ``wait_s`` passed, no member arrived for a minute after one was scored, or the
        run must stop. The caller posted its own failure first.
        """
        deadline = time.monotonic() + wait_s
        delay_s = 0.01
        while True:
            size = self.groups.expected(uid, expected, validation_expected)
            done, means = self.groups.settled(uid, size, deadline)
            if done or self.problem_now() is not None:  # a stopping run: the caller raises
                return means
            await anyio.sleep(delay_s)
            delay_s = min(delay_s * 2, 0.5)


def _thresholds(policy: FailurePolicy) -> tuple[object, ...]:
    """What the ledger applies of a policy (the rest is each worker's own)."""
    return (
        policy.breaker_failures,
        policy.breaker_cooldown_s,
        policy.max_failure_rate,
        policy.failure_window,
    )


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
    async def neutral(
        self, uid: str, expected: int, wait_s: float, validation_expected: int | None = None
    ) -> Neutral: ...


def process_ledger(policy: FailurePolicy, describe: Mapping[str, str] | None = None) -> FailureLedger:
    """A ledger of this process alone, for one scorer (or one set of TRL reward functions)."""
    return Ledger(policy, describe)
