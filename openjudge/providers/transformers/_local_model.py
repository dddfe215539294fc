"""One in-process model: loaded lazily, once, and fed by a dynamic batcher.

:class:`LocalModel` owns the settings, the loaded model (never loaded at import or
construction: on the first call, or an explicit :meth:`LocalModel.load`) and the
:class:`~openjudge.providers.transformers._batcher.DynamicBatcher` whose worker thread runs every
forward pass. It raises :class:`~openjudge.providers.transformers._errors.InferenceError` only;
the chat core never appears here (the adapters translate).
"""

from __future__ import annotations

import contextlib
import copy
import logging
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import anyio

from openjudge.providers.transformers._batcher import BatchStats, DynamicBatcher
from openjudge.providers.transformers._errors import InferenceError, is_device_fault, is_out_of_memory
from openjudge.providers.transformers._requests import GenerationRequest, ScoreRequest
from openjudge.providers.transformers._settings import TransformersSettings

if TYPE_CHECKING:
    from openjudge.providers.transformers._generation import Generation
    from openjudge.providers.transformers._loading import Head, LoadedModel
    from openjudge.providers.transformers._scoring import Scores

__all__ = ["LocalModel", "generative_model", "reward_model"]

logger = logging.getLogger(__name__)

Q = TypeVar("Q")
R = TypeVar("R")
Q_contra = TypeVar("Q_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)


class BatchRunner(Protocol[Q_contra, R_co]):
    """Runs one batch on the inference thread: a result or an exception per request."""

    def run(self, requests: Sequence[Q_contra]) -> Sequence[R_co | BaseException]: ...


class LocalModel(Generic[Q, R]):
    """A model in this process, shared by every caller of the provider that owns it.

    Args:
        settings: What to load and how to batch.
        head: ``causal_lm`` (judges) or ``sequence_classification`` (reward models).
        runner: Builds the batch runner once the model is loaded.
        key: Requests with different keys never share a batch.
    """

    def __init__(
        self,
        settings: TransformersSettings,
        head: Head,
        runner: Callable[[LoadedModel], BatchRunner[Q, R]],
        *,
        key: Callable[[Q], Hashable] | None = None,
    ) -> None:
        self.settings = settings
        self.head: Head = head
        self._make_runner = runner
        self._lock = threading.Lock()
        self._loaded: LoadedModel | None = None
        self._runner: BatchRunner[Q, R] | None = None
        self._load_error: InferenceError | None = None
        self._loader: threading.Thread | None = None
        self._batcher: DynamicBatcher[Q, R] = DynamicBatcher(
            self._run_batch,
            max_batch_size=settings.max_batch_size,
            window_s=settings.batch_window_s,
            key=key,
            on_batch_error=self._batch_error,
            shrink_on=is_out_of_memory,
            name=f"openjudge-{head}",
        )

    @property
    def stats(self) -> BatchStats:
        """Batches run, requests carried, failures and the current batch limit."""
        return self._batcher.stats

    @property
    def queued(self) -> int:
        """Requests waiting for a batch."""
        return self._batcher.queued

    @property
    def loaded(self) -> LoadedModel | None:
        """The model, once loaded."""
        return self._loaded

    def load(self) -> LoadedModel:
        """Load the model now (blocking; once per object, safe from any thread).

        Raises:
            InferenceError: Loading failed (remembered: later calls fail at once with it).
        """
        with self._lock:
            if self._loaded is not None:
                return self._loaded
            if self._load_error is not None:
                raise copy.copy(self._load_error)
            try:
                from openjudge.providers.transformers._loading import load_model

                loaded = load_model(self.settings, self.head)
                runner = self._make_runner(loaded)
            except Exception as exc:
                self._load_error = InferenceError(
                    f"cannot load {self.settings.model!r} ({self.head}): {type(exc).__name__}: {exc}",
                    error_type=type(exc).__name__,
                )
                raise copy.copy(self._load_error) from exc
            self._loaded, self._runner = loaded, runner
            return loaded

    async def aload(self) -> LoadedModel:
        """:meth:`load` on a loader thread, so the event loop keeps running while weights load.

        Concurrent callers (on any loop) share one loader thread and poll for it: loading
        takes seconds, so a 20 ms poll costs nothing and needs no loop-bound primitive.
        """
        while self._loaded is None:
            # Never wait for the lock here: the loader holds it for the whole load, and waiting
            # would stop the event loop for as long.
            if self._lock.acquire(blocking=False):
                try:
                    if self._load_error is not None:
                        raise copy.copy(self._load_error)  # every waiter gets its own copy
                    if self._loader is None:
                        self._loader = threading.Thread(
                            target=self._load_quietly, name="openjudge-load", daemon=True
                        )
                        self._loader.start()
                finally:
                    self._lock.release()
            await anyio.sleep(0.02)
        return self._loaded

    def _load_quietly(self) -> None:
        with contextlib.suppress(InferenceError):  # remembered in _load_error; every waiter raises it
            self.load()

    async def run(self, request: Q) -> R:
        """Run ``request`` in the next batch with room for it (loading the model first if needed).

        Raises:
            InferenceError: Loading, encoding or the forward pass failed.
        """
        await self.aload()
        return await self._batcher.submit(request)

    def close(self) -> None:
        """Stop the inference thread and drop the model (a new call raises)."""
        self._batcher.close()
        with self._lock:
            self._loaded = self._runner = None
            self._load_error = InferenceError(f"{self.settings.model!r} was closed", error_type="Closed")

    def _run_batch(self, requests: Sequence[Q]) -> Sequence[R | BaseException]:
        runner = self._runner
        if runner is None:
            raise InferenceError(f"{self.settings.model!r} is not loaded", error_type="NotLoaded")
        try:
            return runner.run(requests)
        except Exception as exc:
            if is_device_fault(exc):
                _release_device_memory()
            raise

    def _batch_error(self, exc: BaseException, size: int) -> BaseException:
        name = self.settings.model
        if isinstance(exc, InferenceError):
            return InferenceError(
                exc.message, kind=exc.kind, retryable=exc.retryable, error_type=exc.error_type
            )
        limit = self._batcher.batch_limit
        if is_out_of_memory(exc):
            logger.warning("%s: out of memory in a batch of %d; batch limit now %d", name, size, limit)
            return InferenceError(
                f"{name}: out of memory in a batch of {size}; the batch limit is now {limit}",
                retryable=True,
                error_type=type(exc).__name__,
            )
        if is_device_fault(exc):
            return InferenceError(
                f"{name}: device error in a batch of {size}: {exc}", error_type=type(exc).__name__
            )
        logger.exception("%s: a batch of %d failed", name, size, exc_info=exc)
        return InferenceError(f"{name}: {type(exc).__name__}: {exc}", error_type=type(exc).__name__)


def _release_device_memory() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def generative_model(settings: TransformersSettings) -> LocalModel[GenerationRequest, Generation]:
    """A causal LM whose batches run through :class:`~openjudge.providers.transformers._generation.Generator`."""

    def runner(loaded: LoadedModel) -> BatchRunner[GenerationRequest, Generation]:
        from openjudge.providers.transformers._generation import Generator

        return Generator(loaded)

    def key(request: GenerationRequest) -> Hashable:
        return request.batch_key()

    return LocalModel(settings, "causal_lm", runner, key=key)


def reward_model(settings: TransformersSettings) -> LocalModel[ScoreRequest, Scores]:
    """A classification model whose batches run through :class:`~openjudge.providers.transformers._scoring.Scorer`."""

    def runner(loaded: LoadedModel) -> BatchRunner[ScoreRequest, Scores]:
        from openjudge.providers.transformers._scoring import Scorer

        return Scorer(loaded)

    return LocalModel(settings, "sequence_classification", runner)
