"""Every exception openjudge raises on purpose, under one base.

Our exception hierarchy (a builtin in parentheses is a second base, kept so that code
catching it keeps working)::

    OpenJudgeError
    ├── InvalidInputError (ValueError) ... a grader's input is unusable through no fault of the response
    ├── ResponseFailure .................. the response made grading fail: scored at the bottom, not an error
    ├── ChatModelError ................... a judge call failed; what a transport raises for one attempt
    ├── InferenceError ................... a local (transformers) model call failed
    ├── SandboxError ..................... the code sandbox itself failed
    ├── SchemaError (ValueError) ......... a grader's JSON Schema is not a valid schema
    ├── ConfigError (ValueError) ......... a job config is invalid (every problem, with file:line)
    ├── DatasetError (ValueError) ........ a dataset cannot be read
    │   └── LabelledDataError ............ a meta-evaluation's labelled file cannot be used
    ├── ResultsFileError (ValueError) .... a results file cannot be read or resumed
    │   └── JobMismatchError ............. it was written by another job (openjudge.jobs)
    ├── SettingsError (ValueError) ....... a trainer adapter's options are missing or invalid
    ├── SampleFailed (RuntimeError) ...... a sample VERL drops after its grading failed
    ├── FailureRateExceeded (RuntimeError)  too many samples failed: training stops
    └── GroupJudgingError (RuntimeError) . a group member VERL drops after its group failed

Where they are raised, and what becomes of them: inside a grader, ``InvalidInputError``,
``ChatModelError``, ``InferenceError`` and ``SandboxError`` become a
:class:`~openjudge.results.GraderError` (failures are data at the grader boundary) and
``ResponseFailure`` becomes the bottom score with its cause. The others reach the caller:
a bad config, dataset, results file or adapter option, and the stop signals of the
trainer adapters. ``except OpenJudgeError`` catches all of them.

Why they are defined here, and not beside the code that raises them: this module is the
floor of the layer contract (pyproject's ``[tool.importlinter]``). Every layer may import
it, so the results, the models, the graders, the application and the integrations all
raise classes of one tree, and ``openjudge.errors`` can export the whole tree; a class
defined in a higher layer (``config``, ``jobs``) could not be imported here. The one
exception is :class:`~openjudge.jobs.JobMismatchError`, which carries a jobs type
(``JobChanges``): it subclasses :class:`ResultsFileError` in :mod:`openjudge.jobs`.
:data:`ErrorKind`, the kinds a failure is classified into, lives here for the same reason
(``ChatModelError.kind`` is one); :mod:`openjudge.results` re-exports it.

Every class pickles with its attributes (exceptions cross Ray workers and process pools):
:class:`OpenJudgeError` rebuilds an instance without calling ``__init__``, whatever its
arguments. Private signals that never leave a module (a sandbox retry, an unsupported
symbolic form) stay where they are raised.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal, TypeAlias

__all__ = [
    "ChatModelError",
    "ConfigError",
    "DatasetError",
    "ErrorKind",
    "FailureRateExceeded",
    "GroupJudgingError",
    "InferenceError",
    "InvalidInputError",
    "LabelledDataError",
    "OpenJudgeError",
    "ResponseFailure",
    "ResultsFileError",
    "SampleFailed",
    "SandboxError",
    "SchemaError",
    "SettingsError",
]

ErrorKind: TypeAlias = Literal[
    "parse_error",
    "provider_error",
    "timeout",
    "invalid_input",
    "refused",
    "budget_exceeded",
    "internal",
]
"""What class of failure a :class:`~openjudge.results.GraderError` (or a failed call) is."""


class OpenJudgeError(Exception):
    """The base of every exception openjudge raises on purpose."""

    def __reduce__(self) -> tuple[object, ...]:
        # Rebuild without __init__ (subclasses take keyword-only or computed arguments):
        # the message arguments and every attribute come back as they were.
        return (_restore, (type(self), self.args, self.__dict__))


def _restore(cls: type[OpenJudgeError], args: tuple[object, ...], state: dict[str, object]) -> OpenJudgeError:
    error = cls.__new__(cls, *args)
    error.__dict__.update(state)
    return error


# --- raised inside graders: the grader boundary turns them into results --------------------


class InvalidInputError(OpenJudgeError, ValueError):
    """Raised inside a grader for unusable input that is *not* the response's doing (a missing
    or malformed dataset field, a bad reference); the boundary turns it into ``invalid_input``."""


class ResponseFailure(OpenJudgeError):
    """Raised inside a grader when the *response* made grading fail.

    The grader boundary turns it into a :class:`~openjudge.results.GraderScore` at the
    bottom of the grader's range (or the grader's ``response_failure_score``) with
    ``metadata["blame"] == "response"``, ``metadata["cause"]`` and the message as the
    reason: never an error that a trainer would drop or a caller would fall back from.

    Args:
        cause: A short snake_case name of what went wrong (``unparseable_answer``,
            ``too_deep``, ``overflow``, ``lone_surrogate``, ...).
        message: What the response did, for the reason (keep it short; it is truncated).
    """

    def __init__(self, cause: str, message: str) -> None:
        super().__init__(message)
        self.cause = cause
        self.message = message


class ChatModelError(OpenJudgeError):
    """A chat call failed.

    Providers translate their SDK's exceptions into it, classified by HTTP status code
    (not by exception class), so the core's retry policy and the grader's error kinds work
    the same for every backend. A custom transport raises it for a failed attempt.

    Attributes:
        kind: The grader error kind this maps to (``provider_error``, ``timeout``, ...).
        retryable: Whether another attempt may succeed.
        status_code: HTTP status, when there was a response.
        retry_after_s: Seconds the server asked us to wait, when it said so.
        error_type: Name of the underlying exception class.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind = "provider_error",
        retryable: bool = False,
        status_code: int | None = None,
        retry_after_s: float | None = None,
        error_type: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind: ErrorKind = kind
        self.retryable = retryable
        self.status_code = status_code
        self.retry_after_s = retry_after_s
        self.error_type = error_type or type(self).__name__
        self.requests = 0
        """HTTP requests the failed call made (set by the chat model that gave up)."""

    def __str__(self) -> str:
        return self.message


class InferenceError(OpenJudgeError):
    """A local model call failed (``kind: transformers`` providers).

    The provider's adapters translate it into a :class:`ChatModelError` for the core.

    Attributes:
        kind: ``invalid_input`` (this request cannot be run: too long, no chat template)
            or ``provider_error`` (the model, the device or the loader failed).
        retryable: Whether another attempt may succeed (out of memory: a smaller batch may fit).
        error_type: Name of the underlying exception class.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: Literal["provider_error", "invalid_input"] = "provider_error",
        retryable: bool = False,
        error_type: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind: Literal["provider_error", "invalid_input"] = kind
        self.retryable = retryable
        self.error_type = error_type or type(self).__name__

    def __str__(self) -> str:
        return self.message


class SandboxError(OpenJudgeError):
    """The code sandbox itself failed (it did not start, or a remote service failed): never a score.

    Attributes:
        kind: The :class:`~openjudge.results.GraderError` kind it maps to.
    """

    def __init__(
        self, message: str, kind: Literal["internal", "provider_error", "timeout"] = "internal"
    ) -> None:
        super().__init__(message)
        self.kind: Literal["internal", "provider_error", "timeout"] = kind


class SchemaError(OpenJudgeError, ValueError):
    """The schema is not a valid JSON Schema (the message names where and why)."""


# --- reach the caller: configs, data and results files -------------------------------------


class ConfigError(OpenJudgeError, ValueError):
    """A config file is invalid; ``problems`` holds one ``file:line: field: message`` per issue."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class DatasetError(OpenJudgeError, ValueError):
    """A dataset that cannot be read, or a bad record when ``on_error="fail"``.

    Attributes:
        path: The dataset file.
        line: The line concerned, if any; for a bad element of a JSON array, its index.
    """

    def __init__(self, message: str, *, path: Path | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


class LabelledDataError(DatasetError):
    """A labelled file that cannot be used; ``problems`` lists ``file:line: field: message``."""

    shown_problems: ClassVar[int] = 10
    """How many problems the message lists (the rest are counted)."""

    def __init__(self, problems: list[str], *, path: Path) -> None:
        shown = problems[: self.shown_problems]
        more = len(problems) - len(shown)
        text = "\n".join(shown) + (f"\n... and {more} more" if more else "")
        super().__init__(text, path=path)
        self.problems = problems


class ResultsFileError(OpenJudgeError, ValueError):
    """A results file that cannot be resumed or read (corrupt, or in use by another run)."""


# --- the trainer adapters -------------------------------------------------------------------


class SettingsError(OpenJudgeError, ValueError):
    """A trainer adapter's options (VERL's ``+reward.openjudge.*``, the SkyRL environment's)
    are missing or invalid; the message says how to fix them."""


class SampleFailed(OpenJudgeError, RuntimeError):
    """A sample could not be scored and ``on_failure=drop`` on a path where VERL drops it.

    Raised from ``run_single`` only on the V1 trainer's streaming path: the session
    fails, the sync trainer trains the group without it, the async trainers evict and
    refill the group. Never raised where it would end the step (V0, the colocated
    reward model, the batch call): there a failed sample is neutral.
    """


class FailureRateExceeded(OpenJudgeError, RuntimeError):
    """Too many samples failed recently; every later sample raises this (see the message)."""


class GroupJudgingError(OpenJudgeError, RuntimeError):
    """A member's group outcome is *dropped*; raised so VERL drops its trajectory."""
