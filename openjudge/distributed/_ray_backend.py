"""The Ray back end of the job engine: grading on Ray Data actors.

The job engine (:mod:`openjudge.jobs._engine`) does all the file work, as for a local run:
it streams the dataset, binds and resumes the results file, records malformed records and
is the only writer of the results file. :class:`RayBackend` only grades: Ray Data runs
``map_batches`` over a fixed pool of ``workers`` actors
(:class:`~openjudge.distributed._worker.BatchGrader`); each actor builds the job from the
config once and grades its batches with the async runner, under its share of every
provider's limits (:mod:`openjudge.distributed._limits`). Outcomes come back batch by
batch, in order of completion, and are handed to the engine as they arrive.

Samples are sent in windows of at most ``window`` samples: the back end takes a window
from the engine, turns it into blocks of ``batch_size`` samples in the object store
(``ray.data.from_items``), grades them, hands over the outcomes, then takes the next
window. The driver and the object store hold one window of samples (as JSON text) at a
time; each window starts a fresh actor pool.

Ray runs on a worker thread of the engine's event loop, so Ctrl-C and SIGTERM reach the
engine at once; samples are taken and outcomes delivered on the loop's thread.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import itertools
import json
import logging
import math
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

import anyio
import anyio.from_thread

from openjudge.config._build import build_job
from openjudge.config._loader import load_config
from openjudge.config._spec import JobConfig
from openjudge.distributed._limits import plan_workers
from openjudge.distributed._worker import BatchGrader
from openjudge.jobs._datasets import SampleRecord
from openjudge.jobs._engine import Deliver, RunStats, run_job
from openjudge.jobs._records import OutcomeLine
from openjudge.models.cache import default_cache_path
from openjudge.models.policy import ProviderLimits

__all__ = ["RayBackend", "grade_on_ray", "import_ray"]

logger = logging.getLogger(__name__)

_EXTRA_HINT = 'the Ray engine needs Ray Data: pip install "openjudge-graders[ray]"'
_STOP_GRACE_S = 5.0


def import_ray() -> ModuleType:
    """Import ``ray`` and ``ray.data``, or raise an ImportError that names the extra."""
    try:
        import ray
        import ray.data  # the submodule must be importable too
    except ImportError as exc:
        raise ImportError(f"{_EXTRA_HINT} ({exc})") from exc
    return ray


class RayBackend:
    """Grades on a pool of Ray Data actors (see the module docstring).

    Uses the running Ray session if there is one; otherwise, once there is something to
    grade, starts one with ``ray.init`` (a local instance, or the cluster named by
    ``address`` or ``RAY_ADDRESS``) and shuts it down at the end.

    Args:
        config: The job config (its provider limits are split across the actors).
        source: Where the config came from, for error messages.
        base_dir: Folder that relative paths in the config are resolved against.
        workers: Grading actors; capped at the smallest provider ``max_concurrency``.
        batch_size: Samples per block sent to an actor.
        window: Samples per Ray Data execution: the driver holds one window in memory,
            and each window starts a fresh actor pool.
        calls_per_worker: Batches an actor grades at once (on one event loop, under the
            same limits); 2 hides the tail of each batch.
        num_cpus_per_worker: CPUs Ray reserves for each actor.
        use_cache: Use the judge-reply cache of the config (a SQLite file shared by the
            actors of one machine).
        address: Ray cluster to connect to when no session is running.

    Raises:
        ValueError: An argument is out of range.
    """

    def __init__(
        self,
        config: JobConfig,
        *,
        source: str = "<config>",
        base_dir: Path | None = None,
        workers: int = 2,
        batch_size: int = 256,
        window: int = 100_000,
        calls_per_worker: int = 2,
        num_cpus_per_worker: float = 1.0,
        use_cache: bool = True,
        address: str | None = None,
    ) -> None:
        for name, value in (
            ("workers", workers),
            ("batch_size", batch_size),
            ("window", window),
            ("calls_per_worker", calls_per_worker),
        ):
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        self._root = (base_dir if base_dir is not None else Path.cwd()).resolve()
        self._config = config
        self._plan = plan_workers(_pin_cache_path(config, self._root), workers)
        self._source = source
        self._batch_size = batch_size
        self._window = window
        self._calls = calls_per_worker
        self._cpus = num_cpus_per_worker
        self._use_cache = use_cache
        self._address = address
        self.windows = 0
        """Ray Data executions so far (one per window of samples)."""

    @property
    def workers(self) -> int:
        """Grading actors (the request, capped by the smallest provider limit)."""
        return self._plan.workers

    @property
    def worker_limits(self) -> dict[str, ProviderLimits]:
        """Provider name to the limits each actor enforces."""
        return self._plan.limits

    async def grade(self, samples: Iterator[SampleRecord], deliver: Deliver, *, replay: bool) -> None:
        first = next(samples, None)
        if first is None:
            return  # nothing to grade: Ray is not even started
        stop, finished = threading.Event(), threading.Event()
        pending = itertools.chain([first], samples)

        def run() -> None:
            try:
                self._run(pending, deliver, stop, replay)
            finally:
                finished.set()

        try:
            await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        finally:
            stop.set()
            if not finished.is_set():  # stopped: let the thread release the actors
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(finished.wait, _STOP_GRACE_S)

    def _run(
        self, samples: Iterator[SampleRecord], deliver: Deliver, stop: threading.Event, replay: bool
    ) -> None:
        """Grade window after window on Ray (on a worker thread of the engine's loop)."""
        ray = import_ray()
        started_here = _ensure_ray(ray, self._address, self.workers * self._cpus)
        delivered: set[str] = set()

        def take() -> list[dict[str, str | int]]:
            return [] if stop.is_set() else [_item(r) for r in itertools.islice(samples, self._window)]

        def hand_over(lines: list[OutcomeLine]) -> None:
            for line in lines:
                if stop.is_set():
                    return  # the engine stopped: the rest is graded again by the next run
                if line.id in delivered:  # a block retried after a failure came twice: keep one
                    continue
                delivered.add(line.id)
                deliver(line)

        try:
            deadline_s = self._config.runner.deadline_s
            grader_args = (
                self._plan.config,
                self._source,
                str(self._root),
                self._use_cache,
                None if deadline_s is None else time.time() + deadline_s,
                replay,
            )
            while items := anyio.from_thread.run_sync(take):
                self.windows += 1
                # from_items builds the blocks here: no Ray task is needed to read them.
                dataset = ray.data.from_items(items, override_num_blocks=-(-len(items) // self._batch_size))
                del items
                dataset = dataset.map_batches(
                    BatchGrader,
                    fn_constructor_args=grader_args,
                    batch_size=None,  # one call per block of batch_size samples
                    batch_format="pyarrow",
                    compute=_actor_pool(ray, self.workers, self._calls),
                    num_cpus=self._cpus,
                )
                dataset.context.enable_progress_bars = False  # the engine draws its own
                dataset.context.print_on_execution_start = False
                batches = dataset.iter_batches(batch_size=None, batch_format="pyarrow")
                try:
                    for batch in batches:
                        lines = [
                            OutcomeLine.model_validate_json(t) for t in batch.column("outcome").to_pylist()
                        ]
                        anyio.from_thread.run_sync(hand_over, lines)
                        if stop.is_set():
                            return
                finally:
                    close = getattr(batches, "close", None)
                    if close is not None:
                        close()  # stop the streaming execution and release its actors
        finally:
            if started_here:
                ray.shutdown()


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
    regrade: bool = False,
    progress_stream: TextIO | None = None,
) -> RunStats:
    """Grade every sample of ``data_path`` not already in ``out_path``, on Ray.

    The job engine with a :class:`RayBackend`: exactly ``openjudge run --engine ray``.

    Args:
        config: A job config file, or a loaded :class:`JobConfig`.
        data_path: The dataset (JSONL, JSON array or CSV).
        out_path: The results file; samples already in it are skipped.
        workers: Grading actors (see :class:`RayBackend` for this and the next six).
        batch_size: Samples per block sent to an actor.
        window: Samples per Ray Data execution.
        calls_per_worker: Batches an actor grades at once.
        num_cpus_per_worker: CPUs Ray reserves for each actor.
        base_dir: Folder that relative paths in the config are resolved against
            (default: the config file's folder, or the current directory).
        use_cache: Use the judge-reply cache of the config.
        address: Ray cluster to connect to when no session is running.
        regrade: Accept a results file written under changed graders: re-grade only them.
        progress_stream: Draw a progress line here (e.g. ``sys.stderr``); ``None``: none.

    Returns:
        What the run did (:class:`~openjudge.jobs._engine.RunStats`); ``interrupted`` is
        set on Ctrl-C or SIGTERM, with the results file left consistent for a rerun.

    Raises:
        ImportError: Ray Data is not installed (``pip install "openjudge-graders[ray]"``).
        ConfigError: The config is invalid.
        JobMismatchError: The results file was written under another config.
        DatasetError: The dataset cannot be read (or has a bad record and
            ``data.on_error`` is ``fail``).
        ResultsFileError: The results file is damaged or in use by another run.
        ValueError: An argument is out of range.
    """
    import_ray()
    if isinstance(config, JobConfig):
        source, root = "<config>", Path(base_dir if base_dir is not None else Path.cwd())
    else:
        source, root = str(config), Path(base_dir if base_dir is not None else Path(config).parent)
        config = load_config(config)
    job = build_job(
        config, source=source, base_dir=root, use_cache=False
    )  # config errors here, not in actors
    backend = RayBackend(
        config,
        source=source,
        base_dir=root,
        workers=workers,
        batch_size=batch_size,
        window=window,
        calls_per_worker=calls_per_worker,
        num_cpus_per_worker=num_cpus_per_worker,
        use_cache=use_cache,
        address=address,
    )
    run = partial(
        run_job,
        config,
        job,
        data_path=Path(data_path),
        out_path=Path(out_path),
        backend=backend,
        regrade=regrade,
        progress_stream=progress_stream,
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(run)
    # Called from a running event loop (a notebook): run on a loop of its own, in a thread.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="openjudge-ray") as pool:
        return pool.submit(anyio.run, run).result()


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
    """PYTHONPATH for local workers: the folders holding this process's packages first.

    Found without importing them (a worker imports ``providers`` through the config).
    """
    roots: list[str] = []
    for package in ("openjudge", "providers", "integrations"):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin is not None:
            roots.append(str(Path(spec.origin).resolve().parents[1]))
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
