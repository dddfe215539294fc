"""The ``openjudge`` command line: argument parsing only; the work is in the library.

Exit codes: 0 done; 1 invalid config, dataset or results file; 2 bad command-line usage;
3 grading failed (every grader call failed, or more than ``--max-error-rate`` of them);
130 interrupted (rerun the same command to resume).

:func:`main` is the console script; the subcommands are in :mod:`openjudge.cli._main`.
"""

from openjudge.cli._main import main as main

__all__ = ["main"]
