"""A chat model composed from a transport and the core's engine.

:class:`ChatClient` is what every provider returns: the backend supplies a
:class:`~openjudge.models.transport.ChatTransport` (one attempt), and the core
composes around it

* the policy engine (:class:`~openjudge.models.engine.CallEngine`: retries, limits by
  connection key, timeouts, usage),
* in-flight deduplication of identical deterministic calls, and
* the judge cache (:class:`~openjudge.models.cache.JudgeCache`), keyed on the body the
  transport would send and the identity of the weights behind the endpoint
  (:mod:`openjudge.models._served_identity`).

Only deterministic calls (temperature 0) are deduplicated or cached.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Self

from openjudge.models._errors import ChatModelError
from openjudge.models._inflight import Flight
from openjudge.models._limits import ConnectionLimits, ProviderGate
from openjudge.models._loop_local import LoopLocal
from openjudge.models._served_identity import Lookup, ServedIdentity
from openjudge.models.cache import JudgeCache, cache_key
from openjudge.models.chat_model import ChatRequest, ChatResponse, ModelCapabilities, OutputSpec, Sampling
from openjudge.models.engine import CallEngine, Outcome
from openjudge.models.policy import ProviderPolicy
from openjudge.models.transport import ChatTransport
from openjudge.results import TokenUsage

__all__ = ["ChatClient"]


class _Store(NamedTuple):
    """What a cacheable call's reply is stored under: its body, its caller's tag, and the
    identity of the weights behind the endpoint."""

    body: bytes
    tag: str
    served: ServedIdentity


_PROBE_TIMEOUT_S = 10.0
"""The longest a server is asked which weights it serves (once per process; see
:mod:`openjudge.models._served_identity`)."""


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
        self._probe_timeout_s = min(self.policy.timeout_s, _PROBE_TIMEOUT_S)

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
        if self.cache is None:
            return await self._deduped(request, key, None)
        served = self.cache.served(self.transport)
        known = served.known()
        lookup = (
            Lookup(known)
            if known is not None
            else await served.lookup(self._probe_timeout_s, functools.partial(self._holds, body, cache_tag))
        )
        if lookup.identity is not None:
            hit = await self.cache.aget(
                cache_key(
                    endpoint=self.transport.endpoint, body=body, tag=cache_tag, identity=lookup.identity
                )
            )
            if hit is not None:
                return hit
        else:
            self.cache.count_miss()
        try:
            response = await self._deduped(request, key, _Store(body, cache_tag, served))
        except BaseException:
            if lookup.witness:
                served.released()
            raise
        if lookup.witness:
            served.observed(response.system_fingerprint, witness=True)
        return response

    async def _deduped(self, request: ChatRequest, key: str, store: _Store | None) -> ChatResponse:
        """The call, made once for identical calls in flight at once (``key``); ``store``:
        what to store its reply under, if it is cacheable."""
        if not self.dedupe:
            return await self._call(request, store)
        flights = self._flights.get()
        while (flight := flights.get(key)) is not None:
            outcome = await flight.wait()
            if outcome is not None:
                return outcome  # computed by the identical call already in flight
            # The leader was cancelled: take over (or follow whoever did).
        flight = flights[key] = Flight()
        try:
            response = await self._call(request, store)
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

    async def _call(self, request: ChatRequest, store: _Store | None) -> ChatResponse:
        response = self._response(await self._engine.call(request), store)
        if store is not None:
            store.served.observed(response.system_fingerprint, witness=False)
            if response.cache_key is not None and self.cache is not None:
                # Stored before the identical calls that follow this one are released, so none of
                # them asks again; evicted if the caller finds it unusable.
                card = store.served.card
                stored_for = None if card is None else self._request_key(store.body, store.tag, card)
                await self.cache.aput(response.cache_key, response, request=stored_for)
        return response

    async def _holds(self, body: bytes, tag: str, card: str) -> bool:
        """Whether the cache holds a reply to this request from a server with model card ``card``."""
        return self.cache is not None and await self.cache.aholds(self._request_key(body, tag, card))

    def _request_key(self, body: bytes, tag: str, card: str) -> str:
        """The key of a request to the server with model card ``card``, whatever fingerprint
        its reply comes with (:meth:`JudgeCache.aholds`)."""
        return cache_key(endpoint=self.transport.endpoint, body=body, tag=tag, identity=card)

    def _response(self, outcome: Outcome[ChatResponse], store: _Store | None) -> ChatResponse:
        """The call's response: the last attempt's, with the whole call's usage and timing, and
        the key it is stored under (by the identity of the weights that gave it)."""
        r = outcome.response
        usage = r.usage
        if usage.requests != outcome.requests:
            usage = TokenUsage(usage.prompt_tokens, usage.completion_tokens, outcome.requests)
        key = None
        if store is not None:
            identity = store.served.identity_of(r.system_fingerprint)
            if identity is not None:
                key = cache_key(
                    endpoint=self.transport.endpoint, body=store.body, tag=store.tag, identity=identity
                )
        return ChatResponse(
            r.content,
            usage,
            r.finish_reason,
            r.logprobs,
            outcome.latency_s,
            r.model or self.transport.model_name,
            False,
            key,
            outcome.queue_s,
            r.system_fingerprint,
        )

    async def aclose(self) -> None:
        """Close the transport's clients of the running loop (others close with their loops)."""
        await self.transport.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model_name!r}, endpoint={self.transport.endpoint!r})"
