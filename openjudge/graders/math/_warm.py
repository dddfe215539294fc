"""Imported once by each math worker process (WorkerPool ``preload``): math-verify's first
parse builds its LaTeX grammar and regexes (about a second), and sympy imports what
evaluating, expanding and cancelling need on first use (another half second); doing it at
start-up keeps those costs out of the first samples' time budgets. Not imported anywhere else."""

from __future__ import annotations

import contextlib

from openjudge.graders.math._verify import compare_answers

# A warm-up that fails (a broken install) must not stop the worker starting: the call reports it.
with contextlib.suppress(Exception):
    for reference, answer in (
        (r"\frac{1}{2}", "0.5"),
        ("x^2+2x+1", "(x+1)^2"),  # expanded to zero: equal
        ("x^2+2x+1", "(x+2)^2"),  # different at a point: not equal
        (r"\frac{3x+1}{x(x+1)}", r"\frac{2}{x+1}+\frac{1}{x}"),  # cancelled to zero: equal
        (r"\sqrt{3}", r"\frac{3}{\sqrt{3}}"),  # exact numbers
    ):
        compare_answers(reference, [{"kind": "answer", "texts": [answer]}])
