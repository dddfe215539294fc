"""Jobs: grade a dataset from a job config, resumably, and read what a run wrote.

The engine behind ``openjudge run``, for programs::

    config = load_config("job.yaml")                                   # openjudge.config
    stats = await run_job(config, build_job(config), data_path=..., out_path=...)
    for line in read_results(out_path): ...                            # one dict per sample

* :func:`run_job`: the job engine (one driver; :class:`LocalBackend` in this process, or a
  :class:`GradingBackend` such as :class:`openjudge.distributed.RayBackend`); it returns
  :class:`RunStats` and resumes a results file written under the same job, raising
  :class:`JobMismatchError` when the file belongs to another.
* :func:`read_results`, :func:`read_header`: a results file, line by line, and its header.
* :func:`write_report`: a self-contained HTML report of a results file.

Everything else (dataset readers, the results-file line models, fingerprints, the summary
table) is internal to the ``openjudge`` command, in this package's ``_`` modules.
"""

from openjudge.errors import DatasetError as DatasetError
from openjudge.errors import ResultsFileError as ResultsFileError
from openjudge.jobs._engine import GradingBackend as GradingBackend
from openjudge.jobs._engine import LocalBackend as LocalBackend
from openjudge.jobs._engine import RunStats as RunStats
from openjudge.jobs._engine import run_job as run_job
from openjudge.jobs._records import ResultsHeader as ResultsHeader
from openjudge.jobs._report import write_report as write_report
from openjudge.jobs._results import read_header as read_header
from openjudge.jobs._results import read_results as read_results
from openjudge.jobs._resume import JobMismatchError as JobMismatchError

__all__ = [
    "DatasetError",
    "GradingBackend",
    "JobMismatchError",
    "LocalBackend",
    "ResultsFileError",
    "ResultsHeader",
    "RunStats",
    "read_header",
    "read_results",
    "run_job",
    "write_report",
]
