"""Which weights answer behind an endpoint: the part of a judge-cache key a name cannot give.

Two servers can answer to the same URL and model name with different weights (a test
judge swapped for the real one, a judge redeployed after retraining). Where the server
says what it serves, the judge cache keys replies on it too (:func:`~openjudge.models.cache.cache_key`'s
``identity``), so verdicts stay with the judge that gave them. Two sources, each read
once per endpoint and process (a cache keeps one :class:`ServedIdentity` per endpoint and
model: :meth:`~openjudge.models.cache.JudgeCache.served`), never with an extra call per request:

* **the model card**: what the transport's :meth:`IdentifiesServedModel.served_identity`
  reads from the server (``GET /models`` for an OpenAI-compatible one), asked once; a
  failure to ask (the server down) is asked again after :data:`RETRY_AFTER_S`, and
  meanwhile calls are neither served from nor stored in the cache;
* **the replies' ``system_fingerprint``**: known only from a reply. Until the first reply
  of the process, a call with no reply stored for its request (under any fingerprint)
  goes to the server at once; a call with one stored must wait: the first such call is a
  *witness* that goes to the server whatever the cache holds, and the others wait for
  the first reply (the witness's or any other call's; one judge latency, once), then look
  up under the fingerprint it brought. Every reply is stored under the fingerprint it came
  with, and the latest one is what later calls look up under.

Only a stored verdict is ever waited for: a request that hangs the judge holds up no call
that has nothing stored (all of them, in training), and a rerun's stored verdicts are
released by whichever reply comes first.

Transports that do not implement :class:`IdentifiesServedModel` (in-process models, whose
endpoint names their checkpoint; litellm routes) contribute nothing: no probe, no witness.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import anyio

from openjudge.models._loop_local import LoopLocal

__all__ = ["RETRY_AFTER_S", "IdentifiesServedModel", "Lookup", "ServedIdentity"]

RETRY_AFTER_S = 30.0
"""How long after a failed probe the server is asked again (calls bypass the cache meanwhile)."""


@runtime_checkable
class IdentifiesServedModel(Protocol):
    """A transport that can say which weights its endpoint serves."""

    async def served_identity(self, timeout_s: float) -> str | None:
        """What identifies the weights behind this endpoint and model name.

        ``""`` when the server does not say; ``None`` when it cannot be asked now (a
        connection failure, a timeout, a 5xx): the caller asks again later.
        """
        ...


@dataclass(frozen=True, slots=True)
class Lookup:
    """How one cached call uses the cache.

    Attributes:
        identity: The identity to look replies up under; ``None``: do not look up.
        witness: This call's reply tells the process the server's ``system_fingerprint``:
            report it with :meth:`ServedIdentity.observed` (or :meth:`ServedIdentity.released`).
    """

    identity: str | None
    witness: bool = False


_NOT_LEARNED = object()


class ServedIdentity:
    """The identity of the weights behind one chat model's endpoint, as this process knows it.

    Args:
        transport: The transport that asks the server (the first chat model to use the
            endpoint); one that does not identify its model contributes ``""`` and needs
            no witness.
    """

    def __init__(self, transport: object) -> None:
        self._probe = transport if isinstance(transport, IdentifiesServedModel) else None
        self._card: str | None = None if self._probe is not None else ""
        self._failed_at: float | None = None
        self._fingerprint: object = _NOT_LEARNED if self._probe is not None else None
        self._probe_locks: LoopLocal[anyio.Lock] = LoopLocal(anyio.Lock)
        self._witness: LoopLocal[list[anyio.Event]] = LoopLocal(list)

    @staticmethod
    def _join(card: str, fingerprint: str | None) -> str:
        return card if fingerprint is None else f"{card}\n{fingerprint}"

    def known(self) -> str | None:
        """The identity to look up under, when the process knows it already (no await)."""
        card, fingerprint = self._card, self._fingerprint
        if card is None or fingerprint is _NOT_LEARNED:
            return None
        assert fingerprint is None or isinstance(fingerprint, str)
        return self._join(card, fingerprint)

    @property
    def card(self) -> str | None:
        """The model card's identity, when this process asked for it and got it; ``None`` for
        a transport that does not identify its model (its calls never wait)."""
        return self._card if self._probe is not None else None

    async def lookup(self, timeout_s: float, stored: Callable[[str], Awaitable[bool]]) -> Lookup:
        """How the next cached call may use the cache.

        ``stored(card)``: whether a reply to this call's request from a server with that
        model card is stored (under any fingerprint). Until the fingerprint is known, only
        such a call waits, for the first reply of the process.
        """
        card = self._card if self._card is not None else await self._ask(timeout_s)
        if card is None:
            return Lookup(None)
        if self._fingerprint is _NOT_LEARNED and not await stored(card):
            return Lookup(None)  # nothing to protect: go now, and let no other call's request stall this one
        while self._fingerprint is _NOT_LEARNED:
            waiting = self._witness.get()
            if not waiting:
                waiting.append(anyio.Event())
                return Lookup(None, witness=True)
            await waiting[0].wait()
        fingerprint = self._fingerprint
        assert fingerprint is None or isinstance(fingerprint, str)
        return Lookup(self._join(card, fingerprint))

    def identity_of(self, fingerprint: str | None) -> str | None:
        """The identity to store a reply that came with ``fingerprint`` under (``None``: do not
        store, the model card is not known)."""
        if self._probe is None:
            return ""  # nothing is asked of such a transport, and nothing learned from its replies
        return None if self._card is None else self._join(self._card, fingerprint)

    def observed(self, fingerprint: str | None, *, witness: bool) -> None:
        """A reply from the server came with ``fingerprint``: the process's from now on (a
        server redeployed mid-run is looked up under its new one). The first reply, or the
        witness's, releases the calls waiting to look up."""
        first = False
        if self._probe is not None:
            first = self._fingerprint is _NOT_LEARNED
            self._fingerprint = fingerprint
        if witness or first:
            self._release()

    def released(self) -> None:
        """The witness got no reply: the next cached call is the witness."""
        self._release()

    def _release(self) -> None:
        waiting = self._witness.get()
        if waiting:
            waiting.pop().set()

    async def _ask(self, timeout_s: float) -> str | None:
        """The model card's identity, asked once (a failure: again after :data:`RETRY_AFTER_S`)."""
        assert self._probe is not None
        async with self._probe_locks.get():
            if self._card is not None:
                return self._card
            if self._failed_at is not None and time.monotonic() - self._failed_at < RETRY_AFTER_S:
                return None
            card = await self._probe.served_identity(timeout_s)
            if card is None:
                self._failed_at = time.monotonic()
            self._card = card
            return card
