"""The grading worker: a Ray Data callable class, one instance per actor.

Input batches are Arrow tables with the columns ``id`` (string), ``line`` (int64) and
``data`` (the sample as JSON text, so nested and mixed-type fields cross Arrow
unchanged). Output batches have one column, ``outcome``: the results-file line of each
sample as JSON text (see :mod:`openjudge.jobs._results`).

The class imports neither Ray nor pyarrow at module level; Ray pickles it by reference.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from openjudge.config._build import build_job
from openjudge.config._spec import JobConfig
from openjudge.jobs._engine import aggregate_values
from openjudge.jobs._replay import replaying_runner
from openjudge.jobs._results import SampleOutcome
from openjudge.runner._sync import SyncPortal
from openjudge.runner.grading_runner import GradingRunner

__all__ = ["BatchGrader"]

_TINY_DEADLINE_S = 1e-9


class BatchGrader:
    """Builds the job once per actor and grades each batch with the async runner.

    Every batch runs on the actor's one long-lived event loop (a :class:`SyncPortal`
    thread), so concurrent batches in the same actor share its providers and therefore
    one set of limits: the worker's share from :mod:`openjudge.distributed._limits`.

    Args:
        config: The job config, with provider limits already split per worker.
        source: Where the config came from, for error messages.
        base_dir: Folder that relative paths in the config are resolved against.
        use_cache: Use the judge-reply cache of the config.
        deadline_at: Wall-clock time (``time.time()``) when the run's deadline passes,
            or ``None``; pairs not finished by then become timeout errors.
        replay: Samples may carry stored results to re-use (:mod:`openjudge.jobs._replay`).
    """

    def __init__(
        self,
        config: JobConfig,
        source: str,
        base_dir: str | None,
        use_cache: bool,
        deadline_at: float | None,
        replay: bool = False,
    ) -> None:
        job = build_job(
            config,
            source=source,
            base_dir=Path(base_dir) if base_dir is not None else None,
            use_cache=use_cache,
            own_process=True,  # a grading actor's process is ours
        )
        self._base = replaying_runner(job.runner) if replay else job.runner
        self._deadline_at = deadline_at
        self._portal = SyncPortal()

    def __call__(self, batch: Any) -> Any:  # pyarrow.Table in, pyarrow.Table out
        import pyarrow  # type: ignore[import-untyped]  # pyarrow ships no type information

        ids: list[str] = batch.column("id").to_pylist()
        lines: list[int | None] = batch.column("line").to_pylist()
        texts: list[str] = batch.column("data").to_pylist()
        outcomes = self._portal.call(self._grade, ids, lines, texts)
        return pyarrow.table({"outcome": pyarrow.array(outcomes, type=pyarrow.string())})

    def _runner(self) -> GradingRunner:
        runner = self._base
        if self._deadline_at is None:
            return runner
        remaining = max(self._deadline_at - time.time(), _TINY_DEADLINE_S)
        return runner.replace(show_progress=False, deadline_s=remaining)

    async def _grade(self, ids: list[str], lines: list[int | None], texts: list[str]) -> list[str]:
        samples = [json.loads(text) for text in texts]
        outcomes = [""] * len(samples)
        async with self._runner().astream(samples) as stream:
            async for item in stream:
                i = item.index
                outcome = SampleOutcome(ids[i], lines[i], item.results, aggregate_values(item.aggregates))
                outcomes[i] = outcome.to_line().model_dump_json()
        return outcomes
