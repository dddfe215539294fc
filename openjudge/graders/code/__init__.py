"""Graders that run code.

* :class:`CodeExecutionGrader`: fraction of test cases a Python solution passes, run in
  a sandbox (:mod:`openjudge.graders.code._sandbox`); verdicts are decided outside it.
"""

from openjudge.errors import SandboxError as SandboxError
from openjudge.graders.code._backends import sandbox_backend as sandbox_backend
from openjudge.graders.code._cases import CallCheck as CallCheck
from openjudge.graders.code._cases import CodeTestCase as CodeTestCase
from openjudge.graders.code._code_execution import CodeExecutionGrader as CodeExecutionGrader
from openjudge.graders.code._sandbox import FunctionCall as FunctionCall
from openjudge.graders.code._sandbox import SandboxBackend as SandboxBackend
from openjudge.graders.code._sandbox import SandboxJob as SandboxJob
from openjudge.graders.code._sandbox import SandboxLimits as SandboxLimits
from openjudge.graders.code._sandbox import SandboxRun as SandboxRun
from openjudge.graders.code.suites import humaneval_case as humaneval_case
from openjudge.graders.code.suites import mbpp_case as mbpp_case

__all__ = [
    "CallCheck",
    "CodeExecutionGrader",
    "CodeTestCase",
    "FunctionCall",
    "SandboxBackend",
    "SandboxError",
    "SandboxJob",
    "SandboxLimits",
    "SandboxRun",
    "humaneval_case",
    "mbpp_case",
    "sandbox_backend",
]
