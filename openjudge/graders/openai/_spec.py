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
from collections.abc import Mapping, Sequence
from typing import Annotated, Literal, TypeAlias

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

__all__ = [
    "SIMILARITY_METRICS",
    "ContentPart",
    "InputAudioPart",
    "InputImagePart",
    "InputTextPart",
    "LabelModelSpec",
    "MessageSpec",
    "MultiSpec",
    "OpenAIGraderSpec",
    "OutputTextPart",
    "PythonSpec",
    "ReasoningEffort",
    "SamplingParams",
    "ScoreModelSpec",
    "SimilarityMetric",
    "StringCheckSpec",
    "TextSimilaritySpec",
    "json_path",
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


ReasoningEffort: TypeAlias = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
"""``sampling_params.reasoning_effort`` values (the ``openai`` SDK's ``ReasoningEffort``)."""


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


class InputTextPart(_Spec):
    """Text the grader's author wrote (may hold ``{{ ... }}`` templates)."""

    type: Literal["input_text"]
    text: str
    prompt_cache_breakpoint: dict[str, str] | None = None  # a Responses API hint; no meaning here


class OutputTextPart(_Spec):
    """Text in an assistant message (may hold templates)."""

    type: Literal["output_text"]
    text: str


class InputImagePart(_Spec):
    """An image: ``image_url`` (a URL or a ``data:`` URL; may hold templates) or OpenAI's ``file_id``."""

    type: Literal["input_image"]
    image_url: str | None = None
    file_id: str | None = None
    detail: Literal["auto", "low", "high"] | None = None

    @model_validator(mode="after")
    def _located(self) -> InputImagePart:
        if self.image_url is None and self.file_id is None:
            raise ValueError("an input_image part needs image_url (a URL or a data: URL)")
        return self


class InputAudio(_Spec):
    """Base64 audio (``data`` may hold templates, e.g. ``{{ item.audio_b64 }}``)."""

    data: str
    format: Literal["mp3", "wav"]


class InputAudioPart(_Spec):
    """An audio clip."""

    type: Literal["input_audio"]
    input_audio: InputAudio


def _part_tag(value: object) -> str | None:
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        tag = value.get("type")
        return tag if isinstance(tag, str) else None
    return None


ContentPart: TypeAlias = Annotated[
    Annotated[str, Tag("string")]
    | Annotated[InputTextPart, Tag("input_text")]
    | Annotated[OutputTextPart, Tag("output_text")]
    | Annotated[InputImagePart, Tag("input_image")]
    | Annotated[InputAudioPart, Tag("input_audio")],
    Discriminator(
        _part_tag,
        custom_error_type="content_part",
        custom_error_message="a content part is a string or an object whose type is "
        "input_text, output_text, input_image or input_audio",
    ),
]
"""One part of a message's content, as OpenAI's ``EvalItem`` content takes it."""


def _as_list(value: object) -> object:
    # OpenAI takes one part or a list of parts; one list here.
    return value if isinstance(value, list) else [value]


class MessageSpec(_Spec):
    """A chat message of a model grader's prompt. ``content`` is read as a list of parts."""

    role: Literal["user", "assistant", "system", "developer"]
    content: Annotated[list[ContentPart], BeforeValidator(_as_list)]
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
    reasoning_effort: ReasoningEffort | None = None


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


def _named_graders(value: object) -> object:
    """Clear words for the shapes OpenAI's own reference shows but a formula cannot name."""
    if isinstance(value, list):
        raise ValueError(
            'must be an object of named sub-graders, {"<name>": {...}}, whose names calculate_output '
            "uses; a list names none"
        )
    if isinstance(value, Mapping):
        if isinstance(value.get("type"), str):
            raise ValueError(
                'is one grader; a multi grader takes an object of named sub-graders, {"<name>": {...}}, '
                "whose names calculate_output uses"
            )
        nested = [
            key for key, sub in value.items() if isinstance(sub, Mapping) and sub.get("type") == "multi"
        ]
        if nested:
            raise ValueError(
                f"{nested[0]!r} is a multi grader: a multi grader cannot hold another (OpenAI's rule)"
            )
    return value


class MultiSpec(_Spec):
    """Named sub-graders combined by ``calculate_output``, a formula over their names."""

    type: Literal["multi"]
    name: str = ""
    graders: Annotated[dict[str, LeafSpec], BeforeValidator(_named_graders)] = Field(min_length=1)
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
            where = json_path(_without_tags(err["loc"])) or "grader"
            message = err["msg"].removeprefix("Value error, ")
            problems.append(f"{where}: {message}")
        raise ValueError("; ".join(problems)) from None


def json_path(steps: Sequence[int | str]) -> str:
    """``input[0].content[1]``: a location in a grader's JSON, as its author reads it."""
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in steps).lstrip(".")


_GRADER_TAGS = frozenset({"string_check", "text_similarity", "python", "score_model", "label_model", "multi"})
_PART_TAGS = frozenset({"string", "input_text", "output_text", "input_image", "input_audio"})


def _without_tags(loc: tuple[int | str, ...]) -> list[int | str]:
    """An error's location without the union tags pydantic inserts (``graders.x.string_check.input``).

    A grader's tag comes first or after a multi's sub-grader key, a part's after its index
    in ``content``; elsewhere the same words are field names (``input_audio.input_audio``).
    """
    kept: list[int | str] = []
    for i, step in enumerate(loc):
        grader_tag = step in _GRADER_TAGS and (i == 0 or (i >= 2 and loc[i - 2] == "graders"))
        part_tag = step in _PART_TAGS and i >= 2 and isinstance(loc[i - 1], int) and loc[i - 2] == "content"
        if not (grader_tag or part_tag):
            kept.append(step)
    return kept
