"""The part of every chat model the core owns: retries, limits, timeouts, usage.

Providers subclass :class:`BaseChatModel` and implement one HTTP attempt
(:meth:`BaseChatModel._attempt`), raising :class:`ChatModelError` classified by
status code. ``achat`` then enforces the provider's policy:

* a concurrency slot and RPM/TPM budget are held per attempt, never across a backoff;
* each attempt has a timeout; retries are bounded by attempts and by elapsed time;
* Retry-After is honoured (capped); otherwise exponential backoff with full jitter;
* 429s shrink the concurrency (AIMD) and successes grow it back.

Everything loop-bound (limiters, clients) is created per running event loop.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

import anyio
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, stop_before_delay
from tenacity.wait import wait_base, wait_random_exponential

from openjudge.models.cache import JudgeCache, cache_key
from openjudge.models.chat_model import ChatResponse, ModelCapabilities, OutputSpec, Sampling
from openjudge.models.errors import ChatModelError
from openjudge.models.limits import ProviderGate
from openjudge.models.loop_local import LoopLocal
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.models.timeouts import timeout_scope
from openjudge.models.usage import TokenUsage

__all__ = ["BaseChatModel", "ChatRequest"]


class _Flight:
    """An identical deterministic call in progress; followers wait for its outcome."""

    __slots__ = ("_done", "_error", "_response")

    def __init__(self) -> None:
        self._done = anyio.Event()
        self._response: ChatResponse | None = None
        self._error: ChatModelError | None = None

    def succeed(self, response: ChatResponse) -> None:
        self._response = response

    def fail(self, error: ChatModelError) -> None:
        self._error = error

    def release(self) -> None:
        self._done.set()

    async def wait(self) -> ChatResponse | None:
        """The shared outcome (a follower spends no requests), or None if the leader gave up."""
        await self._done.wait()
        if self._error is not None:
            err = self._error
            copy = ChatModelError(
                err.message,
                kind=err.kind,
                retryable=err.retryable,
                status_code=err.status_code,
                retry_after=err.retry_after,
                error_type=err.error_type,
            )
            raise copy
        if self._response is None:
            return None
        r = self._response
        return ChatResponse(
            r.content, TokenUsage(0, 0, 0), r.finish_reason, r.logprobs, r.latency_s, r.queue_s, r.model
        )


logger = logging.getLogger(__name__)

_DEFAULT_COMPLETION_ESTIMATE = 512


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One logical chat call, as providers receive it for each attempt."""

    messages: Sequence[Mapping[str, Any]]
    output: OutputSpec | None
    sampling: Sampling
    top_logprobs: int | None

    def estimated_tokens(self) -> int:
        """A cheap upper-ish estimate (4 chars per token) used to reserve TPM budget."""
        chars = 0
        for m in self.messages:
            content = m.get("content")
            if isinstance(content, str):
                chars += len(content)
        return chars // 4 + (self.sampling.max_tokens or _DEFAULT_COMPLETION_ESTIMATE)


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, ChatModelError) and exc.retryable


class _Spent:
    """What one call has spent so far: requests, time inside attempts, time queued for limits."""

    __slots__ = ("busy_s", "queued_s", "requests")

    def __init__(self) -> None:
        self.requests = 0
        self.busy_s = 0.0
        self.queued_s = 0.0


class _WaitRetryAfter(wait_base):
    """Wait what the server asked (capped, with a little jitter), else jittered backoff."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._cap = policy.max_retry_after_s
        self._backoff = wait_random_exponential(multiplier=policy.initial_backoff_s, max=policy.max_backoff_s)

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        if isinstance(exc, ChatModelError) and exc.retry_after is not None:
            # A few percent of jitter keeps clients told the same Retry-After from returning in lockstep.
            return min(self._cap, exc.retry_after) * (1.0 + 0.05 * random.random())
        return float(self._backoff(retry_state))


class BaseChatModel(ABC):
    """A chat model whose calls obey a :class:`ProviderPolicy`.

    Subclasses whose transport already bounds every wait by ``policy.timeout_s`` (an
    HTTP client with connect/read/write/pool timeouts) set ``guards_own_timeout = True``
    to skip the extra timeout scope around each attempt.

    Args:
        model: Model name sent to the server.
        policy: Timeouts, retries and limits; shared by every grader using this object.
        sampling: Default sampling for every call (calls may override fields).
        capabilities: What the backend supports (structured output mode, logprobs).
    """

    guards_own_timeout: bool = False

    def __init__(
        self,
        model: str,
        *,
        policy: ProviderPolicy | None = None,
        sampling: Sampling | None = None,
        capabilities: ModelCapabilities | None = None,
        cache: JudgeCache | None = None,
        dedupe: bool = True,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty model name, e.g. model='gpt-4o-mini'")
        self._model = model
        self.policy = policy or ProviderPolicy()
        self.sampling = sampling or Sampling()
        self._capabilities = capabilities or ModelCapabilities()
        self._gates: LoopLocal[ProviderGate] = LoopLocal(self._new_gate)
        self._usage = TokenUsage()
        self._usage_lock = threading.Lock()
        self.cache = cache
        self.dedupe = dedupe
        self._flights: LoopLocal[dict[str, _Flight]] = LoopLocal(dict)

    @property
    def cache_identity(self) -> str:
        """What distinguishes this backend's replies in cache keys (kind and model; endpoint where known)."""
        return f"{type(self).__qualname__}:{self._model}"

    def _new_gate(self) -> ProviderGate:
        return ProviderGate(self.policy.limits)

    @property
    def model(self) -> str:
        return self._model

    @property
    def capabilities(self) -> ModelCapabilities:
        return self._capabilities

    @property
    def usage(self) -> TokenUsage:
        """Tokens and requests spent through this object so far, over every loop."""
        return self._usage

    @property
    def peak_in_flight(self) -> int:
        """The most attempts this object ever had in flight at once (within one loop)."""
        return max((g.peak_in_flight for g in self._gates.values()), default=0)

    def gate(self) -> ProviderGate:
        """This provider's limits in the running event loop."""
        return self._gates.get()

    @abstractmethod
    async def _attempt(self, request: ChatRequest) -> ChatResponse:
        """Make exactly one request. Raise :class:`ChatModelError` on failure."""

    async def achat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        output: OutputSpec | None = None,
        sampling: Sampling | None = None,
        top_logprobs: int | None = None,
        cache_tag: str = "",
    ) -> ChatResponse:
        """One judge call under the provider's policy.

        Deterministic calls (temperature 0) are served from the cache when one is set,
        and identical ones in flight at the same time are made once (``dedupe``).
        ``cache_tag`` (the caller's name and version) is part of the cache key.
        """
        request = ChatRequest(messages, output, self.sampling.merged(sampling), top_logprobs)
        if request.sampling.temperature != 0 or (self.cache is None and not self.dedupe):
            return await self._call(request)
        key = cache_key(
            provider=self.cache_identity,
            messages=messages,
            output=output,
            sampling=request.sampling,
            top_logprobs=top_logprobs,
            tag=cache_tag,
        )
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit
        if not self.dedupe:
            return self._store(key, await self._call(request))
        flights = self._flights.get()
        while (flight := flights.get(key)) is not None:
            outcome = await flight.wait()
            if outcome is not None:
                return outcome  # computed by the identical call already in flight
            # The leader was cancelled: take over (or follow whoever did).
        flight = flights[key] = _Flight()
        try:
            response = await self._call(request)
        except ChatModelError as exc:
            flight.fail(exc)
            raise
        finally:
            del flights[key]
            flight.release()
        flight.succeed(response)
        return self._store(key, response)

    def with_cache(self, cache: JudgeCache | None) -> Self:
        """Use ``cache`` for this provider's deterministic calls (returns ``self``)."""
        self.cache = cache
        return self

    def _store(self, key: str, response: ChatResponse) -> ChatResponse:
        if self.cache is not None:
            self.cache.put(key, response)
        return response

    async def _call(self, request: ChatRequest) -> ChatResponse:
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
            self._record(TokenUsage(0, 0, attempts.requests))
            raise
        except BaseException:
            # Cancelled calls still spent requests; cancellation is re-raised untouched.
            self._record(TokenUsage(0, 0, attempts.requests))
            raise
        if response.usage.requests != attempts.requests:
            response.usage = TokenUsage(
                response.usage.prompt_tokens, response.usage.completion_tokens, attempts.requests
            )
        self._record(response.usage)
        response.latency_s = attempts.busy_s
        response.queue_s = attempts.queued_s
        if not response.model:
            response.model = self._model
        return response

    async def _retry(
        self, request: ChatRequest, first: ChatModelError, started: float, attempts: _Spent
    ) -> ChatResponse:
        policy = self.policy.retry
        elapsed = time.monotonic() - started
        retrying = AsyncRetrying(
            stop=stop_after_attempt(policy.max_attempts)
            | stop_before_delay(max(0.0, policy.max_elapsed_s - elapsed)),
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

    async def _limited_attempt(self, request: ChatRequest, attempts: _Spent) -> ChatResponse:
        gate = self._gates.get()
        estimate = request.estimated_tokens() if gate.tokens is not None else 0
        if gate.try_acquire():
            began = time.monotonic()
        else:
            queued = time.monotonic()
            await gate.acquire(estimate)
            began = time.monotonic()
            attempts.queued_s += began - queued
        attempts.requests += 1
        try:
            if self.guards_own_timeout:
                response = await self._attempt(request)
            else:
                async with timeout_scope(self.policy.timeout_s):
                    response = await self._attempt(request)
        except TimeoutError:
            # Only our own timeout scope raises this; transports report theirs as ChatModelError.
            raise ChatModelError(
                f"{self._model}: no response within {self.policy.timeout_s:g}s",
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

    def _record(self, usage: TokenUsage) -> None:
        with self._usage_lock:
            self._usage = self._usage + usage

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        logger.info(
            "retrying %s (attempt %d) in %.2fs after %s: %s",
            self._model,
            state.attempt_number,
            wait,
            type(exc).__name__ if exc is not None else "?",
            exc,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._model!r})"
