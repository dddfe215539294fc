"""Jobs for ``openjudge run``: datasets, resumable results bound to their job, the engine, summary and report.

* :mod:`.datasets`: stream samples from JSON Lines, JSON arrays and CSV with stable ids.
* :mod:`.results`: the results file format, a resumable writer and readers.
* :mod:`.fingerprint` and :mod:`.resume`: what binds a results file to its job, and resuming.
* :mod:`.engine`: the job engine (one driver, local or Ray back ends).
* :mod:`.preflight`: check a job against the first records of its dataset.
* :mod:`.summary`: per-grader statistics and a terminal table.
* :mod:`.report`: a self-contained HTML report.
"""

from openjudge.jobs.datasets import BadRecord as BadRecord
from openjudge.jobs.datasets import DatasetError as DatasetError
from openjudge.jobs.datasets import DatasetFormat as DatasetFormat
from openjudge.jobs.datasets import SampleRecord as SampleRecord
from openjudge.jobs.datasets import iter_samples as iter_samples
from openjudge.jobs.datasets import sample_id as sample_id
from openjudge.jobs.engine import GradingBackend as GradingBackend
from openjudge.jobs.engine import LocalBackend as LocalBackend
from openjudge.jobs.engine import RunStats as RunStats
from openjudge.jobs.engine import run_job as run_job
from openjudge.jobs.fingerprint import JobChanges as JobChanges
from openjudge.jobs.fingerprint import JobFingerprint as JobFingerprint
from openjudge.jobs.records import ErrorEntry as ErrorEntry
from openjudge.jobs.records import OutcomeLine as OutcomeLine
from openjudge.jobs.records import RankEntry as RankEntry
from openjudge.jobs.records import ResultEntry as ResultEntry
from openjudge.jobs.records import ResultsHeader as ResultsHeader
from openjudge.jobs.records import ScoreEntry as ScoreEntry
from openjudge.jobs.report import SampleSource as SampleSource
from openjudge.jobs.report import write_report as write_report
from openjudge.jobs.results import ResultsFileError as ResultsFileError
from openjudge.jobs.results import ResultsWriter as ResultsWriter
from openjudge.jobs.results import SampleOutcome as SampleOutcome
from openjudge.jobs.results import read_header as read_header
from openjudge.jobs.results import read_outcomes as read_outcomes
from openjudge.jobs.results import read_results as read_results
from openjudge.jobs.results import result_to_json as result_to_json
from openjudge.jobs.resume import JobMismatchError as JobMismatchError
from openjudge.jobs.summary import AggregateSummary as AggregateSummary
from openjudge.jobs.summary import GraderSummary as GraderSummary
from openjudge.jobs.summary import Price as Price
from openjudge.jobs.summary import RunSummary as RunSummary
from openjudge.jobs.summary import SummaryBuilder as SummaryBuilder
from openjudge.jobs.summary import render_table as render_table

__all__ = [
    "AggregateSummary",
    "BadRecord",
    "DatasetError",
    "DatasetFormat",
    "ErrorEntry",
    "GraderSummary",
    "GradingBackend",
    "JobChanges",
    "JobFingerprint",
    "JobMismatchError",
    "LocalBackend",
    "OutcomeLine",
    "Price",
    "RankEntry",
    "ResultEntry",
    "ResultsFileError",
    "ResultsHeader",
    "ResultsWriter",
    "RunStats",
    "RunSummary",
    "SampleOutcome",
    "SampleRecord",
    "SampleSource",
    "ScoreEntry",
    "SummaryBuilder",
    "iter_samples",
    "read_header",
    "read_outcomes",
    "read_results",
    "render_table",
    "result_to_json",
    "run_job",
    "sample_id",
    "write_report",
]
