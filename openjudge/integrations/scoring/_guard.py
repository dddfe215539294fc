"""Judge outages: a circuit breaker per provider and a ceiling on the failure rate.

A judge that is down for minutes would otherwise cost every (sample, grader) pair its
full timeout times its attempts, and then train on fallback rewards. The guard, one per
worker process, watches each sample's outcome:

* **Breaker.** ``breaker_failures`` consecutive samples whose calls to one provider
  failed with a provider error or a timeout open that provider's breaker: for
  ``breaker_cooldown_s`` its samples fail at once, with no call. Then one sample probes
  the provider; success closes the breaker, failure opens it again.
* **Failure rate.** Once ``failure_window`` samples have been seen, more than
  ``max_failure_rate`` failed among the last ``failure_window`` trips the guard: every
  later sample raises :class:`FailureRateExceeded`, whose message names the providers
  and graders that failed and how often. Training stops instead of learning from
  dropped or fallback rewards.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from openjudge.errors import FailureRateExceeded, SampleFailed
from openjudge.integrations.scoring._settings import FailurePolicy
from openjudge.models._errors import REFUSED_MARK
from openjudge.results import GraderError

__all__ = ["OUTAGE_KINDS", "REFUSED_MARK", "FailureGuard", "FailureRateExceeded", "SampleFailed", "is_outage"]

OUTAGE_KINDS = frozenset({"provider_error", "timeout"})
"""Error kinds that may say the judge itself is unreachable or failing (they feed the breaker)."""

_FINAL_STATUS = re.compile(r"\bHTTP (4\d\d)\b")
_RETRYABLE_4XX = frozenset({"408", "409", "429"})


def is_outage(error: GraderError) -> bool:
    """Whether ``error`` says the judge is down (feeds the breaker), not that one request was refused.

    A provider error carrying a final 4xx status (400 context too long, 401, 404 unknown
    model, 422, ...) is one request the judge refused: a retry cannot fix it and the
    judge is up, so it never opens the breaker. The providers give such statuses as
    ``HTTP <status>`` in the message (:func:`openjudge.providers._errors.status_error`); VERL's
    router hides them behind a 500, which :mod:`openjudge.integrations.verl._hosted_judge` resolves.
    """
    if error.kind not in OUTAGE_KINDS or REFUSED_MARK in error.message:
        return False
    status = _FINAL_STATUS.search(error.message)
    return status is None or status.group(1) in _RETRYABLE_4XX


@dataclass(slots=True)
class _Breaker:
    consecutive: int = 0
    open_until: float = 0.0
    probe_started: float | None = None


class FailureGuard:
    """Breakers per provider and the failure-rate ceiling of one worker process.

    Args:
        policy: The thresholds.
        describe: Provider name -> how to name it in messages (endpoint and model).
        clock: Monotonic seconds (tests pass a fake clock).
    """

    def __init__(
        self,
        policy: FailurePolicy,
        describe: Mapping[str, str] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.policy = policy
        self._describe = dict(describe or {})
        self._clock = clock
        self._lock = threading.Lock()
        self._breakers: dict[str, _Breaker] = {}
        self._window: deque[tuple[str, ...]] = deque(maxlen=policy.failure_window)
        self._failed_in_window = 0
        self._tripped: str | None = None
        self.samples = 0
        self.failed = 0
        self.blocked = 0
        self._steps: deque[tuple[int, int]] = deque(maxlen=10_000)  # (evicted, trained) per sampled step
        self._open_evicted = 0
        self.groups = 0
        self.evicted_groups = 0

    def name_providers(self, describe: Mapping[str, str]) -> None:
        """Add how to name providers in messages (each worker knows the endpoints of its own YAML)."""
        with self._lock:
            self._describe.update(describe)

    @property
    def tripped(self) -> str | None:
        """The stop message once the ceiling has been passed, else ``None``."""
        return self._tripped

    def check(self) -> None:
        """Raise :class:`FailureRateExceeded` once the ceiling has been passed."""
        if self._tripped is not None:
            raise FailureRateExceeded(self._tripped)

    def open_provider(self, providers: Iterable[str]) -> str | None:
        """The first of ``providers`` whose breaker is open (``None``: call them).

        After the cooldown one caller is let through as the probe; the others keep
        failing fast until the probe's outcome is recorded (or a cooldown passes).
        """
        if self.policy.breaker_failures == 0:
            return None
        now = self._clock()
        with self._lock:
            for name in providers:
                b = self._breakers.get(name)
                if b is None or b.consecutive < self.policy.breaker_failures:
                    continue
                if now < b.open_until:
                    return name
                if b.probe_started is not None and now - b.probe_started < self.policy.breaker_cooldown_s:
                    return name
                b.probe_started = now  # this caller probes
        return None

    def record(self, outage: Mapping[str, bool], failures: Iterable[str]) -> None:
        """Record one graded sample.

        Args:
            outage: For each provider the sample called: whether a call failed with a
                provider error or a timeout.
            failures: One ``"<provider or grader>: <kind>"`` label per failed grader when
                the sample's reward failed; empty when it was scored.
        """
        now = self._clock()
        labels = tuple(failures)
        with self._lock:
            for name, down in outage.items():
                b = self._breakers.setdefault(name, _Breaker())
                b.probe_started = None
                if down:
                    b.consecutive += 1
                    if b.consecutive >= self.policy.breaker_failures > 0:
                        b.open_until = now + self.policy.breaker_cooldown_s
                else:
                    b.consecutive = 0
            self._count(labels)

    def record_blocked(self, provider: str) -> None:
        """Record a sample failed fast because ``provider``'s breaker was open."""
        with self._lock:
            self.blocked += 1
            self._count((f"{provider}: circuit_open",))

    def _count(self, labels: tuple[str, ...]) -> None:
        self.samples += 1
        if labels:
            self.failed += 1
        window = self._window
        if len(window) == window.maxlen and window[0]:
            self._failed_in_window -= 1
        window.append(labels)
        if labels:
            self._failed_in_window += 1
        limit = self.policy.max_failure_rate
        if (
            self._tripped is None
            and limit is not None
            and len(window) == window.maxlen
            and self._failed_in_window > limit * len(window)
        ):
            self._tripped = self._message()

    def record_groups(self, evicted: int, trained: int, batch: int = 0) -> None:
        """Record prompt groups of an async trainer: ``evicted`` for a failed member, ``trained``.

        VERL's async trainers evict a whole group when one member was dropped and generate a
        new prompt instead, so under ``on_failure=drop`` a few failed samples discard many
        groups (with ``n`` = 8 and 5 % of samples failing, a third of them), biased against
        the prompts whose answers tend to fail the judge. The buffer reports evictions as they
        happen and the step's ``trained`` groups when it samples (which closes the step);
        ``batch`` is what the open step will train. The evicted share is measured over whole
        steps, the newest first, until they hold ``failure_window`` groups (evictions come
        before the step's trained groups, so a window cut inside a step would read high);
        above ``max_failure_rate`` the guard trips, as it does for failed samples.
        """
        with self._lock:
            self.evicted_groups += evicted
            self.groups += evicted + trained
            self._open_evicted += evicted
            if trained:
                self._steps.append((self._open_evicted, trained))
                self._open_evicted = 0
            evicted_in, total = self._open_evicted, (self._open_evicted + batch if self._open_evicted else 0)
            for step_evicted, step_trained in reversed(self._steps):
                if total >= self.policy.failure_window:
                    break
                evicted_in, total = evicted_in + step_evicted, total + step_evicted + step_trained
            limit = self.policy.max_failure_rate
            if (
                self._tripped is None
                and limit is not None
                and total >= self.policy.failure_window
                and evicted_in > limit * total
            ):
                self._tripped = (
                    f"openjudge: {evicted_in} of the last {total} prompt groups were evicted for a failed "
                    f"member, above max_failure_rate={limit} (the async trainer discards the whole group and "
                    f"generates a new prompt; recent sample failures: {self._causes()}). Stopping instead of "
                    "training on the groups the judge happened to score: fix the judge, or use "
                    "on_failure=neutral, which keeps the group and gives the failed member zero advantage"
                )

    def summary(self) -> str:
        """``"K of the last M samples failed (<provider> [<endpoint, model>]: <count> <kind>; ...)"``."""
        with self._lock:
            return (
                f"{self._failed_in_window} of the last {len(self._window)} samples failed ({self._causes()})"
            )

    def _causes(self) -> str:
        causes: Counter[str] = Counter(label for labels in self._window for label in labels)
        named = []
        for label, count in causes.most_common():
            source, _, kind = label.partition(": ")
            where = self._describe.get(source)
            named.append(f"{source}{f' [{where}]' if where else ''}: {count} {kind}")
        return "; ".join(named) or "no failure"

    def _message(self) -> str:
        return (
            f"openjudge: {self._failed_in_window} of the last {len(self._window)} samples failed, above "
            f"max_failure_rate={self.policy.max_failure_rate} ({self._causes()}). Stopping instead of "
            "training on failed judgements: fix the judge, then resume from the last checkpoint (or raise "
            "+reward.openjudge.max_failure_rate)."
        )

    def open_providers(self) -> list[str]:
        """Providers whose breaker is open or half-open (their samples must ask :meth:`open_provider`)."""
        limit = self.policy.breaker_failures
        with self._lock:
            return [n for n, b in self._breakers.items() if limit > 0 and b.consecutive >= limit]

    def breaker_open(self, provider: str) -> bool:
        """Whether ``provider``'s breaker is open now (for reports and tests)."""
        b = self._breakers.get(provider)
        return b is not None and b.consecutive >= self.policy.breaker_failures > 0
