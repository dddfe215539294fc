"""The core's transport around a local model: one attempt is one request through its batcher.

Shared by the two roles (:mod:`._chat`, :mod:`~openjudge.providers.transformers._reward`),
which add how a core request becomes a local one and back. The core composes everything
else around it (retries, the concurrency limit, usage, and for the judge deduplication
and the cache); here an attempt waits for the model to load (once per process, not
timed: loading a large checkpoint takes minutes), then runs under the policy's timeout,
queueing included. A timed-out or cancelled attempt leaves the batcher's queue, so it
never costs a row.
"""

from __future__ import annotations

import uuid
from typing import Generic, TypeVar

from openjudge.models._errors import ChatModelError
from openjudge.models._timeouts import timeout_scope
from openjudge.models.policy import ProviderPolicy
from openjudge.providers.transformers._errors import InferenceError
from openjudge.providers.transformers._local_model import LocalModel

__all__ = ["LocalTransport", "default_policy", "local_endpoint", "to_chat_error"]

Q = TypeVar("Q")
R = TypeVar("R")


def to_chat_error(exc: InferenceError) -> ChatModelError:
    """The core's error for a local inference failure (same kind, retryability and type)."""
    return ChatModelError(exc.message, kind=exc.kind, retryable=exc.retryable, error_type=exc.error_type)


def default_policy() -> ProviderPolicy:
    """Local calls: 120 s per attempt (queueing included, loading excluded), the core's retries and limits."""
    return ProviderPolicy(timeout_s=120.0)


def local_endpoint(model: str, revision: str | None) -> str:
    """How users and cache keys name a local checkpoint: ``transformers:<model>[@<revision>]``."""
    return f"transformers:{model}" if revision is None else f"transformers:{model}@{revision}"


class LocalTransport(Generic[Q, R]):
    """One attempt = one request through a :class:`LocalModel`'s batcher.

    Every transport has its own connection key: the model it feeds is its own copy (two
    providers naming one checkpoint load it twice and are limited apart).
    """

    def __init__(self, local_model: LocalModel[Q, R]) -> None:
        self.local_model = local_model
        settings = local_model.settings
        self._endpoint = local_endpoint(settings.model, settings.revision)
        self._connection_key = f"{self._endpoint}|{local_model.head}|{uuid.uuid4().hex[:12]}"

    @property
    def model_name(self) -> str:
        return self.local_model.settings.model

    @property
    def endpoint(self) -> str:
        return self._endpoint

    @property
    def connection_key(self) -> str:
        return self._connection_key

    @property
    def enforces_timeout(self) -> bool:
        return True  # the timeout covers queueing and inference; loading is excluded

    def load(self) -> None:
        """Load the model now (blocking) instead of on the first call.

        Raises:
            ChatModelError: Loading failed.
        """
        try:
            self.local_model.load()
        except InferenceError as exc:
            raise to_chat_error(exc) from None

    async def run(self, request: Q, timeout_s: float) -> R:
        """Run ``request`` in the next batch with room (after loading the model, untimed).

        Raises:
            ChatModelError: Loading or inference failed, or no result within ``timeout_s``.
        """
        try:
            await self.local_model.aload()
            async with timeout_scope(timeout_s):
                return await self.local_model.run(request)
        except InferenceError as exc:
            raise to_chat_error(exc) from None
        except TimeoutError:
            raise ChatModelError(
                f"{self.model_name}: no result within {timeout_s:g}s (queueing included); "
                "raise timeout_s or lower the load",
                kind="timeout",
                retryable=True,
                error_type="TimeoutError",
            ) from None

    async def aclose(self) -> None:
        """Nothing is bound to an event loop (the owner's ``close()`` frees the model)."""
