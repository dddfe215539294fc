"""A results file bound to its job: resume it, adapt it to an extended job, or refuse.

:class:`BoundResults` opens the results file of a run and compares the fingerprint in its
header with the current job's (:mod:`._fingerprint`):

* a new or empty file gets the current header; a file written by the same job is resumed
  (its samples are skipped), except that results which failed for system reasons
  (:data:`~openjudge.jobs._results.SYSTEM_ERROR_KINDS`: the judge was unavailable, our own
  timeout, a bug) are *re-attempted*: those samples are graded again with their other
  results replayed, so a rerun after an outage finishes the job (``retry_failed=False``
  keeps them as they are);
* a file written by a job that lacks some graders (or has other aggregators) is
  *migrated*: every sample already in it is graded again with its stored results replayed
  (:mod:`._replay`), so only the added graders call a judge. With ``regrade=True`` the same
  happens for changed graders, and removed graders' results are dropped;
* any other difference raises :class:`JobMismatchError`, saying what changed and the two
  ways forward.

A migration writes a new file next to the old one (``<out>.regrade``) and, once every
sample of the dataset is in it, renames the old file to ``<out>.bak`` and the new one to
``<out>``. Interrupted, it resumes from ``<out>.regrade`` on the next run; the old file
is untouched until the end.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from pydantic import JsonValue

import openjudge
from openjudge.jobs._datasets import BadRecord, SampleRecord
from openjudge.jobs._fingerprint import JobChanges, JobFingerprint, compare
from openjudge.jobs._records import ErrorEntry, NotApplicableEntry, OutcomeLine, ResultsHeader
from openjudge.jobs._replay import with_stored
from openjudge.jobs._results import (
    SYSTEM_ERROR_KINDS,
    ResultsFileError,
    ResultsWriter,
    SampleOutcome,
    index_results,
)
from openjudge.results import GraderError

__all__ = ["DISTRIBUTION", "BoundResults", "JobMismatchError", "Pending", "writer_name"]

logger = logging.getLogger(__name__)

DISTRIBUTION = "openjudge-graders"
"""The name openjudge is published under (``pip install openjudge-graders``)."""


def writer_name() -> str:
    """``"openjudge-graders <version>"``, for the header of the files we write."""
    return f"{DISTRIBUTION} {openjudge.__version__}"


class JobMismatchError(ResultsFileError):
    """A results file was written by another job: resuming into it would mix the two.

    The one public exception defined outside :mod:`openjudge.errors`: it carries a jobs
    type. ``except ResultsFileError`` (from :mod:`openjudge.errors`) covers it.

    Attributes:
        changes: What differs, or ``None`` if the file has no header to compare.
    """

    def __init__(self, message: str, changes: JobChanges | None) -> None:
        super().__init__(message)
        self.changes = changes


@dataclass(frozen=True, slots=True)
class Pending:
    """A sample to grade, with what is to be graded for real.

    Attributes:
        record: The sample (carrying its stored results when some are replayed).
        to_grade: Graders graded for real; ``None``: all of them.
        retried: Some of ``to_grade`` failed for system reasons in the stored line.
        copy: The stored line, complete and unchanged: write it as it is, grade nothing.
    """

    record: SampleRecord
    to_grade: frozenset[str] | None = None
    retried: bool = False
    copy: OutcomeLine | None = None


def _mismatch(path: Path, changes: JobChanges | None, samples: int) -> JobMismatchError:
    if changes is None:
        what = (
            f"{path} holds {samples} results but no job header (it was written by an older "
            "openjudge or by hand), so it cannot be told whether they came from this config."
        )
        forward = (
            f"Write to a new file (--out NEW.jsonl), or pass --regrade to grade its {samples} samples again."
        )
        return JobMismatchError(f"{what}\n{forward}", None)
    lines = "\n".join(f"  {line}" for line in changes.describe())
    regraded = sorted(changes.to_grade)
    plan = (
        f"re-grade {', '.join(regraded)} on its {samples} samples"
        if regraded
        else f"recompute its {samples} samples without judge calls"
    )
    if changes.removed:
        plan += f" and drop the results of {', '.join(changes.removed)}"
    return JobMismatchError(
        f"{path} holds {samples} results written under a different config, and resuming would "
        f"mix the two:\n{lines}\n"
        f"Either write to a new file (--out NEW.jsonl), or pass --regrade to {plan} "
        f"(the other results are kept; the old file is saved as {path.name}.bak).",
        changes,
    )


class BoundResults:
    """The results file of one run, bound to the run's job (see the module docstring).

    Args:
        path: The results file.
        fingerprint: The current job's fingerprint.
        regrade: Accept changed and removed graders: re-grade the changed ones on the
            samples already in the file, drop the removed ones' results.
        retry_failed: Re-attempt stored results that failed for system reasons.

    Raises (on ``__enter__``):
        JobMismatchError: The file belongs to another job and ``regrade`` is off.
        ResultsFileError: The file is damaged or in use by another run.
    """

    def __init__(
        self, path: Path, fingerprint: JobFingerprint, *, regrade: bool = False, retry_failed: bool = True
    ) -> None:
        self.path = path
        self.header = ResultsHeader(writer=writer_name(), job=fingerprint)
        self._regrade = regrade
        self._retry_failed = retry_failed
        self._target: ResultsWriter | None = None
        self._previous: ResultsWriter | None = None
        self._offsets: dict[str, tuple[int, int]] = {}
        self._keep: frozenset[str] = frozenset()
        self.changes: JobChanges | None = None
        """What the file's job lacked (``None`` when the file is new or from the same job)."""
        self.previous_samples = 0
        """Samples in the file when it was opened."""
        self.failed_samples = 0
        """Samples in the file, when it was opened, with results that failed for system
        reasons (re-attempted by this run unless ``retry_failed`` is off)."""

    @property
    def migrating(self) -> bool:
        """Whether samples already in the file are being graded again (see the module docstring)."""
        return self._previous is not None

    @property
    def staging_path(self) -> Path:
        return self.path.with_name(self.path.name + ".regrade")

    @property
    def backup_path(self) -> Path:
        return self.path.with_name(self.path.name + ".bak")

    def __enter__(self) -> BoundResults:
        target = ResultsWriter(self.path)
        target.open()
        try:
            self._bind(target)
        except BaseException:
            target.close()
            raise
        return self

    def _bind(self, current: ResultsWriter) -> None:
        self.previous_samples = len(current)
        if not len(current):
            if current.header != self.header:
                current.set_header(self.header)
            self._target = current
            return
        header = current.header
        changes = compare(header.job, self.header.job) if header is not None else None
        self.failed_samples = len(current.failed_ids)
        if changes is not None and changes.empty:
            if not (self._retry_failed and current.failed_ids):
                self._target = current
                return
            changes = None  # the same job: only its failed results are graded again
        elif changes is None or (changes.needs_consent and not self._regrade):
            if not self._regrade:
                raise _mismatch(self.path, changes, len(current))
            changes = JobChanges(added=tuple(self.header.job.graders))  # no header: grade everything
        self.changes = changes
        self._keep = frozenset(self.header.job.graders) - (changes.to_grade if changes else frozenset())
        self._offsets = index_results(self.path)  # only now: it costs memory per sample
        self._previous = current
        self._target = self._open_staging()

    def _open_staging(self) -> ResultsWriter:
        staging = ResultsWriter(self.staging_path)
        staging.open()
        if staging.header is not None and staging.header.job == self.header.job:
            return staging  # an interrupted migration to this same job: go on with it
        if len(staging):  # a migration to another job that never finished: start over
            staging.close()
            self.staging_path.unlink()
            staging = ResultsWriter(self.staging_path)
            staging.open()
        staging.set_header(self.header)
        return staging

    def _writer(self) -> ResultsWriter:
        if self._target is None:
            raise RuntimeError("use BoundResults as a context manager")
        return self._target

    def is_done(self, sample_id: str) -> bool:
        """Whether the sample's results are complete in the file being written."""
        if sample_id not in self._writer():
            return False
        self._offsets.pop(sample_id, None)  # migrated by an earlier, interrupted run
        return True

    def __len__(self) -> int:
        return len(self._writer())

    def prepare(self, record: SampleRecord) -> Pending:
        """What to grade for a sample that is not complete yet."""
        previous = self._previous
        where = self._offsets.pop(record.id, None) if previous is not None else None
        if previous is None or where is None:
            return Pending(record)
        line = previous.read_line(*where)
        kept = {name: entry for name, entry in line.results.items() if name in self._keep}
        retried = False
        if self._retry_failed:
            failed = {
                name
                for name, entry in kept.items()
                if isinstance(entry, ErrorEntry) and entry.kind in SYSTEM_ERROR_KINDS
            }
            retried = bool(failed)
            for name in failed:
                del kept[name]
        to_grade = frozenset(self.header.job.graders) - kept.keys()
        if not to_grade and self.changes is None:  # a retry run, and nothing failed here
            return Pending(record, frozenset(), copy=line.model_copy(update={"line": record.line}))
        # Graded again anyway: routing decides afresh what applies (the row may name others now).
        routed = {name for name, entry in kept.items() if isinstance(entry, NotApplicableEntry)}
        to_grade |= routed
        stored: dict[str, JsonValue] = {
            name: entry.model_dump(mode="json") for name, entry in kept.items() if name not in routed
        }
        replayed = SampleRecord(record.line, with_stored(record.data, stored), record.id)
        return Pending(replayed, to_grade, retried=retried)

    def write(self, outcome: SampleOutcome | OutcomeLine) -> None:
        self._writer().write(outcome)

    def write_bad(self, record: BadRecord) -> None:
        """Record a malformed record as an invalid-input result for every grader."""
        self._offsets.pop(record.id, None)
        error = GraderError(name="dataset", kind="invalid_input", message=record.message)
        results = dict.fromkeys(self.header.job.graders, error)
        missing = dict.fromkeys(self.header.job.aggregators, None)  # failed, not "not applicable" (absent)
        self._writer().write(SampleOutcome(record.id, record.line, results, missing))

    def complete(self) -> int:
        """Every sample of the dataset is in the file: finish a migration.

        Returns:
            How many results of the old file were left out because their samples are no
            longer in the dataset (they stay in the ``.bak`` file).
        """
        if self._previous is None:
            return 0
        left_out = len(self._offsets)
        self._writer().close()
        self._previous.close()
        os.replace(self.path, self.backup_path)
        os.replace(self.staging_path, self.path)
        self._previous = None
        if left_out:
            logger.warning(
                "%s: %d results of samples no longer in the dataset were left out (kept in %s)",
                self.path,
                left_out,
                self.backup_path,
            )
        return left_out

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for writer in (self._target, self._previous):
            if writer is not None:
                writer.close()
