"""A chat model composed from a transport and the core's engine.

:class:`ChatClient` is what every provider returns: the backend supplies a
:class:`~openjudge.models.transport.ChatTransport` (one attempt), and the core
composes around it

* the policy engine (:class:`~openjudge.models.engine.CallEngine`: retries, limits by
  connection key, timeouts, usage),
* in-flight deduplication of identical deterministic calls, and
* the judge cache (:class:`~openjudge.models.cache.JudgeCache`), keyed on the body the
  transport would send.

Only deterministic calls (temperature 0) are deduplicated or cached.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

from openjudge.models._errors import ChatModelError
from openjudge.models._inflight import Flight
from openjudge.models._limits import ConnectionLimits, ProviderGate
from openjudge.models._loop_local import LoopLocal
from openjudge.models.cache import JudgeCache, cache_key
from openjudge.models.chat_model import ChatRequest, ChatResponse, ModelCapabilities, OutputSpec, Sampling
from openjudge.models.engine import CallEngine, Outcome
from openjudge.models.policy import ProviderPolicy
from openjudge.models.transport import ChatTransport
from openjudge.results import TokenUsage

__all__ = ["ChatClient"]


class ChatClient:
    """A chat model: a transport under a policy, with deduplication and an optional cache.

    Implements :class:`~openjudge.models.chat_model.ChatModel` and
    :class:`~openjudge.models.chat_model.CachingChatModel`.

    Args:
        transport: Makes each attempt (an HTTP endpoint, litellm, an in-process model).
        policy: Timeouts, retries and limits; shared by every grader using this object.
        sampling: Default sampling for every call (calls may override fields).
        capabilities: What the backend supports (structured output mode, logprobs).
        cache: Serve and store deterministic replies (see :meth:`with_cache`).
        dedupe: Make identical deterministic calls that are in flight at once only once.
        limits: Share limits with other providers: gates are per connection key.
    """

    def __init__(
        self,
        transport: ChatTransport,
        *,
        policy: ProviderPolicy | None = None,
        sampling: Sampling | None = None,
        capabilities: ModelCapabilities | None = None,
        cache: JudgeCache | None = None,
        dedupe: bool = True,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.transport = transport
        self.policy = policy or ProviderPolicy()
        self.sampling = sampling or Sampling()
        self._capabilities = capabilities or ModelCapabilities()
        self._engine: CallEngine[ChatRequest, ChatResponse] = CallEngine(
            transport, self.policy, limits=limits, estimate_tokens=ChatRequest.estimated_tokens
        )
        self.cache = cache
        self.dedupe = dedupe
        self._flights: LoopLocal[dict[str, Flight]] = LoopLocal(dict)

    @property
    def model_name(self) -> str:
        return self.transport.model_name

    @property
    def capabilities(self) -> ModelCapabilities:
        return self._capabilities

    @property
    def usage(self) -> TokenUsage:
        """Tokens and requests spent through this object so far, over every loop."""
        return self._engine.usage

    @property
    def limits(self) -> ConnectionLimits:
        """The limits this model's connection key draws from."""
        return self._engine.limits

    @property
    def peak_in_flight(self) -> int:
        """The most attempts ever in flight at once on this model's connection key (one loop)."""
        return self._engine.peak_in_flight

    def gate(self) -> ProviderGate:
        """This model's limits in the running event loop."""
        return self._engine.gate()

    def with_cache(self, cache: JudgeCache | None) -> Self:
        """Use ``cache`` for this model's deterministic calls (returns ``self``)."""
        self.cache = cache
        return self

    async def achat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        output: OutputSpec | None = None,
        sampling: Sampling | None = None,
        top_logprobs: int | None = None,
        cache_tag: str = "",
    ) -> ChatResponse:
        """One chat call under the policy.

        ``cache_tag`` (the caller's name and version) is part of the cache key. A reply
        that carries a ``cache_key`` is in the cache until its caller settles it as
        unusable (:meth:`asettle`).

        Raises:
            ChatModelError: The call failed after the policy's retries.
        """
        request = ChatRequest(messages, output, self.sampling.merged(sampling), top_logprobs)
        if request.sampling.temperature != 0 or (self.cache is None and not self.dedupe):
            # One frame fewer per call. Gate: python -m bench.runner ratios (framework <= 0.10x raw aiohttp).
            return self._response(await self._engine.call(request), None)
        body = self.transport.wire_body(request)
        if body is None:
            return self._response(await self._engine.call(request), None)
        key = cache_key(endpoint=self.transport.endpoint, body=body, tag=cache_tag)
        if self.cache is not None:
            hit = await self.cache.aget(key)
            if hit is not None:
                return hit
        if not self.dedupe:
            return await self._call(request, key)
        flights = self._flights.get()
        while (flight := flights.get(key)) is not None:
            outcome = await flight.wait()
            if outcome is not None:
                return outcome  # computed by the identical call already in flight
            # The leader was cancelled: take over (or follow whoever did).
        flight = flights[key] = Flight()
        try:
            response = await self._call(request, key)
        except ChatModelError as exc:
            flight.fail(exc)
            raise
        finally:
            del flights[key]
            flight.release()
        flight.succeed(response)
        return response

    async def asettle(self, response: ChatResponse, *, usable: bool) -> None:
        """Tell the cache whether the caller could use ``response``.

        An unusable reply (fresh or served from the cache) is evicted, so the next
        identical call asks the backend again. Replies without a ``cache_key`` (not
        cacheable, or no cache) are ignored.
        """
        key = response.cache_key
        if self.cache is not None and key is not None and not usable:
            await self.cache.adelete(key)

    async def _call(self, request: ChatRequest, key: str | None) -> ChatResponse:
        response = self._response(await self._engine.call(request), key)
        if response.cache_key is not None and self.cache is not None:
            # Stored before the identical calls that follow this one are released, so none of
            # them asks again; evicted if the caller finds it unusable.
            await self.cache.aput(response.cache_key, response)
        return response

    def _response(self, outcome: Outcome[ChatResponse], key: str | None) -> ChatResponse:
        """The call's response: the last attempt's, with the whole call's usage and timing."""
        r = outcome.response
        usage = r.usage
        if usage.requests != outcome.requests:
            usage = TokenUsage(usage.prompt_tokens, usage.completion_tokens, outcome.requests)
        return ChatResponse(
            r.content,
            usage,
            r.finish_reason,
            r.logprobs,
            outcome.latency_s,
            r.model or self.transport.model_name,
            False,
            key if self.cache is not None else None,
            outcome.queue_s,
        )

    async def aclose(self) -> None:
        """Close the transport's clients of the running loop (others close with their loops)."""
        await self.transport.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model_name!r}, endpoint={self.transport.endpoint!r})"
