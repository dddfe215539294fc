"""Wrap a plain function as a grader."""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Literal, TypeAlias, cast, overload

from typing_extensions import TypeVar

from openjudge.graders.base_grader import BaseGrader, InputSpec, error_from_exception
from openjudge.results import (
    GraderError,
    GraderMode,
    GraderRank,
    GraderResult,
    GraderScore,
    ScoreRange,
)

__all__ = ["FunctionGrader"]

FunctionOutput: TypeAlias = GraderResult | float | bool
"""What a grading function may return: a result model or a number (bools count as 0/1)."""
PointwiseOutput: TypeAlias = GraderScore | GraderError | float | bool
"""What a pointwise grading function may return (no rankings)."""
GradingFunction: TypeAlias = Callable[..., FunctionOutput | Awaitable[FunctionOutput]]
PointwiseFunction: TypeAlias = Callable[..., PointwiseOutput | Awaitable[PointwiseOutput]]
ResultT = TypeVar("ResultT", bound=GraderScore | GraderRank, default=GraderScore)
"""What the grader returns besides errors: scores when pointwise (the default), scores or
ranks when listwise."""


class FunctionGrader(BaseGrader, Generic[ResultT]):
    """A grader backed by a sync or async function.

    The function takes its inputs as keyword parameters and returns a result model or a
    number (bools count as 0/1). Its parameters are the grader's inputs.

    Pointwise (the default), it is a ``FunctionGrader[GraderScore]``: ``aevaluate`` returns
    ``GraderScore | GraderError`` and a function that returns a :class:`GraderRank` is
    refused by the type checker (and at run time, as an ``internal`` error). Listwise
    (``mode=GraderMode.LISTWISE``) it may return ranks too.

    Example:
        >>> exact = FunctionGrader(lambda response, reference: response == reference, name="exact")
    """

    @overload
    def __init__(
        self: FunctionGrader[GraderScore],
        func: PointwiseFunction,
        name: str = "",
        mode: Literal[GraderMode.POINTWISE] = GraderMode.POINTWISE,
        description: str = "",
        *,
        score_range: ScoreRange | tuple[float, float] | None = None,
    ) -> None: ...

    @overload
    def __init__(
        self: FunctionGrader[GraderScore | GraderRank],
        func: GradingFunction,
        name: str = "",
        *,
        mode: Literal[GraderMode.LISTWISE],
        description: str = "",
        score_range: ScoreRange | tuple[float, float] | None = None,
    ) -> None: ...

    def __init__(
        self,
        func: GradingFunction,
        name: str = "",
        mode: GraderMode = GraderMode.POINTWISE,
        description: str = "",
        *,
        score_range: ScoreRange | tuple[float, float] | None = None,
    ) -> None:
        super().__init__(
            name=name or getattr(func, "__name__", "function"),
            mode=mode,
            description=description,
            score_range=score_range,
        )
        self._func = func
        self._spec = InputSpec.from_callable(func)
        self._is_async = inspect.iscoroutinefunction(func)

    def input_spec(self) -> InputSpec:
        return self._spec

    async def aevaluate(self, **inputs: Any) -> ResultT | GraderError:
        missing = self._spec.missing(inputs)
        if missing:
            return GraderError(
                name=self.name,
                kind="invalid_input",
                message=f"missing input {', '.join(repr(m) for m in missing)} for grader {self.name!r}",
                error_type="TypeError",
            )
        try:
            out = self._func(**self._spec.select(inputs))
            if inspect.isawaitable(out):
                out = await out
            return self._to_result(out)
        except Exception as exc:
            return error_from_exception(self.name, exc)

    def _to_result(self, out: object) -> ResultT | GraderError:
        if isinstance(out, GraderError):
            return out
        if isinstance(out, GraderScore):
            return cast("ResultT", out)  # both result types hold scores
        if isinstance(out, GraderRank):
            if self.mode is GraderMode.LISTWISE:
                return cast("ResultT", out)  # a listwise grader is FunctionGrader[GraderScore | GraderRank]
            return GraderError(
                name=self.name,
                kind="internal",
                message="function returned a GraderRank from a pointwise grader; "
                "pass mode=GraderMode.LISTWISE to return rankings",
                error_type="TypeError",
            )
        if isinstance(out, bool | int | float) and math.isfinite(float(out)):
            return cast(
                "ResultT", GraderScore(name=self.name, score=float(out), score_range=self.score_range)
            )
        return GraderError(
            name=self.name,
            kind="internal",
            message=f"function returned {out!r}; expected a finite number or a grader result",
            error_type="TypeError",
        )
