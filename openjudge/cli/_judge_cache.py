"""The judge cache of ``openjudge run``: whose verdicts it holds, and saying when it answered.

Verdicts belong to the judge that gave them and to the results file they were stored for.
Unless the config shares a cache file (``cache.path``: verdicts of every job that names
it), a run keeps its judge replies beside its results file (:func:`results_cache_path`):
resuming or re-grading that file reuses them, a new ``--out`` (in any directory) grades
afresh, and a results file started anew (deleted, or a new path) starts its cache anew.
Keys hold what the server says of its weights (:mod:`openjudge.models._served_identity`),
so a different judge behind the same URL and name is not answered by another's verdicts.

When cached verdicts answered judge calls, the summary says so first, and from where.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from openjudge.models.cache import JudgeCache, cache_files

__all__ = ["cache_note", "results_cache_path", "start_with_results"]


def results_cache_path(out: Path) -> Path:
    """The cache of the results file ``out``: ``OUT.judge-cache.sqlite`` beside it."""
    return out.with_name(out.name + ".judge-cache.sqlite")


def start_with_results(out: Path) -> Path:
    """The cache path of ``out``, emptied first when ``out`` holds nothing yet: verdicts
    stored for a results file that was deleted belong to no file."""
    path = results_cache_path(out)
    if not out.exists() or out.stat().st_size == 0:
        for file in cache_files(path):
            with contextlib.suppress(FileNotFoundError):
                file.unlink()
    return path


def cache_note(cache: JudgeCache, out: Path) -> str | None:
    """One line on the judge calls cached verdicts answered, and whose they were (``None``: none)."""
    if not cache.hits:
        return None
    asked = cache.hits + cache.misses
    calls = f"{cache.hits:,} of {asked:,} judge calls"
    if cache.shared:
        return (
            f"judge cache: {calls} were answered from the shared cache {cache.path} (the config's "
            "cache.path): verdicts stored by any job that names it; --no-cache asks the judge again"
        )
    return (
        f"judge cache: {calls} were answered by verdicts already stored for {out} "
        f"({cache.path}); --no-cache asks the judge again"
    )
