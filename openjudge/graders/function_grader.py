"""Wrap a plain function as a grader."""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

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
GradingFunction: TypeAlias = Callable[..., FunctionOutput | Awaitable[FunctionOutput]]


class FunctionGrader(BaseGrader):
    """A grader backed by a sync or async function.

    The function takes its inputs as keyword parameters and returns a result model or a
    number (bools count as 0/1). Its parameters are the grader's inputs.

    Example:
        >>> exact = FunctionGrader(lambda response, reference: response == reference, name="exact")
    """

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

    async def aevaluate(self, **inputs: Any) -> GraderResult:
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

    def _to_result(self, out: object) -> GraderResult:
        if isinstance(out, GraderScore | GraderRank | GraderError):
            return out
        if isinstance(out, bool | int | float) and math.isfinite(float(out)):
            return GraderScore(name=self.name, score=float(out), score_range=self.score_range)
        return GraderError(
            name=self.name,
            kind="internal",
            message=f"function returned {out!r}; expected a finite number or a grader result",
            error_type="TypeError",
        )
