"""What an OpenAI-compatible server says about the model behind a name: ``GET {base_url}/models``.

Read once per transport and process (:class:`ServedModelProbe`) for the judge cache
(:mod:`openjudge.models._served_identity`); its card is kept for anything else that wants
to know the server (its ``owned_by`` names vLLM, SGLang, llama.cpp, ...).

Which card: the entry whose ``id`` is the model name sent; a server with a single entry
(llama.cpp serves one model whatever the name) is read by that one.

Which fields identify the weights (:data:`IDENTITY_FIELDS`): ``root`` and ``parent``
(vLLM and SGLang: the weights' path, a LoRA adapter's base), ``max_model_len`` (vLLM),
``owned_by`` (``vllm``, ``sglang``, ``llamacpp``, ``openai``, ...), ``meta`` (llama.cpp: the
model file's parameter count, size, vocabulary and context) and ``created`` where it is the
model's (OpenAI, Ollama: a re-pulled model is a new one). vLLM, SGLang, llama.cpp and
LMDeploy stamp ``created`` with the time they answer: a value within :data:`STAMP_WINDOW_S`
of the probe's clock is such a stamp, and left out. Anything else (permission lists with
fresh ids) changes per request and is left out too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

import anyio
from pydantic import JsonValue

from openjudge.models._errors import ChatModelError
from openjudge.models._loop_local import LoopLocal
from openjudge.providers import _json
from openjudge.providers._http import HttpClient

__all__ = ["IDENTITY_FIELDS", "STAMP_WINDOW_S", "ServedModelProbe", "card_identity", "served_card"]

IDENTITY_FIELDS = ("root", "parent", "owned_by", "max_model_len", "created", "meta")
STAMP_WINDOW_S = 300.0
"""A ``created`` this close to the probe's clock is the time of the answer, not of the model."""


def served_card(data: object, model: str) -> Mapping[str, JsonValue] | None:
    """The entry of a ``/models`` body for ``model`` (or its only entry), if any."""
    entries = data.get("data") if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        return None
    cards = [entry for entry in entries if isinstance(entry, Mapping)]
    named = [card for card in cards if card.get("id") == model]
    if named:
        return named[0]
    return cards[0] if len(cards) == 1 else None


def card_identity(card: Mapping[str, JsonValue] | None, *, now: float) -> str:
    """The identifying fields of ``card`` as canonical JSON (``""`` when it has none)."""
    if card is None:
        return ""
    fields = {name: card[name] for name in IDENTITY_FIELDS if card.get(name) is not None}
    created = fields.get("created")
    if isinstance(created, int | float) and abs(created - now) <= STAMP_WINDOW_S:
        del fields["created"]
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True) if fields else ""


class ServedModelProbe:
    """Asks a server once which model it serves, and remembers the answer.

    Args:
        url: The ``/models`` URL.
        headers: The request's headers (its credentials).
        where: How messages name the server (no credentials).
    """

    def __init__(self, url: str, headers: Mapping[str, str], where: str) -> None:
        self._url = url
        self._headers = {k: v for k, v in headers.items() if k != "content-type"}  # a GET sends no body
        self._where = where
        self.card: Mapping[str, JsonValue] | None = None
        """The model's entry once asked (``None`` before, or when the server lists none)."""
        self._identity: str | None = None
        self._locks: LoopLocal[anyio.Lock] = LoopLocal(anyio.Lock)

    async def identity(self, client: HttpClient, model: str, timeout_s: float) -> str | None:
        """The card's identity (see the module); ``""`` when the server does not say (no
        ``/models``, a body without the model); ``None`` when it could not be asked now."""
        if self._identity is not None:
            return self._identity
        async with self._locks.get():
            if self._identity is None:
                self._identity = await self._ask(client, model, timeout_s)
            return self._identity

    async def _ask(self, client: HttpClient, model: str, timeout_s: float) -> str | None:
        try:
            reply = await client.send("GET", self._url, None, self._headers, timeout_s, self._where)
        except ChatModelError:
            return None  # down, or too slow: asked again later
        if reply.status in (408, 429) or reply.status >= 500:
            return None
        if not 200 <= reply.status < 300:
            return ""  # no such route, or not for this key: the server does not say
        try:
            data = _json.loads(reply.body)
        except ValueError:
            return ""
        self.card = served_card(data, model)
        return card_identity(self.card, now=time.time())
