"""The policy engine: retries, limits, timeouts and usage around any transport.

:class:`CallEngine` wraps a :class:`~openjudge.models.transport.Transport` (chat,
reward-model pooling, a local model) and enforces a :class:`ProviderPolicy` on each
logical call:

* a concurrency slot and RPM/TPM budget are held per attempt, never across a backoff,
  from the gate of the transport's connection key;
* each attempt has a timeout (the transport's own, or a scope around it);
* retries are bounded by attempts and by elapsed time; Retry-After is honoured
  (capped), otherwise exponential backoff with full jitter;
* 429s shrink the concurrency (AIMD) and successes grow it back;
* requests and tokens are summed, failed calls included.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Generic, NamedTuple, Protocol, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, stop_before_delay
from tenacity.wait import wait_base, wait_random_exponential

from openjudge.models._errors import ChatModelError
from openjudge.models._limits import ConnectionLimits, ProviderGate
from openjudge.models._loop_local import LoopLocal
from openjudge.models._timeouts import timeout_scope
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.models.transport import Transport
from openjudge.results import TokenUsage

__all__ = ["CallEngine", "Outcome"]

logger = logging.getLogger(__name__)


class _HasUsage(Protocol):
    @property
    def usage(self) -> TokenUsage: ...


RequestT = TypeVar("RequestT")
ResponseT = TypeVar("ResponseT", bound=_HasUsage)


class Outcome(NamedTuple, Generic[ResponseT]):
    """A call that succeeded: the last attempt's response and what the whole call cost.

    Attributes:
        response: The successful attempt's response, as the transport built it.
        requests: Attempts made, the successful one included.
        latency_s: Time spent inside attempts (the backend's time; waits excluded).
        queue_s: Time spent waiting for the connection key's concurrency and rate limits.
    """

    response: ResponseT
    requests: int
    latency_s: float
    queue_s: float


class _Spent:
    """What one call has spent so far: attempts, time inside them, time queued for limits."""

    __slots__ = ("busy_s", "queued_s", "requests")

    def __init__(self) -> None:
        self.requests = 0
        self.busy_s = 0.0
        self.queued_s = 0.0


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, ChatModelError) and exc.retryable


class _WaitRetryAfter(wait_base):
    """Wait what the server asked (capped, with a little jitter), else jittered backoff."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._cap = policy.max_retry_after_s
        self._backoff = wait_random_exponential(multiplier=policy.initial_backoff_s, max=policy.max_backoff_s)

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        if isinstance(exc, ChatModelError) and exc.retry_after_s is not None:
            # A few percent of jitter keeps clients told the same Retry-After from returning in lockstep.
            return min(self._cap, exc.retry_after_s) * (1.0 + 0.05 * random.random())
        return float(self._backoff(retry_state))


class CallEngine(Generic[RequestT, ResponseT]):
    """Runs calls through one transport under one policy.

    Args:
        transport: Makes each attempt.
        policy: Timeouts, retries and limits.
        limits: Where gates live, by connection key. Providers that share one share the
            limits of a common connection key; by default the engine has its own.
        estimate_tokens: The tokens a request may spend, for a TPM budget (reserved up
            front and settled with the reported usage).
    """

    def __init__(
        self,
        transport: Transport[RequestT, ResponseT],
        policy: ProviderPolicy,
        *,
        limits: ConnectionLimits | None = None,
        estimate_tokens: Callable[[RequestT], int] | None = None,
    ) -> None:
        self.transport = transport
        self.policy = policy
        self.limits = limits if limits is not None else ConnectionLimits()
        self._estimate = estimate_tokens
        self._guarded = transport.enforces_timeout  # read once: a transport's nature does not change
        self._gates: LoopLocal[ProviderGate] = LoopLocal(self._new_gate)
        # Running totals as plain ints (prompt, completion, requests): no object built per call.
        # Gate: python -m bench.runner ratios (framework CPU per judge call <= 0.10x raw aiohttp's).
        self._spent = [0, 0, 0]
        self._usage_lock = threading.Lock()

    @property
    def usage(self) -> TokenUsage:
        """Tokens and requests spent through this engine so far, over every loop."""
        with self._usage_lock:
            return TokenUsage(*self._spent)

    def gate(self) -> ProviderGate:
        """The gate of this engine's connection key in the running event loop."""
        return self._gates.get()

    def _new_gate(self) -> ProviderGate:
        return self.limits.gate(self.transport.connection_key, self.policy.limits)

    @property
    def peak_in_flight(self) -> int:
        """The most attempts ever in flight at once on this engine's connection key (one loop)."""
        gates = self.limits.gates(self.transport.connection_key)
        return max((g.peak_in_flight for g in gates), default=0)

    def _add(self, prompt_tokens: int, completion_tokens: int, requests: int) -> None:
        spent = self._spent
        with self._usage_lock:
            spent[0] += prompt_tokens
            spent[1] += completion_tokens
            spent[2] += requests

    async def call(self, request: RequestT) -> Outcome[ResponseT]:
        """One logical call: attempts until one succeeds or the policy gives up.

        Raises:
            ChatModelError: The last attempt's error, with ``requests`` set to the attempts made.
        """
        started = time.monotonic()
        attempts = _Spent()
        try:
            try:
                response = await self._limited_attempt(request, attempts)
            except ChatModelError as first:
                if not first.retryable or self.policy.retry.max_attempts == 1:
                    raise
                response = await self._retry(request, first, started, attempts)
        except ChatModelError as exc:
            exc.requests = attempts.requests
            self._add(0, 0, attempts.requests)
            raise
        except BaseException:
            # Cancelled calls still spent requests; cancellation is re-raised untouched.
            self._add(0, 0, attempts.requests)
            raise
        usage = response.usage
        requests = attempts.requests
        self._add(usage.prompt_tokens, usage.completion_tokens, requests)
        return Outcome(response, requests, attempts.busy_s, attempts.queued_s)

    async def _retry(
        self, request: RequestT, first: ChatModelError, started: float, attempts: _Spent
    ) -> ResponseT:
        policy = self.policy.retry
        elapsed_s = time.monotonic() - started
        retrying = AsyncRetrying(
            stop=stop_after_attempt(policy.max_attempts)
            | stop_before_delay(max(0.0, policy.max_elapsed_s - elapsed_s)),
            wait=_WaitRetryAfter(policy),
            retry=retry_if_exception(_is_retryable),
            before_sleep=self._log_retry,
            reraise=True,
        )
        pending: ChatModelError | None = first
        async for attempt in retrying:
            with attempt:
                if pending is not None:
                    # Replay the first attempt's failure so tenacity owns every wait and the caps.
                    failed, pending = pending, None
                    raise failed
                return await self._limited_attempt(request, attempts)
        raise AssertionError("unreachable: tenacity reraises the last error")

    async def _limited_attempt(self, request: RequestT, attempts: _Spent) -> ResponseT:
        transport = self.transport
        gate = self._gates.get()
        estimate = self._estimate(request) if gate.tokens is not None and self._estimate is not None else 0
        if gate.try_acquire():
            began = time.monotonic()
        else:
            queued_at = time.monotonic()
            await gate.acquire(estimate)
            began = time.monotonic()
            attempts.queued_s += began - queued_at
        attempts.requests += 1
        timeout_s = self.policy.timeout_s
        try:
            if self._guarded:
                response = await transport.attempt(request, timeout_s)
            else:
                async with timeout_scope(timeout_s):
                    response = await transport.attempt(request, timeout_s)
        except TimeoutError:
            # Only our own timeout scope raises this; transports report theirs as ChatModelError.
            raise ChatModelError(
                f"{transport.model_name or 'model'}: no response within {timeout_s:g}s",
                kind="timeout",
                retryable=True,
                error_type="TimeoutError",
            ) from None
        except ChatModelError as exc:
            if exc.status_code == 429:
                gate.on_rate_limited()
            raise
        finally:
            gate.release()
            attempts.busy_s += time.monotonic() - began
        gate.on_success()
        if gate.tokens is not None:
            gate.settle_tokens(estimate, response.usage.total_tokens)
        return response

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        wait_s = state.next_action.sleep if state.next_action is not None else 0.0
        logger.info(
            "retrying %s (attempt %d) in %.2fs after %s: %s",
            self.transport.model_name,
            state.attempt_number,
            wait_s,
            type(exc).__name__ if exc is not None else "?",
            exc,
        )
