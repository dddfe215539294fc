"""OpenAI ``python`` graders: ``grade(sample, item)`` run in openjudge's code sandbox.

Trust: the grader's ``source`` is config (trusted, like a reward function); the
``sample`` is the policy's output (untrusted data). The float must not be forgeable by
the sample, so:

* the source runs in the sandbox of :mod:`openjudge.graders.code` (namespaces, no
  network, rlimits, seccomp), one fresh process per sample;
* the sample and the item enter as *data*: encoded by :mod:`openjudge.graders.code.harness.values`,
  decoded in the child into plain ``dict``/``list``/``str``/numbers; no object of the
  sample's making is ever called;
* the result leaves on the harness's own result pipe, not standard output, so a grader
  that prints the sample (or a sample that *is* ``{"event": "call", ...}``) cannot
  inject a verdict; the parent decodes the returned value into a fresh ``float`` and
  checks it is finite and in range itself, outside the sandbox;
* the child first reports that the source finished loading (a harness call before
  ``grade``), so a failure *before* ``grade`` runs (an import error in the source: a
  bug of the config) is told apart from one *inside* ``grade`` (which only the sample
  can have caused: the source and the item are the same for every sample of a row).

What this cannot prevent: a ``grade`` that executes the sample's text in its own
process (``exec``, ``eval``, ``pickle.loads``, importing a file the sample wrote) hands
that process to the sample, which can then return any number it likes. Such a grader
is reported when built (:func:`executes_text`); run the sample's code in a
subprocess of its own (``allow_subprocess=True``), or use openjudge's ``code_execution``
grader, whose verdicts are decided outside the sandbox.
"""

from __future__ import annotations

import ast
import logging
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import JsonValue

from openjudge.graders.code._sandbox import (
    FunctionCall,
    SandboxBackend,
    SandboxJob,
    SandboxLimits,
    SandboxRun,
)
from openjudge.graders.code.harness import values

__all__ = ["GradeOutcome", "PythonSource", "executes_text", "run_grade", "third_party_imports"]

logger = logging.getLogger(__name__)

_READY = "__openjudge_source_loaded__"
_GRADE = "__openjudge_grade__"
# Appended to the source. The second function hands back what grade() returned, as a
# float when it is a number-like object of a library (numpy.float32 has no JSON form).
_HELPERS = f"""

def {_READY}():
    return True


def {_GRADE}(sample, item):
    result = grade(sample, item)
    if isinstance(result, (bool, int, float)) or result is None or isinstance(result, (str, list, dict, tuple)):
        return result
    return float(result)
"""
_MAX_SOURCE_BYTES = 256 * 1024
_STDERR_TAIL = 400
_RUNNERS = frozenset({"exec", "eval", "compile", "__import__"})
_RUNNER_ATTRS = frozenset(
    {("pickle", "loads"), ("pickle", "load"), ("marshal", "loads"), ("importlib", "import_module")}
)


def third_party_imports(source: str) -> list[str]:
    """Top-level modules ``source`` imports that are not in the standard library (``numpy``, ...)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return sorted(name for name in found if name not in sys.stdlib_module_names)


def executes_text(source: str) -> list[str]:
    """Calls in ``source`` that run text as code (``exec``, ``eval``, ``pickle.loads``, ...), by line."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in _RUNNERS:
            found.append(f"line {node.lineno}: {func.id}()")
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and (func.value.id, func.attr) in _RUNNER_ATTRS
        ):
            found.append(f"line {node.lineno}: {func.value.id}.{func.attr}()")
    return found


@dataclass(frozen=True, slots=True)
class PythonSource:
    """A checked grader source: it compiles and defines ``grade`` with two parameters.

    Raises (from :meth:`check`):
        ValueError: It does not compile, is larger than 256 KiB, or has no suitable ``grade``.
    """

    source: str

    @classmethod
    def check(cls, source: str, name: str) -> PythonSource:
        if len(source.encode("utf-8", "surrogatepass")) > _MAX_SOURCE_BYTES:
            raise ValueError(f"python grader {name!r}: source is larger than 256 KiB")
        try:
            tree = ast.parse(source, filename=f"<{name}>")
        except SyntaxError as exc:
            raise ValueError(f"python grader {name!r}: source line {exc.lineno}: {exc.msg}") from None
        grades = [
            n
            for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == "grade"
        ]
        if not grades:
            raise ValueError(
                f"python grader {name!r}: source defines no top-level function grade(sample, item)"
            )
        args = grades[-1].args
        positional = len(args.posonlyargs) + len(args.args)
        if isinstance(grades[-1], ast.AsyncFunctionDef) or (positional < 2 and args.vararg is None):
            raise ValueError(f"python grader {name!r}: grade must be a plain function taking (sample, item)")
        return cls(source)


@dataclass(frozen=True, slots=True)
class GradeOutcome:
    """What one ``grade`` call came to, decided outside the sandbox.

    Attributes:
        value: The returned number (a fresh float), or None.
        blame: ``None`` (a value), ``"response"`` (``grade`` failed on this sample) or
            ``"system"`` (the source failed before ``grade`` was called).
        cause: A snake_case cause for failures.
        detail: A bounded description for the result's reason.
    """

    value: float | None
    blame: str | None = None
    cause: str = ""
    detail: str = ""


def _tail(text: str) -> str:
    return text[-_STDERR_TAIL:].strip()


def judge_run(run: SandboxRun) -> GradeOutcome:
    """The outcome of a finished run (see the module docstring for the rules)."""
    loaded = run.calls[0] if run.calls else None
    graded = run.calls[1] if len(run.calls) > 1 else None
    if loaded is None or not loaded.ok:
        # grade() never started: the source (config) failed while loading, or could not load in time.
        why = run.error_type or run.outcome
        return GradeOutcome(
            None,
            "system",
            "python_grader_source_error",
            f"the grader source failed before grade() ran: {why}; {_tail(run.stderr)}",
        )
    if graded is None:
        causes = {
            "timeout": "python_grader_timeout",
            "memory": "python_grader_memory",
            "output_limit": "python_grader_output_limit",
        }
        cause = causes.get(run.outcome, "python_grader_runtime_error")
        return GradeOutcome(
            None, "response", cause, f"grade() did not return ({run.outcome}): {_tail(run.stderr)}"
        )
    if not graded.ok:
        detail = f"grade() raised {graded.error[:80] or 'an exception'}: {_tail(run.stderr)}"
        return GradeOutcome(None, "response", "python_grader_runtime_error", detail)
    try:
        value = values.decode(graded.value)
    except (ValueError, TypeError, RecursionError):
        return GradeOutcome(
            None, "response", "python_grader_runtime_error", "grade() returned a value that cannot be read"
        )
    if not isinstance(value, int | float):  # bool is an int: True counts as 1.0, as float(True) does
        shown = type(value).__name__
        return GradeOutcome(
            None, "response", "python_grader_runtime_error", f"grade() returned {shown}, not a number"
        )
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        return GradeOutcome(
            None, "response", "python_grader_runtime_error", f"grade() returned {number}, not a finite number"
        )
    return GradeOutcome(number)


async def run_grade(
    backend: SandboxBackend,
    limits: SandboxLimits,
    source: PythonSource,
    sample: Mapping[str, JsonValue],
    item: Mapping[str, JsonValue],
) -> GradeOutcome:
    """Run ``grade(sample, item)`` once in a fresh sandbox.

    Raises:
        openjudge.graders.code.SandboxError: The sandbox itself failed (a system failure).
        ValueError: ``item`` is too large or deep to send (the dataset's problem).
    """
    try:
        values.encode(dict(sample))
    except ValueError:
        return GradeOutcome(
            None,
            "response",
            "sample_too_large",
            f"the sample is nested deeper than {values.MAX_DEPTH} or has more than {values.MAX_NODES} parts",
        )
    try:
        values.encode(dict(item))
    except ValueError as exc:
        raise ValueError(f"the item cannot be sent to the python grader: {exc}") from None
    job = SandboxJob(
        code=source.source + _HELPERS,
        calls=(FunctionCall(_READY), FunctionCall(_GRADE, (dict(sample), dict(item)))),
    )
    run = await backend.run(job, limits)
    return judge_run(run)
