"""Concurrency and rate limits a provider enforces on every attempt.

* :class:`TokenBucket`: requests- or tokens-per-minute, waiting (never failing) for budget.
* :class:`ProviderGate`: one connection's concurrency limiter (with AIMD on 429), RPM and
  TPM buckets, and in-flight counters. It must be used inside one event loop.
* :class:`ConnectionLimits`: the gates of every connection key, one per event loop.
  A provider has its own unless it is given a shared one (a job config shares one
  between all its providers), so two providers that reach the same endpoint with the
  same model and key share one budget.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque

import anyio

from openjudge.models._loop_local import LoopLocal
from openjudge.models.policy import ProviderLimits

__all__ = ["ConcurrencyLimiter", "ConnectionLimits", "ProviderGate", "TokenBucket"]

logger = logging.getLogger(__name__)


class TokenBucket:
    """A token bucket: ``rate`` tokens per second, holding at most ``capacity``.

    Waiters are served in order (FIFO through an anyio lock). A request larger than the
    capacity waits for a full bucket instead of forever.
    """

    def __init__(self, rate_per_s: float, capacity: float) -> None:
        if rate_per_s <= 0 or capacity <= 0:
            raise ValueError("token bucket rate and capacity must be positive")
        self.rate = rate_per_s
        self.capacity = capacity
        self._tokens = capacity
        self._stamp = time.monotonic()
        self._lock = anyio.Lock()

    @classmethod
    def per_minute(cls, per_minute: float) -> TokenBucket:
        """A bucket for a per-minute budget, allowing a burst of one second's worth."""
        rate = per_minute / 60.0
        return cls(rate, max(1.0, rate))

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(self.capacity, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now

    async def acquire(self, amount: float = 1.0) -> None:
        amount = min(amount, self.capacity)
        async with self._lock:
            while True:
                self._refill()
                if self._tokens >= amount:
                    self._tokens -= amount
                    return
                await anyio.sleep((amount - self._tokens) / self.rate)

    def settle(self, delta: float) -> None:
        """Correct a reservation: ``delta`` = actual - reserved (negative refunds)."""
        self._refill()
        self._tokens = min(self.capacity, self._tokens - delta)


class ConcurrencyLimiter:
    """A FIFO concurrency limiter whose size can change while in use (for AIMD).

    Unlike ``anyio.CapacityLimiter`` it takes a free slot without yielding to the event
    loop; that checkpoint was a measurable share of the per-call cost. Waiters are
    woken in order, and a waiter cancelled after being handed a slot passes it on.
    """

    def __init__(self, total: int) -> None:
        if total < 1:
            raise ValueError("a concurrency limit must be >= 1")
        self._total = total
        self.borrowed = 0
        self._waiters: deque[anyio.Event] = deque()

    @property
    def total_tokens(self) -> int:
        return self._total

    @total_tokens.setter
    def total_tokens(self, value: int) -> None:
        self._total = max(1, int(value))
        self._wake()

    def try_acquire(self) -> bool:
        """Take a free slot if there is one and nobody is queued."""
        if self.borrowed < self._total and not self._waiters:
            self.borrowed += 1
            return True
        return False

    async def acquire(self) -> None:
        if self.borrowed < self._total and not self._waiters:
            self.borrowed += 1
            return
        granted = anyio.Event()
        self._waiters.append(granted)
        try:
            await granted.wait()
        except BaseException:
            if granted.is_set():
                self.release()  # the slot was ours already: hand it on
            else:
                self._waiters.remove(granted)
            raise

    def release(self) -> None:
        self.borrowed -= 1
        if self._waiters:
            self._wake()

    def _wake(self) -> None:
        while self._waiters and self.borrowed < self._total:
            self.borrowed += 1
            self._waiters.popleft().set()


class ProviderGate:
    """The limits of one provider within one event loop.

    Attributes:
        in_flight: Attempts currently holding a concurrency slot.
        peak_in_flight: The most ever held at once.
    """

    _DECREASE_COOLDOWN_S = 1.0

    def __init__(self, limits: ProviderLimits) -> None:
        self.limits = limits
        self.concurrency = ConcurrencyLimiter(limits.max_concurrency)
        self.requests = TokenBucket.per_minute(limits.rpm) if limits.rpm else None
        self.tokens = TokenBucket.per_minute(limits.tpm) if limits.tpm else None
        self.in_flight = 0
        self.peak_in_flight = 0
        self._adaptive = limits.adaptive
        # Below the configured cap after a decrease: only then do successes count (read per call).
        self._growing = False
        self._successes = 0
        self._last_decrease = -math.inf

    def try_acquire(self) -> bool:
        """Take a free slot at once if no rate budget applies and one is free (no await)."""
        if self.requests is not None or self.tokens is not None:
            return False
        if not self.concurrency.try_acquire():
            return False
        self.in_flight += 1
        if self.in_flight > self.peak_in_flight:
            self.peak_in_flight = self.in_flight
        return True

    async def acquire(self, estimated_tokens: int) -> None:
        """Wait for rate budget, then take one concurrency slot (release it with :meth:`release`)."""
        if self.requests is not None:
            await self.requests.acquire(1.0)
        if self.tokens is not None:
            await self.tokens.acquire(float(estimated_tokens))
        await self.concurrency.acquire()
        self.in_flight += 1
        if self.in_flight > self.peak_in_flight:
            self.peak_in_flight = self.in_flight

    def release(self) -> None:
        self.in_flight -= 1
        self.concurrency.release()

    def settle_tokens(self, estimated: int, actual: int) -> None:
        if self.tokens is not None:
            self.tokens.settle(float(actual - estimated))

    def on_success(self) -> None:
        """Additive increase: one more slot per window of successes, up to the configured cap."""
        if not self._growing:
            return
        current = int(self.concurrency.total_tokens)
        self._successes += 1
        if self._successes >= current:
            self._successes = 0
            self.concurrency.total_tokens = current + 1
            self._growing = current + 1 < self.limits.max_concurrency

    def on_rate_limited(self) -> None:
        """Multiplicative decrease on a 429, at most once per cooldown window."""
        if not self._adaptive:
            return
        now = time.monotonic()
        if now - self._last_decrease < self._DECREASE_COOLDOWN_S:
            return
        self._last_decrease = now
        self._successes = 0
        current = int(self.concurrency.total_tokens)
        self.concurrency.total_tokens = max(1, current // 2)
        self._growing = self.concurrency.total_tokens < self.limits.max_concurrency


class ConnectionLimits:
    """Gates by connection key, per event loop.

    The first provider to use a connection key decides its limits; a later one that
    declares different limits for the same key is told so in the log and shares them.
    """

    def __init__(self) -> None:
        self._gates: LoopLocal[dict[str, ProviderGate]] = LoopLocal(dict)
        self._declared: dict[str, ProviderLimits] = {}

    def gate(self, key: str, limits: ProviderLimits) -> ProviderGate:
        """The gate of ``key`` in the running event loop."""
        gates = self._gates.get()
        gate = gates.get(key)
        if gate is None:
            first = self._declared.setdefault(key, limits)
            if first != limits:
                logger.warning(
                    "two providers reach the same endpoint, model and key with different limits; "
                    "the first's apply to both (%s)",
                    first,
                )
            gate = gates[key] = ProviderGate(first)
        return gate

    def gates(self, key: str) -> list[ProviderGate]:
        """The gates of ``key`` in every loop still alive."""
        return [gate for per_loop in self._gates.values() if (gate := per_loop.get(key)) is not None]
