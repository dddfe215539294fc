"""Graders that run code.

* :class:`CodeExecutionGrader`: fraction of test cases a Python solution passes, run
  in a best-effort sandbox (see :mod:`openjudge.graders.code.sandbox`; it is not a
  security boundary).
"""

from openjudge.graders.code.cases import CodeTestCase as CodeTestCase
from openjudge.graders.code.code_execution import CodeExecutionGrader as CodeExecutionGrader
from openjudge.graders.code.sandbox import SandboxLimits as SandboxLimits
from openjudge.graders.code.sandbox import SandboxRun as SandboxRun
from openjudge.graders.code.sandbox import run_python as run_python

__all__ = ["CodeExecutionGrader", "CodeTestCase", "SandboxLimits", "SandboxRun", "run_python"]
