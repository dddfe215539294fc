"""Check a job against the first records of its dataset, before any judge is called.

:func:`check_data` routes each of the first records as a run would (each grader's ``when``,
the row's graders field), maps it to the inputs of every grader that applies to it (mapper
paths, same-named fields, template placeholders) and reports, as ``file:line: field:
problem`` lines: each grader that could not read some of the records it applies to, the
records that cannot be routed (no grader applies, or a wrong graders field), a ``when``
field that no record has (a misspelt field would silently apply its grader nowhere), and
the malformed records.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from openjudge.graders.judge_grader import JudgeGrader
from openjudge.jobs._datasets import BadRecord, SampleRecord, iter_samples
from openjudge.results import GraderError, NotApplicable
from openjudge.runner._grader_config import BoundGrader
from openjudge.runner._mapper import MissingFieldError
from openjudge.runner._routing import has_field

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

    def note(self, record: SampleRecord, message: str, path: tuple[str | int, ...]) -> None:
        if not self.count:
            self.first_line, self.message, self.path = record.line, message, path
        self.count += 1


@dataclass(frozen=True, slots=True)
class DataCheck:
    """What :func:`check_data` found.

    Attributes:
        records: Records read (at most the number asked for).
        problems: One ``file:line: field: problem`` line per grader that cannot read some
            of the records it applies to, one for the records that cannot be routed, one
            per ``when`` field that no record has, and one for the malformed records.
        unreadable: See below.
        applies: Grader name -> how many of the (well-formed, routed) records it applies to.
        routed: Whether the job routes graders (``when``, a graders field).
    """

    records: int
    problems: tuple[str, ...]
    unreadable: tuple[str, ...] = ()
    """The graders that could read *none* of the records they apply to, and the records when
    none of them can be routed: a run refuses to start on them (it would write nothing but
    ``invalid_input`` errors there)."""
    applies: dict[str, int] = field(default_factory=dict)
    routed: bool = False
    absent_fields: tuple[str, ...] = ()
    """Of ``problems``, the ``when`` fields no record has (a run warns, and grades)."""


def _problem(
    grader: BoundGrader, mapper: dict[str, str] | None, sample: object
) -> tuple[str, tuple[str, ...]] | None:
    """Why ``grader`` cannot read ``sample`` (and the mapper entry at fault), or ``None``."""
    try:
        inputs = grader.inputs(sample)
        if isinstance(grader.grader, JudgeGrader):  # renders the template: placeholders, text
            prepared = grader.grader.prepare(inputs)
            if isinstance(prepared, GraderError):
                return prepared.message, ()
    except MissingFieldError as exc:
        mapped = [k for k, v in (mapper or {}).items() if v == exc.path]
        return str(exc), ("mapper", mapped[0]) if mapped else ()
    except Exception as exc:
        return str(exc) or type(exc).__name__, ()
    return None


def _conditions(config: JobConfig) -> dict[str, tuple[str | int, ...]]:
    """Each field a ``when`` reads -> where the first condition on it is in the config."""
    found: dict[str, tuple[str | int, ...]] = {}
    for name, grader in config.graders.items():
        for path in grader.when or {}:
            found.setdefault(path, ("graders", name, "when", path))
    for i, agg in enumerate(config.aggregators):
        for path in agg.when or {}:
            found.setdefault(path, ("aggregators", i, "when", path))
    return found


def check_data(
    config: JobConfig, job: BuiltJob, data_path: Path, *, source: str = "<config>", records: int = 100
) -> DataCheck:
    """Route the first ``records`` records of ``data_path`` and map each to its graders' inputs.

    Raises:
        DatasetError: The dataset cannot be opened or read.
    """
    runner = job.runner
    bound = {name: BoundGrader(name, cfg) for name, cfg in runner.grader_configs.items()}
    misses = {name: _Misses() for name in bound}
    applies: Counter[str] = Counter()
    unrouted = _Misses()
    conditions = _conditions(config)
    fields_seen: set[str] = set()
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
        fields_seen.update(path for path in conditions if has_field(record.data, path))
        routed = runner.route(record.data)
        refused = next((r for r in routed.values() if isinstance(r, GraderError)), None)
        if refused is not None:  # no grader applies, or a wrong graders field
            unrouted.note(record, refused.message, ())
            continue
        for name, grader in bound.items():
            if isinstance(routed.get(name), NotApplicable):
                continue
            applies[name] += 1
            found = _problem(grader, config.graders[name].mapper, record.data)
            if found is not None:
                message, under = found
                misses[name].note(record, message, ("graders", name, *under))
    where = config.located(source)
    good = seen - len(bad)

    def among(n: int) -> str:
        return (
            f"the {n} records it applies to among the first {seen}" if runner.routed else f"the first {seen}"
        )

    problems = [
        where.at(
            miss.path,
            f"cannot read {miss.count} of {among(applies[name])} records of {data_path} "
            f"(first at line {miss.first_line}: {miss.message})",
        )
        for name, miss in misses.items()
        if miss.count
    ]
    unreadable = [
        where.at(
            miss.path,
            f"cannot read any of {among(applies[name]) if runner.routed else f'the first {good}'} records "
            f"of {data_path} (first at line {miss.first_line}: {miss.message})",
        )
        for name, miss in misses.items()
        if applies[name] and miss.count == applies[name]
    ]
    if unrouted.count:
        problems.append(
            f"{data_path}:{unrouted.first_line}: {unrouted.count} of the first {seen} records cannot be "
            f"graded (first: {unrouted.message}); they are recorded as invalid_input results"
        )
        if unrouted.count == good:  # a run would write nothing but errors
            unreadable.append(
                f"{data_path}:{unrouted.first_line}: none of the first {good} records can be graded "
                f"(first: {unrouted.message})"
            )
    absent = [
        where.at(
            at,
            f"none of the first {good} records of {data_path} has the field {path!r}, so this condition "
            "holds for none of them: check the field's name",
        )
        for path, at in conditions.items()
        if good and path not in fields_seen
    ]
    problems += absent
    if bad:
        problems.append(
            f"{data_path}:{bad[0].line}: {len(bad)} of the first {seen} records are malformed "
            f"(first: {bad[0].message}); they are recorded as invalid_input results"
        )
    return DataCheck(seen, tuple(problems), tuple(unreadable), dict(applies), runner.routed, tuple(absent))
