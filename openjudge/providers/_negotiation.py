"""Structured output found per server: which JSON mode an OpenAI-compatible server takes.

Servers differ: OpenAI, vLLM and llama.cpp's own server take ``response_format``
``json_schema``; llama-cpp-python's server answers HTTP 500 to it and takes ``json_object``
with a ``schema``; some servers take neither. When a provider's ``structured_output`` is not
set, the calls that ask for JSON find out:

1. a call goes out in the strongest mode not yet refused at its endpoint (``json_schema``
   first);
2. if the server refuses that mode, the same request goes out at once in the next one
   (``json_object`` with the schema, then ``prompt``: the schema in the instructions only),
   and the refusal is remembered, so later calls start past it;
3. the first mode the server answers is remembered for that endpoint and model for the
   life of the process (every provider object reaching it shares it), and said once: a log
   line here, and the run summary of ``openjudge run``.

No call waits for another call's request: calls made before the mode is known find it
themselves. A probe is a user's request, and a request whose content keeps the judge busy
(or hangs it) must not hold up the calls around it; what concurrency costs instead is a
refusal per call in flight at first use, answered without generating.

**A refusal** is an answer with status 400, 415, 422, 500 or 501 whose message names the
response format (as llama-cpp-python's 500 does: ``response_format.type``); a request the
server cannot take in any mode (a prompt past the context) fails in the weakest mode as it
would have anyway. A refusal is handled inside one attempt, so the engine never sees it: it
is not retried, does not shrink the concurrency and is never a failure a breaker or a
failure ledger counts. An outage during the probe (a connection error, a timeout, a 503) is
the attempt's error as usual, and teaches nothing.

An explicit ``structured_output`` is always sent as set. A server that refuses it gets a
final error (not retried) marked as a refusal (:data:`~openjudge.models._errors.REFUSED_MARK`),
whose message says to leave the setting unset. A mode found earlier that the server later
refuses (a different server now at that URL) is forgotten and probed again.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from openjudge.models._errors import REFUSED_MARK, ChatModelError
from openjudge.models._secrets import safe_url
from openjudge.models.chat_model import StructuredOutputMode

__all__ = [
    "FOUND_PER_SERVER",
    "MODES",
    "StructuredOutputChoice",
    "StructuredOutputNegotiation",
    "forget_structured_output",
    "refuses_mode",
    "structured_output_choice",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

MODES: tuple[StructuredOutputMode, ...] = ("json_schema", "json_object", "prompt")
"""The modes tried when none is set, strongest first."""

FOUND_PER_SERVER = "openjudge:structured_output_found_per_server"
"""Marks the body a judge-cache key is computed from when the mode is found per server (never
sent): the key is the strongest mode's body with this mark, whatever mode the server takes, so
the cache keeps answering whichever mode this process (or the next) finds."""

_SHOWN = 160  # characters of each refusal a description shows

_REFUSAL_STATUS = frozenset({400, 415, 422, 500, 501})
_NAMES_FORMAT = re.compile(
    r"response_format|json[ _-]?schema|json_object|structured[ _]?outputs?|guided_json|grammar", re.IGNORECASE
)


def refuses_mode(error: ChatModelError) -> bool:
    """Whether ``error`` is the server refusing the structured-output mode of the request.

    A status a refusal comes with, and a message that names the response format: a
    context-length 400 or a crashed server's 500 is not a refusal of the mode.
    """
    return error.status_code in _REFUSAL_STATUS and _NAMES_FORMAT.search(error.message) is not None


@dataclass(frozen=True, slots=True)
class StructuredOutputChoice:
    """The structured-output mode used at one endpoint, and how it was chosen.

    Attributes:
        where: The endpoint and model, without credentials.
        mode: The mode requests are sent in.
        found: Found on first use (``structured_output`` unset), rather than set.
        refused: For each stronger mode the server refused, what it answered.
    """

    where: str
    mode: StructuredOutputMode
    found: bool
    refused: tuple[str, ...] = ()

    def describe(self) -> str:
        """``"structured output json_object (found on first use; the server refused json_schema: ...)"``."""
        if not self.found:
            return f"structured output {self.mode} (set)"
        shown = (r if len(r) <= _SHOWN else r[: _SHOWN - 3] + "..." for r in self.refused)
        refused = f"; the server refused {'; '.join(shown)}" if self.refused else ""
        return f"structured output {self.mode} (found on first use{refused})"


@runtime_checkable
class _Negotiating(Protocol):
    @property
    def structured_output_choice(self) -> StructuredOutputChoice | None: ...


def structured_output_choice(model: object) -> StructuredOutputChoice | None:
    """The structured-output mode ``model`` uses and how it was chosen.

    ``None`` for a model whose mode is found per server until its first call that asks for
    JSON, and for backends that do not negotiate (in-process models, test doubles).
    """
    transport = getattr(model, "transport", None)
    return transport.structured_output_choice if isinstance(transport, _Negotiating) else None


class _Found:
    """What each endpoint and model took and refused, for the life of the process.

    Facts about servers rather than limits: every provider object that reaches a server
    shares what one of them found.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._choices: dict[str, StructuredOutputChoice] = {}
        self._refused: dict[str, dict[StructuredOutputMode, str]] = {}

    def get(self, key: str) -> StructuredOutputChoice | None:
        return self._choices.get(key)

    def first_untried(self, key: str) -> int:
        """The index in :data:`MODES` of the strongest mode ``key``'s server has not refused."""
        refused = self._refused.get(key, {})
        return next((i for i, mode in enumerate(MODES) if mode not in refused), len(MODES) - 1)

    def refusals(self, key: str) -> tuple[str, ...]:
        return tuple(self._refused.get(key, {}).values())

    def refuse(self, key: str, mode: StructuredOutputMode, answer: str) -> None:
        """The server refused ``mode``: later calls start past it (a mode found is forgotten)."""
        with self._lock:
            self._refused.setdefault(key, {}).setdefault(mode, answer)
            known = self._choices.get(key)
            if known is not None and known.mode == mode:  # another server now: find its mode
                del self._choices[key]

    def record(self, key: str, mode: StructuredOutputMode, where: str) -> StructuredOutputChoice | None:
        """Remember that ``key``'s server took ``mode``; the choice when it is news, else ``None``."""
        with self._lock:
            known = self._choices.get(key)
            if known is not None and known.mode == mode:
                return None
            choice = StructuredOutputChoice(where, mode, found=True, refused=self.refusals(key))
            self._choices[key] = choice
            return choice

    def forget(self, url: str) -> None:
        with self._lock:
            for table in (self._choices, self._refused):
                for key in [k for k in table if url in k]:
                    del table[key]


_FOUND = _Found()


def forget_structured_output(base_url: str = "") -> None:
    """Forget the structured-output modes found so far (for servers under ``base_url``, or all).

    The next call to such a server probes again. Needed only when another server (another
    backend) now answers at a URL a probe already reached in this process.
    """
    _FOUND.forget(safe_url(base_url.strip().rstrip("/")))


class StructuredOutputNegotiation:
    """The structured-output mode of one transport: its setting, or the mode found for its endpoint.

    Args:
        setting: The mode set by the user, or ``None`` to find it on first use.
        key: The endpoint and model requests go to (read per call: a model may be
            discovered after construction). Must contain the endpoint URL without
            credentials, for :func:`forget_structured_output`.
        where: How messages name the endpoint.
    """

    def __init__(
        self, setting: StructuredOutputMode | None, *, key: Callable[[], str], where: Callable[[], str]
    ) -> None:
        if setting is not None and setting not in MODES:
            raise ValueError(f"structured_output must be one of {', '.join(MODES)} or unset, got {setting!r}")
        self.setting: StructuredOutputMode | None = setting
        self._key = key
        self._where = where

    def mode(self) -> StructuredOutputMode:
        """The mode a request goes out in now: the setting, the mode found, or the first to try."""
        if self.setting is not None:
            return self.setting
        found = _FOUND.get(self._key())
        return found.mode if found is not None else MODES[0]

    @property
    def choice(self) -> StructuredOutputChoice | None:
        """The mode in use and how it was chosen; ``None`` until a call has found it."""
        if self.setting is not None:
            return StructuredOutputChoice(self._where(), self.setting, found=False)
        return _FOUND.get(self._key())

    async def send(self, send: Callable[[StructuredOutputMode], Awaitable[T]]) -> T:
        """``send(mode)`` in the mode to use, finding it first if it is not known.

        Raises:
            ChatModelError: What the last request sent raised; a refusal of a set mode is final.
        """
        if self.setting is not None:
            try:
                return await send(self.setting)
            except ChatModelError as exc:
                if refuses_mode(exc):
                    raise self._refused_setting(exc, self.setting) from None
                raise
        key = self._key()
        while True:
            found = _FOUND.get(key)
            mode = found.mode if found is not None else MODES[_FOUND.first_untried(key)]
            try:
                response = await send(mode)
            except ChatModelError as exc:
                if mode == MODES[-1] or not refuses_mode(exc):
                    raise
                _FOUND.refuse(key, mode, self._refusal(mode, exc))
                continue
            if found is None and (choice := _FOUND.record(key, mode, self._where())) is not None:
                level = logging.WARNING if mode == "prompt" else logging.INFO
                logger.log(level, "%s: %s", choice.where, choice.describe())
            return response

    def _refusal(self, mode: StructuredOutputMode, exc: ChatModelError) -> str:
        answer = " ".join(exc.message.removeprefix(f"{self._where()}: ").split())
        return f"{mode}: {answer}"

    @staticmethod
    def _refused_setting(exc: ChatModelError, mode: StructuredOutputMode) -> ChatModelError:
        return ChatModelError(
            f"{exc.message} {REFUSED_MARK}: the server does not take structured_output {mode!r}; "
            "leave structured_output unset to use the mode it takes",
            kind=exc.kind,
            retryable=False,
            status_code=exc.status_code,
            error_type=exc.error_type,
        )
