"""OpenAI's grader JSON as typed models: what ``POST /fine_tuning/alpha/graders/run`` and Evals accept.

The field names and the closed sets of values follow OpenAI's API reference (the
``openai`` SDK's ``types/graders``). ``pass_threshold`` (an Evals testing criterion)
is accepted wherever Evals accepts it; ``image_tag`` (the python grader's image) is
accepted and recorded, since graders here run on this machine's interpreter.

:func:`parse_grader` reads a grader from a mapping (a JSON object) and reports the
first problem with the JSON path of the field, e.g.
``graders.name.operation: Input should be 'eq', 'ne', 'like' or 'ilike'``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

__all__ = [
    "SIMILARITY_METRICS",
    "ContentPart",
    "LabelModelSpec",
    "MessageSpec",
    "MultiSpec",
    "OpenAIGraderSpec",
    "PythonSpec",
    "SamplingParams",
    "ScoreModelSpec",
    "SimilarityMetric",
    "StringCheckSpec",
    "TextSimilaritySpec",
    "parse_grader",
]

SimilarityMetric: TypeAlias = Literal[
    "cosine",
    "fuzzy_match",
    "bleu",
    "gleu",
    "meteor",
    "rouge_1",
    "rouge_2",
    "rouge_3",
    "rouge_4",
    "rouge_5",
    "rouge_l",
]
SIMILARITY_METRICS: tuple[SimilarityMetric, ...] = (
    "cosine",
    "fuzzy_match",
    "bleu",
    "gleu",
    "meteor",
    "rouge_1",
    "rouge_2",
    "rouge_3",
    "rouge_4",
    "rouge_5",
    "rouge_l",
)


class _Spec(BaseModel):
    # ``name`` is required by OpenAI's API but missing from some of its guide's examples:
    # accepted here without one (the result is then named after the type or the multi key).
    model_config = ConfigDict(frozen=True, extra="forbid")


class StringCheckSpec(_Spec):
    """``eq`` / ``ne`` (case-sensitive equality), ``like`` / ``ilike`` (contains; ``ilike`` ignores case)."""

    type: Literal["string_check"]
    name: str = ""
    input: str
    reference: str
    operation: Literal["eq", "ne", "like", "ilike"]


class TextSimilaritySpec(_Spec):
    """A similarity metric of ``input`` against ``reference``, in [0, 1]."""

    type: Literal["text_similarity"]
    name: str = ""
    input: str
    reference: str
    evaluation_metric: SimilarityMetric
    pass_threshold: float | None = None


class PythonSpec(_Spec):
    """``source`` defines ``grade(sample, item) -> float``."""

    type: Literal["python"]
    name: str = ""
    source: str
    image_tag: str | None = None
    pass_threshold: float | None = None


class ContentPart(_Spec):
    """One part of a message's content. Only text parts can be sent to a chat judge."""

    type: Literal["input_text", "output_text", "input_image", "input_audio"]
    text: str | None = None
    image_url: str | None = None
    detail: str | None = None
    input_audio: dict[str, str] | None = None


class MessageSpec(_Spec):
    """A chat message of a model grader's prompt; text may hold ``{{ ... }}`` templates."""

    role: Literal["user", "assistant", "system", "developer"]
    content: str | ContentPart | list[str | ContentPart]
    type: Literal["message"] | None = None


class SamplingParams(_Spec):
    """The judge's sampling parameters.

    ``max_completions_tokens`` is the API reference's spelling; the graders guide's
    example writes ``max_tokens``, so both are accepted.
    """

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    max_completions_tokens: int | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    reasoning_effort: str | None = None


class ScoreModelSpec(_Spec):
    """A judge writes a number in ``range`` (default [0, 1])."""

    type: Literal["score_model"]
    name: str = ""
    model: str
    input: list[MessageSpec] = Field(min_length=1)
    range: tuple[float, float] | None = None
    sampling_params: SamplingParams | None = None
    pass_threshold: float | None = None

    @field_validator("range")
    @classmethod
    def _ordered(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        if value is not None and not (
            math.isfinite(value[0]) and math.isfinite(value[1]) and value[0] < value[1]
        ):
            raise ValueError(f"range needs two finite numbers, low < high; got {list(value)}")
        return value


class LabelModelSpec(_Spec):
    """A judge picks one of ``labels``; the reward is 1 if it is one of ``passing_labels``."""

    type: Literal["label_model"]
    name: str = ""
    model: str
    input: list[MessageSpec] = Field(min_length=1)
    labels: list[str] = Field(min_length=1)
    passing_labels: list[str]
    sampling_params: SamplingParams | None = None

    @field_validator("passing_labels")
    @classmethod
    def _subset(cls, value: list[str], info: object) -> list[str]:
        labels = getattr(info, "data", {}).get("labels")
        if labels is not None:
            unknown = [label for label in value if label not in labels]
            if unknown:
                raise ValueError(f"passing_labels {unknown} are not among labels {labels}")
        return value


LeafSpec: TypeAlias = Annotated[
    StringCheckSpec | TextSimilaritySpec | PythonSpec | ScoreModelSpec | LabelModelSpec,
    Field(discriminator="type"),
]


class MultiSpec(_Spec):
    """Named sub-graders combined by ``calculate_output``, a formula over their names."""

    type: Literal["multi"]
    name: str = ""
    graders: dict[str, LeafSpec] = Field(min_length=1)
    calculate_output: str


OpenAIGraderSpec: TypeAlias = Annotated[
    StringCheckSpec | TextSimilaritySpec | PythonSpec | ScoreModelSpec | LabelModelSpec | MultiSpec,
    Field(discriminator="type"),
]

_ADAPTER: TypeAdapter[OpenAIGraderSpec] = TypeAdapter(OpenAIGraderSpec)


def parse_grader(data: Mapping[str, object]) -> OpenAIGraderSpec:
    """The grader described by ``data`` (a grader JSON object).

    Raises:
        ValueError: ``data`` is not a grader OpenAI accepts; the message names the JSON path
            of the first problem and lists the accepted values where there is a closed set.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"a grader must be a JSON object, got {type(data).__name__}")
    try:
        return _ADAPTER.validate_python(dict(data))
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:5]:
            # Drop the discriminator tags pydantic inserts ("string_check", ...) from the path.
            loc = [str(p) for p in err["loc"] if p not in _TAGS]
            where = ".".join(loc) or "grader"
            message = err["msg"].removeprefix("Value error, ")
            problems.append(f"{where}: {message}")
        raise ValueError("; ".join(problems)) from None


_TAGS = frozenset({"string_check", "text_similarity", "python", "score_model", "label_model", "multi"})
