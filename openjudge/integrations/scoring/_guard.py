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
