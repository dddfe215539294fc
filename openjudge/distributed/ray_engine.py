"""Grade a dataset across a Ray cluster with Ray Data, into a resumable results file.

The driver (the process that calls :func:`grade_on_ray`) does all the file work, exactly
as the local engine does: it streams the dataset with
:func:`~openjudge.jobs.datasets.iter_samples` (stable ids, bad-record handling), skips the
ids already in the results file, records malformed records, and is the only writer of the
results file (:class:`~openjudge.jobs.results.ResultsWriter`). Between the two, Ray Data
runs ``map_batches`` over a fixed pool of ``workers`` actors
(:class:`~openjudge.distributed._worker.BatchGrader`); each actor builds the job from the
config once and grades its batches with the async runner, under its share of every
provider's limits (:mod:`openjudge.distributed.limits`). Outcomes come back to the driver
batch by batch, in order of completion, and are appended as they arrive.

Samples are sent in windows of at most ``window`` samples: the driver reads a window,
turns it into blocks of ``batch_size`` samples in the object store
(``ray.data.from_items``), grades them, writes the outcomes, then reads the next window.
The driver and the object store hold one window of samples (as JSON text) at a time;
each window starts a fresh actor pool.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import json
import logging
import math
import os
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, TextIO

import openjudge
from openjudge.config.build import build_job
from openjudge.config.loader import load_config
from openjudge.config.schema import JobConfig
from openjudge.distributed._worker import BatchGrader
from openjudge.distributed.limits import plan_workers
from openjudge.graders.schema import GraderError
from openjudge.jobs.datasets import BadRecord, SampleRecord, iter_samples
from openjudge.jobs.records import OutcomeLine
from openjudge.jobs.results import ResultsWriter, SampleOutcome
from openjudge.models.cache import default_cache_path
from openjudge.models.policy import ProviderLimits
from openjudge.runner.progress import ProgressBar

__all__ = ["RayRunStats", "grade_on_ray", "import_ray"]

logger = logging.getLogger(__name__)

_EXTRA_HINT = 'the Ray engine needs Ray Data: pip install "openjudge[ray]"'


def import_ray() -> ModuleType:
    """Import ``ray`` and ``ray.data``, or raise an ImportError that names the extra."""
    try:
        import ray
        import ray.data  # the submodule must be importable too
    except ImportError as exc:
        raise ImportError(f"{_EXTRA_HINT} ({exc})") from exc
    return ray


@dataclass(slots=True)
class RayRunStats:
    """What one :func:`grade_on_ray` call did.

    Attributes:
        graded: Samples graded and written by this call.
        skipped_done: Samples skipped because their id was already in the results file.
        bad_records: Malformed records written as invalid-input results.
        with_errors: Graded samples with at least one grader error.
        interrupted: The run stopped on Ctrl-C or SIGTERM (rerun to resume).
        workers: Grading actors used (the request, capped by the smallest provider limit).
        worker_limits: Provider name to the limits each actor enforced.
        windows: Ray Data executions (one per window of samples).
        elapsed_s: Wall time of the grading, Ray start-up excluded.
    """

    graded: int = 0
    skipped_done: int = 0
    bad_records: int = 0
    with_errors: int = 0
    interrupted: bool = False
    workers: int = 0
    worker_limits: dict[str, ProviderLimits] = field(default_factory=dict)
    windows: int = 0
    elapsed_s: float = 0.0


def grade_on_ray(
    config: str | Path | JobConfig,
    data_path: str | Path,
    out_path: str | Path,
    *,
    workers: int = 2,
    batch_size: int = 256,
    window: int = 100_000,
    calls_per_worker: int = 2,
    num_cpus_per_worker: float = 1.0,
    base_dir: str | Path | None = None,
    use_cache: bool = True,
    address: str | None = None,
    progress_stream: TextIO | None = None,
) -> RayRunStats:
    """Grade every sample of ``data_path`` not already in ``out_path``, on Ray.

    Uses the running Ray session if there is one; otherwise, once there is something to
    grade, starts one with ``ray.init`` (a local instance, or the cluster named by
    ``address`` or ``RAY_ADDRESS``) and shuts it down at the end.

    Args:
        config: A job config file, or a loaded :class:`JobConfig`.
        data_path: The dataset (JSONL, JSON array or CSV).
        out_path: The results file; samples already in it are skipped.
        workers: Grading actors. Each provider's ``max_concurrency`` (and ``rpm``/``tpm``)
            is split evenly across them, so the cluster-wide totals stay within the
            configured limits; capped at the smallest provider ``max_concurrency``.
        batch_size: Samples per block sent to an actor.
        window: Samples per Ray Data execution: the driver holds one window in memory,
            and each window starts a fresh actor pool.
        calls_per_worker: Batches an actor grades at once (on one event loop, under the
            same limits); 2 hides the tail of each batch.
        num_cpus_per_worker: CPUs Ray reserves for each actor.
        base_dir: Folder that relative paths in the config are resolved against
            (default: the config file's folder, or the current directory).
        use_cache: Use the judge-reply cache of the config (a SQLite file shared by the
            actors of one machine).
        address: Ray cluster to connect to when no session is running.
        progress_stream: Draw a progress line here (e.g. ``sys.stderr``); ``None``: none.

    Returns:
        Counts of what this call did; ``interrupted`` is set on Ctrl-C or SIGTERM, with
        the results file left consistent for a rerun to resume.

    Raises:
        ImportError: Ray Data is not installed (``pip install "openjudge[ray]"``).
        ConfigError: The config is invalid.
        DatasetError: The dataset cannot be read (or has a bad record and
            ``data.on_error`` is ``fail``).
        ResultsFileError: The results file is damaged or in use by another run.
        ValueError: An argument is out of range.
    """
    for name, value in (
        ("batch_size", batch_size),
        ("window", window),
        ("calls_per_worker", calls_per_worker),
    ):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    ray = import_ray()
    if isinstance(config, JobConfig):
        source, root = "<config>", Path(base_dir if base_dir is not None else Path.cwd())
    else:
        source, root = str(config), Path(base_dir if base_dir is not None else Path(config).parent)
        config = load_config(config)
    root = root.resolve()
    build_job(config, source=source, base_dir=root, use_cache=False)  # config errors here, not in actors
    plan = plan_workers(_pin_cache_path(config, root), workers)
    driver = _Driver(config, RayRunStats(workers=plan.workers, worker_limits=plan.limits))
    with _interrupts_as_keyboard_interrupt(), contextlib.ExitStack() as stack:
        try:
            writer = stack.enter_context(ResultsWriter(Path(out_path)))
            driver.open(writer, Path(data_path), progress_stream)
            if driver.progress is not None:
                stack.callback(driver.progress.close)
            pending = (_item(record) for record in driver.pending())
            first = next(pending, None)
            if first is None:
                return driver.stats  # nothing to grade: Ray is not even started
            if _ensure_ray(ray, address, plan.workers * num_cpus_per_worker):
                stack.callback(ray.shutdown)
            began = time.monotonic()
            deadline = config.runner.deadline_s
            grader_args = (
                plan.config,
                source,
                str(root),
                use_cache,
                None if deadline is None else time.time() + deadline,
            )
            samples = itertools.chain([first], pending)
            try:
                while items := list(itertools.islice(samples, window)):
                    driver.stats.windows += 1
                    # from_items builds the blocks here: no Ray task is needed to read them.
                    dataset = ray.data.from_items(items, override_num_blocks=-(-len(items) // batch_size))
                    del items
                    dataset = dataset.map_batches(
                        BatchGrader,
                        fn_constructor_args=grader_args,
                        batch_size=None,  # one call per block of batch_size samples
                        batch_format="pyarrow",
                        compute=_actor_pool(ray, plan.workers, calls_per_worker),
                        num_cpus=num_cpus_per_worker,
                    )
                    dataset.context.enable_progress_bars = False  # the driver draws its own
                    dataset.context.print_on_execution_start = False
                    driver.write_all(dataset.iter_rows())
            finally:
                driver.stats.elapsed_s = time.monotonic() - began
        except KeyboardInterrupt:
            driver.stats.interrupted = True
    return driver.stats


class _Driver:
    """The driver's side of a run: reading samples, writing outcomes, counting."""

    def __init__(self, config: JobConfig, stats: RayRunStats) -> None:
        self.config = config
        self.stats = stats
        self.progress: ProgressBar | None = None
        self._writer: ResultsWriter | None = None
        self._data = Path()
        self._done: set[str] = set()

    def open(self, writer: ResultsWriter, data: Path, progress_stream: TextIO | None) -> None:
        self._writer = writer
        self._data = data
        self._done = writer.completed_ids()
        if progress_stream is not None:
            total = _count_records(data, self.config.data.format)
            remaining = None if total is None else max(0, total - len(self._done))
            self.progress = ProgressBar(remaining, label="samples", stream=progress_stream)

    def _require_writer(self) -> ResultsWriter:
        if self._writer is None:
            raise RuntimeError("open() the driver first")
        return self._writer

    def pending(self) -> Iterator[SampleRecord]:
        """The samples to grade; malformed records are written as they are met."""
        writer, data, stats = self._require_writer(), self.config.data, self.stats
        graders = list(self.config.graders)
        for record in iter_samples(
            self._data, format=data.format, on_error=data.on_error, id_key=data.id_field
        ):
            if isinstance(record, BadRecord):
                bad_id = f"invalid-line-{record.line}"
                if bad_id in self._done:
                    continue
                error = GraderError(name="dataset", kind="invalid_input", message=record.message)
                writer.write(SampleOutcome(bad_id, record.line, dict.fromkeys(graders, error)))
                self._done.add(bad_id)
                stats.bad_records += 1
                if self.progress is not None:
                    self.progress.advance(error=True)
            elif record.id in self._done:
                stats.skipped_done += 1
            else:
                yield record

    def write_all(self, rows: Iterable[dict[str, Any]]) -> None:
        """Append each outcome row as it arrives (Ray Data yields them as blocks complete)."""
        writer, stats = self._require_writer(), self.stats
        iterator = iter(rows)
        try:
            for row in iterator:
                line = OutcomeLine.model_validate_json(row["outcome"])
                if line.id in self._done:  # a block retried after a failure came twice: keep one
                    continue
                writer.write(line)
                self._done.add(line.id)
                stats.graded += 1
                failed = any(entry.type == "error" for entry in line.results.values())
                stats.with_errors += failed
                if self.progress is not None:
                    self.progress.advance(error=failed)
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()  # stop the streaming execution and release its actors


def _ensure_ray(ray: ModuleType, address: str | None, cpus_needed: float) -> bool:
    """Start (or connect to) Ray unless a session is running; True if this call did.

    A local instance gets at least ``cpus_needed`` logical CPUs, so the actor pool always
    fits (judging is mostly waiting); on a cluster too small for it, a warning is logged
    (an autoscaling cluster may still grow).
    """
    if not ray.is_initialized():
        if address is None and not os.environ.get("RAY_ADDRESS"):
            # No dashboard; and workers import the same openjudge as this process (Ray
            # only adds the driver's script folder and working directory to their path).
            ray.init(
                num_cpus=max(os.cpu_count() or 1, math.ceil(cpus_needed)),
                include_dashboard=False,
                runtime_env={"env_vars": {"PYTHONPATH": _import_path()}},
            )
            return True
        ray.init(address=address)
        started = True
    else:
        started = False
    available = float(ray.cluster_resources().get("CPU", 0.0))
    if available < cpus_needed:
        logger.warning(
            "the Ray cluster has %g CPUs but the grading actors reserve %g: they wait until it grows; "
            "use fewer workers or a smaller num_cpus_per_worker",
            available,
            cpus_needed,
        )
    return started


def _import_path() -> str:
    """PYTHONPATH for local workers: the folders of this openjudge and providers first."""
    import providers

    roots = [str(Path(module.__file__ or "").resolve().parents[1]) for module in (openjudge, providers)]
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys([*roots, *rest]))


def _actor_pool(ray: ModuleType, workers: int, calls: int) -> Any:  # ray.data.ActorPoolStrategy
    strategy = ray.data.ActorPoolStrategy
    params = inspect.signature(strategy).parameters
    if "enable_true_multi_threading" in params:  # Ray >= 2.49: UDF calls run concurrently only if asked
        return strategy(
            size=workers,
            max_tasks_in_flight_per_actor=calls,
            max_concurrent_calls_per_actor=calls,
            enable_true_multi_threading=True,
        )
    return strategy(size=workers, max_tasks_in_flight_per_actor=calls)


def _pin_cache_path(config: JobConfig, root: Path) -> JobConfig:
    """Resolve the judge-cache path on the driver, so every actor opens the same file."""
    if not config.cache.enabled:
        return config
    path = Path(config.cache.path) if config.cache.path is not None else default_cache_path()
    path = path if path.is_absolute() else root / path
    return config.model_copy(update={"cache": config.cache.model_copy(update={"path": str(path)})})


def _item(record: SampleRecord) -> dict[str, str | int]:
    """One row of the input dataset; the sample travels as JSON text so that nested and
    mixed-type fields cross Arrow unchanged."""
    data = json.dumps(record.data, ensure_ascii=False, separators=(",", ":"))
    return {"id": record.id, "line": record.line, "data": data}


def _count_records(path: Path, fmt: str) -> int | None:
    """Non-blank lines of a JSONL file (for the progress total); ``None`` for other formats."""
    if fmt not in ("auto", "jsonl") or path.suffix.lower() not in (".jsonl", ".ndjson"):
        return None
    if not path.is_file():
        return None
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


@contextlib.contextmanager
def _interrupts_as_keyboard_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C while grading (main thread only), so both stop cleanly."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
