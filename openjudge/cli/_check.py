"""The checks ``run``, ``validate`` and ``estimate`` share, so they judge a job the same way.

Each command loads the config and builds the job itself (``run`` with its cache, the others
without); then the same two steps decide what it may go on with:

* :func:`dataset_path`: ``--data``, else ``data.path`` beside the config. A dataset that is
  named but missing is an error for every command (``validate`` used to call such a config
  ok, and ``run`` then refused it).
* the first :data:`DATA_CHECK_RECORDS` records mapped to every grader's inputs
  (:func:`~openjudge.jobs._preflight.check_data`, as a run maps them). The problems found
  are the same for both commands; ``validate`` fails on any of them, ``run`` prints them
  as warnings (:func:`check_before_run`) and refuses to start only when a grader can read
  none of the records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, overload

from openjudge.config._build import BuiltJob
from openjudge.config._loader import ConfigError
from openjudge.config._spec import JobConfig
from openjudge.jobs._preflight import check_data

__all__ = ["DATA_CHECK_RECORDS", "check_before_run", "dataset_path"]

DATA_CHECK_RECORDS = 100
"""Records mapped to every grader before a run starts (``validate --records`` defaults to it)."""


@overload
def dataset_path(
    config: JobConfig, config_path: Path, override: Path | None, *, required: Literal[True]
) -> Path: ...
@overload
def dataset_path(
    config: JobConfig, config_path: Path, override: Path | None, *, required: bool
) -> Path | None: ...
def dataset_path(
    config: JobConfig, config_path: Path, override: Path | None, *, required: bool
) -> Path | None:
    """The dataset to grade: ``--data``, else ``data.path`` relative to the config file.

    ``None`` when neither names one and ``required`` is false.

    Raises:
        ConfigError: The dataset named is not a file (naming the ``data.path`` line when it
            came from the config), or none is named and ``required`` is true.
    """
    if override is not None:
        if not override.is_file():
            raise ConfigError([f"{override}: dataset file not found (--data)"])
        return override
    where = config.located(str(config_path))
    if config.data.path is None:
        if required:
            raise ConfigError([where.at(("data",), "no dataset: give --data FILE or set data.path")])
        return None
    path = Path(config.data.path)
    path = path if path.is_absolute() else config_path.parent / path
    if not path.is_file():
        raise ConfigError(
            [
                where.at(
                    ("data", "path"), f"dataset file not found: {path} (fix data.path, or give --data FILE)"
                )
            ]
        )
    return path


def check_before_run(config: JobConfig, job: BuiltJob, data: Path, *, source: str) -> tuple[str, ...]:
    """Map the first records as ``validate`` does; the graders' problems found, for ``run`` to
    print as warnings (malformed records are left to the run, which records and counts them).

    Raises:
        ConfigError: A grader can read none of the records: it would only write
            ``invalid_input`` errors, and fixing the mapper afterwards would need ``--regrade``.
        DatasetError: The dataset cannot be opened or read.
    """
    check = check_data(config, job, data, source=source, records=DATA_CHECK_RECORDS)
    if check.unreadable:
        raise ConfigError(
            [
                *check.unreadable,
                "nothing was graded: fix the mapper (or the data), then rerun; "
                f"'openjudge validate {source} --data {data}' checks it without grading",
            ]
        )
    return tuple(p for p in check.problems if p != check.malformed)  # the run counts those itself
