"""Check a job against the first records of its dataset, before any judge is called.

:func:`check_data` maps each of the first records to every grader's inputs exactly as a
run would (mapper paths, same-named fields, template placeholders) and reports each grader
that could not read some of them, and the malformed records among them, as
``file:line: field: problem`` lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from openjudge.graders.judge_grader import JudgeGrader
from openjudge.jobs._datasets import BadRecord, iter_samples
from openjudge.results import GraderError
from openjudge.runner._grader_config import BoundGrader
from openjudge.runner._mapper import MissingFieldError

if TYPE_CHECKING:
    from openjudge.config._build import BuiltJob
    from openjudge.config._spec import JobConfig

__all__ = ["DataCheck", "check_data"]


@dataclass(slots=True)
class _Misses:
    count: int = 0
    first_line: int = 0
    message: str = ""
    path: tuple[str | int, ...] = ()


@dataclass(frozen=True, slots=True)
class DataCheck:
    """What :func:`check_data` found.

    Attributes:
        records: Records read (at most the number asked for).
        problems: One ``file:line: field: problem`` line per grader that cannot read some
            of them, and one for the malformed records.
        unreadable: See below.
    """

    records: int
    problems: tuple[str, ...]
    unreadable: tuple[str, ...] = ()
    """Of ``problems``, the graders that could read *none* of the records: a run refuses
    to start on them (every sample would be an ``invalid_input`` error)."""
    malformed: str | None = None
    """Of ``problems``, the one on malformed records (a run records and counts those itself)."""


def check_data(
    config: JobConfig, job: BuiltJob, data_path: Path, *, source: str = "<config>", records: int = 100
) -> DataCheck:
    """Map the first ``records`` records of ``data_path`` to every grader's inputs.

    Raises:
        DatasetError: The dataset cannot be opened or read.
    """
    where = config.located(source)
    bound = {name: BoundGrader(name, cfg) for name, cfg in job.runner.grader_configs.items()}
    misses = {name: _Misses() for name in bound}
    bad: list[BadRecord] = []
    seen = 0
    data = config.data
    for record in iter_samples(
        data_path,
        format=data.format,
        on_error="skip",
        id_key=data.id_field,
        max_record_bytes=data.max_record_bytes,
    ):
        if seen >= records:
            break
        seen += 1
        if isinstance(record, BadRecord):
            bad.append(record)
            continue
        for name, grader in bound.items():
            spec = config.graders[name]
            path: tuple[str | int, ...] = ("graders", name)
            try:
                inputs = grader.inputs(record.data)
                problem = None
                if isinstance(grader.grader, JudgeGrader):  # renders the template: placeholders, text
                    prepared = grader.grader.prepare(inputs)
                    problem = prepared.message if isinstance(prepared, GraderError) else None
            except MissingFieldError as exc:
                problem = str(exc)
                mapped = [k for k, v in (spec.mapper or {}).items() if v == exc.path]
                path = ("graders", name, "mapper", mapped[0]) if mapped else path
            except Exception as exc:
                problem = str(exc) or type(exc).__name__
            if problem is not None:
                miss = misses[name]
                if not miss.count:
                    miss.first_line, miss.message, miss.path = record.line, problem, path
                miss.count += 1
    problems = [
        where.at(
            miss.path,
            f"cannot read {miss.count} of the first {seen} records of {data_path} "
            f"(first at line {miss.first_line}: {miss.message})",
        )
        for miss in misses.values()
        if miss.count
    ]
    good = seen - len(bad)
    unreadable = [
        where.at(
            miss.path,
            f"cannot read any of the first {good} records of {data_path} "
            f"(first at line {miss.first_line}: {miss.message})",
        )
        for miss in misses.values()
        if good and miss.count == good
    ]
    malformed = None
    if bad:
        malformed = (
            f"{data_path}:{bad[0].line}: {len(bad)} of the first {seen} records are malformed "
            f"(first: {bad[0].message}); they are recorded as invalid_input results"
        )
        problems.append(malformed)
    return DataCheck(seen, tuple(problems), tuple(unreadable), malformed)
