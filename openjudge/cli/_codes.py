"""Exit codes of the ``openjudge`` command (listed in ``openjudge --help``)."""

EXIT_OK = 0
"""Finished; grader errors are recorded as results."""
EXIT_INVALID = 1
"""Invalid config, dataset or results file (the message names file, line and field)."""
EXIT_USAGE = 2
"""Bad command-line usage."""
EXIT_FAILED = 3
"""Grading failed: a grader failed on every sample it graded, or more than ``--max-error-rate``
of all grader results are errors (see :mod:`openjudge.cli._verdict`)."""
EXIT_INTERRUPTED = 130
"""Interrupted by Ctrl-C or SIGTERM; rerun the same command to resume."""
EXIT_SIGPIPE = 141
"""The reader of our output went away (as a process killed by SIGPIPE reports)."""
