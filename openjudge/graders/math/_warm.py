"""Imported once by each math worker process (WorkerPool ``preload``): math-verify's first
parse builds its LaTeX grammar and regexes (about a second); doing it at start-up keeps that
cost out of the first sample's time budget. Not imported anywhere else."""

from __future__ import annotations

import contextlib
import importlib

with contextlib.suppress(Exception):  # math-verify missing or failing: the grader falls back
    _mv = importlib.import_module("math_verify")  # untyped: import_module keeps mypy strict
    parse, verify = _mv.parse, _mv.verify
    verify(
        parse("$\\frac{1}{2}$", parsing_timeout=None),
        parse("$0.5$", parsing_timeout=None),
        timeout_seconds=None,
    )
