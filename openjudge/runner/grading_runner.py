"""GradingRunner: every (sample, grader) pair through one bounded pool.

* Memory is O(concurrency): ``max_concurrency`` workers pull pairs lazily from the
  dataset; nothing is created per pair up front and graders are never copied.
* Every pair yields exactly one result, in order. Failures (bad input, provider
  errors, timeouts, a run deadline) are :class:`GraderError` results, not exceptions.
* Routing (``GraderConfig(when=...)``, ``graders_field``; :mod:`~openjudge.runner._routing`)
  is decided once per sample, from its fields, before any of its pairs runs: a pair that
  does not apply is :class:`~openjudge.results.NotApplicable`, and its grader is not called.
* Nothing binds to an event loop at construction, so one runner can be reused
  across ``asyncio.run`` calls, under trio, and through the sync :meth:`GradingRunner.run`.
* One evaluation path: each pair runs under its worker's section timer
  (:func:`~openjudge.models._timeouts.section_timer`): one lazily moved timer per worker
  on asyncio instead of ``asyncio.timeout``'s timer per pair (about 6 µs per pair, a
  sixth of the framework's CPU per judge call), anyio's scope per pair elsewhere.
  Gate: ``python -m bench.runner ratios`` (framework CPU per judge call <= 0.10x raw aiohttp's).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager
from typing import Any, TypeAlias, TypedDict, TypeVar, Unpack

import anyio

from openjudge.graders.base_grader import BaseGrader, InvalidInputError, error_from_exception
from openjudge.models._timeouts import SectionTimer, section_timer
from openjudge.results import (
    GraderError,
    GraderRank,
    GraderResult,
    GraderScore,
    RowResult,
    TokenUsage,
)
from openjudge.runner._aggregation import Aggregation, named_aggregators
from openjudge.runner._collector import batch_collector
from openjudge.runner._concurrency import capped_providers, concurrency_warning
from openjudge.runner._grader_config import BoundGrader, GraderConfig
from openjudge.runner._mapper import Mapper, MissingFieldError
from openjudge.runner._progress import ProgressBar
from openjudge.runner._results import RunnerResult, SampleResult
from openjudge.runner._routing import Router, Unrouted
from openjudge.runner._settings import RunSettings
from openjudge.runner._sync import SyncPortal
from openjudge.runner.aggregators import AggregatorLike

__all__ = ["GraderConfig", "GradingRunner", "RunSettings", "RunnerResult", "SampleResult"]

logger = logging.getLogger(__name__)
K = TypeVar("K")
Sample: TypeAlias = Mapping[str, Any]


def _timed_out(key: str, timeout_s: float | None) -> GraderError:
    return GraderError(
        name=key, kind="timeout", message=f"grader {key!r} did not finish within {timeout_s:g}s"
    )


_RESULT_TYPES = (GraderScore, GraderError, GraderRank)


def _not_a_result(key: str, out: object) -> GraderError:
    return GraderError(
        name=key,
        kind="internal",
        message=f"grader {key!r} returned {type(out).__name__}; expected GraderScore, GraderRank or GraderError",
        error_type="TypeError",
    )


class SettingsChanges(TypedDict, total=False):
    """The :class:`RunSettings` fields :meth:`GradingRunner.replace` may change."""

    max_concurrency: int
    timeout_s: float | None
    deadline_s: float | None
    show_progress: bool
    tune_collector: bool


class _Keep:
    """The default of :meth:`GradingRunner.replace`'s ``aggregators``: keep the runner's own."""


_KEEP = _Keep()


class GradingRunner:
    """Runs graders over datasets concurrently.

    Args:
        grader_configs: Result name -> :class:`GraderConfig` (or a grader, or ``(grader, mapper)``).
        max_concurrency: Pairs evaluated at once (provider limits apply on top).
        aggregators: Combine each sample's results; a single one, a list, or ``None``.
        show_progress: Draw a progress line on stderr.
        timeout_s: Seconds one pair may take (retries included) before it becomes a timeout error.
        deadline_s: Seconds the whole run may take; pairs not finished by then become timeout errors.
        tune_collector: Raise the garbage collector's young threshold while the run is active
            (off by default: it is process-wide state; see :class:`RunSettings`).
        graders_field: A sample field naming the graders that apply to the sample (a name,
            a list, or names separated by commas); graders it does not name are
            :class:`~openjudge.results.NotApplicable` there. A sample without the field
            runs every grader whose ``when`` holds. ``None``: no such field.
        unrouted: What a sample that no grader applies to gets: ``"error"`` (an
            ``invalid_input`` error per grader, naming why: a row without any result is a
            dataset or config mistake) or ``"not_applicable"`` (for a runner over part of
            a job's graders, e.g. one per grader).

    Raises:
        ValueError: No graders, a malformed ``when``, an aggregator name used twice, or an
            aggregator that names an input which is neither a grader nor an aggregator
            before it.
    """

    def __init__(
        self,
        grader_configs: Mapping[str, GraderConfig | BaseGrader | tuple[BaseGrader, Mapper | None]],
        max_concurrency: int = 32,
        aggregators: AggregatorLike | Sequence[AggregatorLike] | None = None,
        show_progress: bool = True,
        *,
        timeout_s: float | None = 300.0,
        deadline_s: float | None = None,
        tune_collector: bool = False,
        graders_field: str | None = None,
        unrouted: Unrouted = "error",
    ) -> None:
        if not grader_configs:
            raise ValueError("grader_configs is empty; give at least one grader")
        self.settings = RunSettings(
            max_concurrency=max_concurrency,
            timeout_s=timeout_s,
            deadline_s=deadline_s,
            show_progress=show_progress,
            tune_collector=tune_collector,
        )
        self.graders_field = graders_field
        self.unrouted: Unrouted = unrouted
        self.grader_configs = {key: GraderConfig.create(cfg) for key, cfg in grader_configs.items()}
        self._known: tuple[str, ...] = tuple(self.grader_configs)  # names a graders field may hold
        self._bind_graders()
        self.aggregators = named_aggregators(aggregators, self.grader_configs)
        self._bind_aggregators()
        self._portal: SyncPortal | None = None
        self._warn_capped()

    def _bind_graders(self) -> None:
        self._slots = [BoundGrader(key, cfg) for key, cfg in self.grader_configs.items()]
        self._router = Router(
            [s.key for s in self._slots],
            [s.when for s in self._slots],
            self.graders_field,
            self.unrouted,
            known=self._known,
        )

    def _bind_aggregators(self) -> None:
        self._aggregation = Aggregation(self.aggregators, self.grader_configs, routed=self._router.active)

    def aggregator_chain(self, name: str) -> list[AggregatorLike]:
        """Aggregator ``name`` and the earlier aggregators it reads (directly or not), in order:
        what a runner that computes only ``name`` needs.

        Raises:
            KeyError: No aggregator of that name.
        """
        return self._aggregation.chain(name)

    def _warn_capped(self) -> None:
        graders = [cfg.grader for cfg in self.grader_configs.values()]
        for client in capped_providers(graders, self.max_concurrency):  # a silent cap is a surprise
            logger.warning("%s", concurrency_warning(client, self.max_concurrency))

    @property
    def max_concurrency(self) -> int:
        return self.settings.max_concurrency

    @property
    def timeout_s(self) -> float | None:
        return self.settings.timeout_s

    @property
    def deadline_s(self) -> float | None:
        return self.settings.deadline_s

    @property
    def show_progress(self) -> bool:
        return self.settings.show_progress

    def replace(
        self,
        *,
        grader_configs: Mapping[str, GraderConfig | BaseGrader | tuple[BaseGrader, Mapper | None]]
        | None = None,
        aggregators: AggregatorLike | Sequence[AggregatorLike] | _Keep | None = _KEEP,
        settings: RunSettings | None = None,
        unrouted: Unrouted | None = None,
        **changes: Unpack[SettingsChanges],
    ) -> GradingRunner:
        """A runner like this one with some parts replaced; graders are shared, not copied.

        Args:
            grader_configs: New graders (default: these).
            aggregators: New aggregators, or ``None`` for none (default: these).
            settings: New settings (default: these, with ``changes`` applied).
            unrouted: What a sample that no grader applies to gets (default: as this runner).
            **changes: :class:`RunSettings` fields to change, e.g. ``deadline_s=30.0``.
        """
        base = settings if settings is not None else self.settings
        new = copy.copy(self)
        new.settings = dataclasses.replace(base, **changes) if changes else base
        if unrouted is not None:
            new.unrouted = unrouted
        if grader_configs is not None:
            if not grader_configs:
                raise ValueError("grader_configs is empty; give at least one grader")
            new.grader_configs = {key: GraderConfig.create(cfg) for key, cfg in grader_configs.items()}
            new._known = tuple(dict.fromkeys((*self._known, *new.grader_configs)))  # a part knows the whole
        if grader_configs is not None or unrouted is not None:
            new._bind_graders()
        if not isinstance(aggregators, _Keep):
            new.aggregators = named_aggregators(aggregators, new.grader_configs)
        new._bind_aggregators()
        new._portal = None
        if grader_configs is not None or new.max_concurrency > self.max_concurrency:
            new._warn_capped()
        return new

    # -- evaluation of one pair -------------------------------------------------------

    @staticmethod
    def _input_error(key: str, exc: Exception) -> GraderError:
        if isinstance(exc, MissingFieldError | InvalidInputError):
            message = f"grader {key!r}: {exc}"
        else:
            message = f"mapper for grader {key!r} failed: {exc}"
        return GraderError(name=key, kind="invalid_input", message=message, error_type=type(exc).__name__)

    def _budget(self, key: str, deadline_at: float) -> float | GraderError:
        """Seconds this pair may take under the run deadline, or the timeout error if it has passed."""
        remaining = deadline_at - anyio.current_time()
        if remaining <= 0:
            return GraderError(
                name=key, kind="timeout", message="the run deadline passed before this pair started"
            )
        timeout_s = self.settings.timeout_s
        return remaining if timeout_s is None or remaining < timeout_s else timeout_s

    async def _evaluate(
        self, slot: BoundGrader, sample: Any, deadline_at: float | None, timer: SectionTimer
    ) -> GraderResult:
        """One pair, under the worker's timer when a timeout or the run deadline applies.

        The hot path of every run: the helpers above are called only when something is wrong.
        """
        try:
            inputs = slot.inputs(sample)
        except Exception as exc:
            return self._input_error(slot.key, exc)
        timeout_s: float | GraderError | None
        if deadline_at is None:
            timeout_s = self.settings.timeout_s
        else:
            timeout_s = self._budget(slot.key, deadline_at)
            if isinstance(timeout_s, GraderError):
                return timeout_s
        try:
            if timeout_s is None:
                out: object = await slot.grader.aevaluate(**inputs)
            else:
                with timer.limit(timeout_s, deadline_at):  # the run deadline holds even while paused
                    out = await slot.grader.aevaluate(**inputs)
        except TimeoutError:
            return _timed_out(slot.key, timeout_s)
        except Exception as exc:
            return error_from_exception(slot.key, exc)
        return out if isinstance(out, _RESULT_TYPES) else _not_a_result(slot.key, out)

    # -- the pool -----------------------------------------------------------------------

    @property
    def routed(self) -> bool:
        """Whether some graders may not apply to some samples (``when``, ``graders_field``)."""
        return self._router.active

    def route(self, sample: Any) -> dict[str, RowResult]:
        """What routing decides for ``sample``, without grading anything: grader name -> the
        result it gets instead of being graded (``NotApplicable``, or the sample's
        ``invalid_input`` error), for each grader that will not be graded."""
        plan = self._plan(sample) if self._router.active else None
        if plan is None:
            return {}
        return {slot.key: r for slot, r in zip(self._slots, plan, strict=True) if r is not None}

    def _plan(self, sample: Any) -> tuple[RowResult | None, ...] | None:
        """Per grader: ``None`` to grade it, or its result decided by routing (see :class:`Router`)."""
        try:
            return self._router.plan(sample)
        except Exception as exc:  # a sample whose fields cannot be read: its own error, not the run's
            return tuple(error_from_exception(slot.key, exc) for slot in self._slots)

    async def _drive(
        self,
        samples: Iterable[tuple[K, Any]] | AsyncIterable[tuple[K, Any]],
        emit: Callable[[K, int, RowResult], Awaitable[None] | None],
        total_pairs: int | None,
    ) -> None:
        slots = self._slots
        n_slots = len(slots)
        progress = ProgressBar(total_pairs, label="grading") if self.show_progress else None
        deadline_at = anyio.current_time() + self.deadline_s if self.deadline_s is not None else None
        plan = self._plan if self._router.active else None

        # A sync dataset is one generator the workers share (next() never waits); an async
        # one is pulled under a lock. Each job carries the pair's routed result, if it has one.
        jobs: Iterator[tuple[K, Any, int, RowResult | None]] = iter(())
        pull: Callable[[], Awaitable[tuple[K, Any, int, RowResult | None] | None]] | None = None
        if isinstance(samples, AsyncIterable):
            source = aiter(samples)
            lock = anyio.Lock()
            current: list[Any] = [None, None, n_slots, None]  # key, sample, next slot index, plan

            async def pull_async() -> tuple[K, Any, int, RowResult | None] | None:
                async with lock:
                    if current[2] == n_slots:
                        try:
                            key, sample = await anext(source)
                        except StopAsyncIteration:
                            return None
                        current[:] = key, sample, 0, plan(sample) if plan is not None else None
                    gi = current[2]
                    current[2] = gi + 1
                    routed = current[3]
                    return current[0], current[1], gi, routed[gi] if routed is not None else None

            pull = pull_async
        elif plan is None:
            jobs = ((key, sample, gi, None) for key, sample in samples for gi in range(n_slots))
        else:

            def routed_jobs() -> Iterator[tuple[K, Any, int, RowResult | None]]:
                for key, sample in samples:
                    routed = plan(sample)
                    for gi in range(n_slots):
                        yield key, sample, gi, routed[gi] if routed is not None else None

            jobs = routed_jobs()

        async def worker() -> None:
            timer = section_timer()
            try:
                while (job := next(jobs, None) if pull is None else await pull()) is not None:
                    key, sample, gi, routed = job
                    result = (
                        routed
                        if routed is not None
                        else await self._evaluate(slots[gi], sample, deadline_at, timer)
                    )
                    pending = emit(key, gi, result)
                    if pending is not None:
                        await pending
                    if progress is not None:
                        progress.advance(error=isinstance(result, GraderError))
            finally:
                timer.close()

        workers = (
            self.max_concurrency if total_pairs is None else max(1, min(self.max_concurrency, total_pairs))
        )
        try:
            with batch_collector() if self.settings.tune_collector else contextlib.nullcontext():
                async with anyio.create_task_group() as pool:
                    for _ in range(workers):
                        pool.start_soon(worker)
        finally:
            if progress is not None:
                progress.close()

    # -- public API ---------------------------------------------------------------------

    async def arun(self, dataset: Sequence[Sample]) -> RunnerResult:
        """Grade a dataset; returns results per grader (and aggregator) in dataset order."""
        return (await self._collect([dataset]))[0]

    async def arun_multiple_datasets(self, datasets: Sequence[Sequence[Sample]]) -> list[RunnerResult]:
        """Grade several datasets through one shared pool; one :class:`RunnerResult` each."""
        return await self._collect(datasets)

    async def _collect(self, datasets: Sequence[Sequence[Sample]]) -> list[RunnerResult]:
        tables: list[list[list[RowResult | None]]] = [
            [[None] * len(ds) for _ in self._slots] for ds in datasets
        ]

        def emit(key: tuple[int, int], gi: int, result: RowResult) -> None:
            tables[key[0]][gi][key[1]] = result

        samples = (((di, si), sample) for di, ds in enumerate(datasets) for si, sample in enumerate(ds))
        total = sum(len(ds) for ds in datasets) * len(self._slots)
        await self._drive(samples, emit, total)
        return [self._assemble(table, ds) for table, ds in zip(tables, datasets, strict=True)]

    def _assemble(self, table: list[list[RowResult | None]], dataset: Sequence[Sample]) -> RunnerResult:
        out = RunnerResult()
        for slot, column in zip(self._slots, table, strict=True):
            filled: list[RowResult] = []
            prompt = completion = requests = 0
            for r in column:
                if r is None:  # cannot happen: every pair is emitted exactly once
                    raise AssertionError("a pair produced no result")
                filled.append(r)
                usage = r.usage
                if usage is not None:
                    prompt += usage.prompt_tokens
                    completion += usage.completion_tokens
                    requests += usage.requests
            out[slot.key] = filled
            out.usage[slot.key] = TokenUsage(prompt, completion, requests)
        if self.aggregators:
            n = len(table[0]) if table else 0
            agg_columns: dict[str, list[RowResult]] = {name: [] for name in self.aggregators}
            for i in range(n):
                per_sample = {slot.key: out[slot.key][i] for slot in self._slots}
                for name, r in self._aggregation.apply(per_sample, dataset[i]).items():
                    agg_columns[name].append(r)
            out.update(agg_columns)
        return out

    @asynccontextmanager
    async def astream(
        self, dataset: Iterable[Any] | AsyncIterable[Any]
    ) -> AsyncIterator[AsyncIterator[SampleResult]]:
        """Stream each sample's results as soon as all its graders finish.

        The dataset may be any (async) iterable and is read lazily: memory stays
        O(concurrency) however long it is. Results arrive in completion order::

            async with runner.astream(samples) as results:
                async for sample_result in results:
                    ...
        """
        n_slots = len(self._slots)
        send, receive = anyio.create_memory_object_stream[SampleResult](max_buffer_size=self.max_concurrency)
        rows: dict[int, tuple[Any, list[RowResult | None], list[int]]] = {}

        async def indexed_async(items: AsyncIterable[Any]) -> AsyncIterator[tuple[int, Any]]:
            i = 0
            async for item in items:
                rows[i] = (item, [None] * n_slots, [n_slots])
                yield i, item
                i += 1

        def indexed(items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
            for i, item in enumerate(items):
                rows[i] = (item, [None] * n_slots, [n_slots])
                yield i, item

        async def emit(index: int, gi: int, result: RowResult) -> None:
            sample, row, left = rows[index]
            row[gi] = result
            left[0] -= 1
            if left[0] == 0:
                del rows[index]
                results = {slot.key: r for slot, r in zip(self._slots, row, strict=True) if r is not None}
                await send.send(
                    SampleResult(index, sample, results, self._aggregation.apply(results, sample))
                )

        source: Iterable[tuple[int, Any]] | AsyncIterable[tuple[int, Any]] = (
            indexed_async(dataset) if isinstance(dataset, AsyncIterable) else indexed(dataset)
        )
        total = len(dataset) * n_slots if isinstance(dataset, Sequence) else None

        async def produce() -> None:
            async with send:
                await self._drive(source, emit, total)

        async with anyio.create_task_group() as tg, receive:
            tg.start_soon(produce)
            try:
                yield receive
            finally:
                tg.cancel_scope.cancel()

    # -- sync facade ----------------------------------------------------------------------

    def run(self, dataset: Sequence[Sample]) -> RunnerResult:
        """Blocking :meth:`arun`, safe inside a running event loop and from any thread."""
        return self._sync().call(self.arun, dataset)

    def run_multiple_datasets(self, datasets: Sequence[Sequence[Sample]]) -> list[RunnerResult]:
        """Blocking :meth:`arun_multiple_datasets`."""
        return self._sync().call(self.arun_multiple_datasets, datasets)

    def _sync(self) -> SyncPortal:
        if self._portal is None:
            self._portal = SyncPortal()
        return self._portal

    def close(self) -> None:
        """Stop the sync facade's thread, if it was started."""
        if self._portal is not None:
            self._portal.close()
            self._portal = None
