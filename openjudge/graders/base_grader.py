"""The grader base class and the boundary that turns failures into data.

A grader is any object with ``name``, ``mode`` and an async ``aevaluate`` that takes
its inputs as explicit keyword parameters and returns a :data:`GraderResult`::

    class ResponseLength(BaseGrader):
        async def aevaluate(self, *, response: str) -> GraderScore:
            ...

The runner reads those parameters (:meth:`BaseGrader.input_spec`) to check mappers
when it is built, and passes each sample's mapped fields as keywords.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, ParamSpec, TypeVar, cast

from openjudge.results import (
    RESPONSE_BLAME,
    ErrorKind,
    GraderError,
    GraderMode,
    GraderRank,
    GraderResult,
    GraderScore,
    InvalidInputError,
    ResponseFailure,
    ScoreRange,
)

__all__ = [
    "BaseGrader",
    "GraderError",
    "GraderMode",
    "GraderRank",
    "GraderResult",
    "GraderScore",
    "InputSpec",
    "InvalidInputError",
    "ResponseFailure",
    "ScoreRange",
    "grader_boundary",
    "response_failure_result",
]

P = ParamSpec("P")
R = TypeVar("R", bound=GraderResult)


@dataclass(frozen=True, slots=True)
class InputSpec:
    """The keyword inputs a grader accepts.

    Attributes:
        required: Names that must be given.
        optional: Names that may be given.
        accepts_any: True if the grader also takes arbitrary extra keywords (``**kwargs``).
    """

    required: frozenset[str]
    optional: frozenset[str]
    accepts_any: bool

    @property
    def names(self) -> frozenset[str]:
        return self.required | self.optional

    @classmethod
    def from_callable(cls, fn: Callable[..., object], *, skip_first: bool = False) -> InputSpec:
        params = list(inspect.signature(fn).parameters.values())
        if skip_first and params:
            params = params[1:]
        required: set[str] = set()
        optional: set[str] = set()
        accepts_any = False
        for p in params:
            if p.kind is p.VAR_KEYWORD:
                accepts_any = True
            elif p.kind is p.VAR_POSITIONAL:
                continue
            elif p.kind is p.POSITIONAL_ONLY:
                raise TypeError(f"{fn.__qualname__}: grader inputs must be passable by keyword ({p.name!r})")
            elif p.default is p.empty:
                required.add(p.name)
            else:
                optional.add(p.name)
        return cls(frozenset(required), frozenset(optional), accepts_any)

    def select(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Keep the fields this grader takes; extra fields are dropped unless it accepts any."""
        if self.accepts_any:
            return fields
        return {k: v for k, v in fields.items() if k in self.required or k in self.optional}

    def missing(self, fields: Mapping[str, object]) -> list[str]:
        return sorted(name for name in self.required if name not in fields)


def error_from_exception(name: str, exc: Exception, kind: ErrorKind = "internal") -> GraderError:
    """Describe an exception as a :class:`GraderError`."""
    if isinstance(exc, InvalidInputError):
        kind = "invalid_input"
    message = str(exc) or type(exc).__name__
    return GraderError(name=name, kind=kind, message=message, error_type=type(exc).__name__)


_REASON_LIMIT = 500


def response_failure_result(grader: object, failure: ResponseFailure) -> GraderScore:
    """The score a grader gives a response that made grading fail.

    The grader's ``response_failure_score`` when it sets one, else the bottom of its
    declared range (its low end, or the high end when lower is better), else 0.0.
    """
    name = getattr(grader, "name", type(grader).__name__)
    score_range = getattr(grader, "score_range", None)
    if not isinstance(score_range, ScoreRange):
        score_range = None
    score = getattr(grader, "response_failure_score", None)
    if not isinstance(score, int | float) or isinstance(score, bool):
        if score_range is None:
            score = 0.0
        else:
            score = score_range.low if score_range.higher_is_better else score_range.high
    message = failure.message[:_REASON_LIMIT]
    return GraderScore(
        name=name,
        score=float(score),
        reason=message,
        score_range=score_range,
        metadata={"blame": RESPONSE_BLAME, "cause": failure.cause[:100]},
    )


def grader_boundary(
    fn: Callable[P, Awaitable[R]],
) -> Callable[P, Awaitable[R | GraderError]]:
    """Decorate a grader's ``aevaluate`` so that failures come back as :class:`GraderError`.

    Missing or unexpected keyword inputs and :class:`InvalidInputError` become
    ``kind="invalid_input"``; a :class:`ResponseFailure` becomes the response's score
    (:func:`response_failure_result`); any other ``Exception`` becomes ``kind="internal"``.
    Cancellation is never caught.
    """

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | GraderError:
        grader = args[0]
        name = getattr(grader, "name", type(grader).__name__)
        try:
            return await fn(*args, **kwargs)
        except ResponseFailure as failure:
            return cast(R, response_failure_result(grader, failure))
        except TypeError as exc:
            # A TypeError raised by the call itself (no deeper frame) is a bad set of inputs.
            at_call = exc.__traceback__ is not None and exc.__traceback__.tb_next is None
            return error_from_exception(name, exc, "invalid_input" if at_call else "internal")
        except Exception as exc:
            return error_from_exception(name, exc)

    return wrapper


class BaseGrader:
    """Base class of every grader.

    Subclasses implement ``async def aevaluate(self, *, <inputs>) -> GraderResult`` with
    explicit keyword parameters (OpenJudge-style ``_aevaluate`` is accepted too and is
    exposed as ``aevaluate``). Graders must be stateless after construction: the
    runner calls one instance concurrently and never copies it.

    Args:
        name: Result name; defaults to the class's ``default_name``.
        mode: Pointwise or listwise.
        description: One line on what the grader measures.
        score_range: The declared raw score range, used to validate and normalise scores.
    """

    default_name: ClassVar[str] = ""
    default_score_range: ClassVar[ScoreRange | None] = None
    response_failure_score: float | None = None
    """The score of a response that made grading fail (:class:`ResponseFailure`); ``None``
    means the bottom of the grader's range."""

    aevaluate: Callable[..., Awaitable[GraderResult]]
    _input_spec_cache: ClassVar[dict[type[BaseGrader], InputSpec]] = {}

    def __init__(
        self,
        name: str = "",
        mode: GraderMode = GraderMode.POINTWISE,
        description: str = "",
        *,
        score_range: ScoreRange | tuple[float, float] | Sequence[float] | None = None,
    ) -> None:
        self.name = name or self.default_name or type(self).__name__
        self.mode = GraderMode(mode)
        self.description = description
        declared = ScoreRange.coerce(score_range)  # a list or mapping too; anything else: ValueError
        self.score_range = declared if declared is not None else self.default_score_range

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        legacy = cls.__dict__.get("_aevaluate")
        if legacy is not None and "aevaluate" not in cls.__dict__:
            cls.aevaluate = legacy

    def capability(self) -> Mapping[str, str]:
        """What this grader's scores depend on besides its class, version and parameters:
        the libraries it grades with, by name, and their versions (none by default).

        Part of a results file's fingerprint, so a rerun after an install or an upgrade
        finds the grader changed and re-grades it (``--regrade``) rather than mix scores
        of two capabilities.
        """
        return {}

    def input_spec(self) -> InputSpec:
        """The keyword inputs ``aevaluate`` takes (read from its signature, cached per class)."""
        cls = type(self)
        spec = BaseGrader._input_spec_cache.get(cls)
        if spec is None:
            method = getattr(cls, "aevaluate", None)
            if method is None:
                raise TypeError(f"{cls.__qualname__} does not implement aevaluate()")
            spec = InputSpec.from_callable(method, skip_first=True)
            BaseGrader._input_spec_cache[cls] = spec
        return spec

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, mode={self.mode.value!r})"
