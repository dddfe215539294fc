"""The shape of a job config file (validated by pydantic, exported as JSON Schema)."""

from __future__ import annotations

import datetime
import difflib
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    SecretStr,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from openjudge.config._grader_schema import discriminate_graders
from openjudge.config._locations import Located
from openjudge.models._secrets import safe_url
from openjudge.models.chat_model import StructuredOutputMode
from openjudge.models.policy import ProviderLimits
from openjudge.runner._routing import ConditionValue
from openjudge.runner._routing import When as _When

__all__ = [
    "AGGREGATOR_TYPES",
    "DEFAULT_MAX_RECORD_BYTES",
    "PROVIDER_KINDS",
    "AggregatorSpec",
    "CacheSpec",
    "DataSpec",
    "GraderSpec",
    "JobConfig",
    "ProviderKind",
    "ProviderSpec",
    "RunnerSpec",
    "SamplingSpec",
    "config_json_schema",
]


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True, slots=True)
class ProviderKind:
    """A provider ``kind`` a config may name.

    Attributes:
        summary: One line for docs and messages.
        fields: The kind-specific :class:`ProviderSpec` fields it takes (passed to its
            factory as keyword arguments when set; an error for other kinds).
    """

    summary: str
    fields: frozenset[str] = frozenset()


PROVIDER_KINDS: Mapping[str, ProviderKind] = {
    "openai": ProviderKind("OpenAI or any OpenAI-compatible server (vLLM, SGLang, llama.cpp, ...)"),
    "vllm": ProviderKind("a vLLM server: adds vLLM's structured outputs and model discovery"),
    "azure": ProviderKind(
        "Azure OpenAI: model is the deployment, base_url the resource endpoint", frozenset({"api_version"})
    ),
    "litellm": ProviderKind(
        "any litellm route; model carries the route, e.g. hosted_vllm/qwen3-8b", frozenset({"api_version"})
    ),
    "transformers": ProviderKind(
        "a model run in this process on torch; model is a local directory, a hub id or a .gguf file",
        frozenset(
            {
                "gguf_file",
                "cache_dir",
                "device",
                "dtype",
                "max_batch_size",
                "batch_window_s",
                "max_new_tokens",
                "max_input_tokens",
                "revision",
                "trust_remote_code",
                "chat_template",
            }
        ),
    ),
    "verl": ProviderKind(
        "the judge VERL serves during training (openjudge.integrations.verl supplies base_url and model)"
    ),
}
"""Provider kinds configs may name. To add one: an entry here (with any kind-specific
fields, added to :class:`ProviderSpec` as optional fields) and its factory in
``openjudge.providers._registry.PROVIDER_FACTORIES``; the loader, the JSON Schema and
:func:`openjudge.config._build.build_provider` follow this table."""


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {value}")
    return value


FiniteFloat = Annotated[float, AfterValidator(_finite)]
Weight = Annotated[float, Field(ge=0), AfterValidator(_finite)]
Minimum = Annotated[float, Field(ge=0, le=1)]


class SamplingSpec(_Spec):
    """Judge sampling. Temperature 0 and a fixed seed by default: judges should be repeatable."""

    temperature: float | None = Field(default=0.0, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, gt=0)
    seed: int | None = 0


class ProviderSpec(_Spec):
    """A judge backend, referred to by name from graders.

    Attributes:
        kind: ``openai`` (OpenAI or any OpenAI-compatible server), ``vllm`` (adds vLLM's
            structured outputs and discovery), ``azure`` (Azure OpenAI; ``model`` is the
            deployment, ``base_url`` the resource endpoint), ``litellm`` (any litellm
            route; ``model`` carries the route, e.g. ``hosted_vllm/qwen3-8b``),
            ``transformers`` (the model runs in this process on torch; ``model`` is a
            local directory, a hub id or a ``.gguf`` file) or ``verl`` (the judge VERL serves under
            ``reward.reward_model``; built by ``openjudge.integrations.verl``, which supplies
            ``base_url`` and ``model``).
        model: Model name on the server (``transformers``: a directory, a hub id or a
            ``.gguf`` file); required, except for ``verl``.
        api_version: Azure API version (``azure`` and ``litellm`` only).
        base_url: Server URL ending in ``/v1`` (default: the kind's own, or ``OPENAI_BASE_URL``).
        api_key: Key; write ``${ENV_VAR}`` rather than the key itself.
        timeout_s: Per-attempt timeout.
        max_retries: Retries after the first attempt.
        structured_output: How the server takes JSON requests; unset, the first call finds
            it (``json_schema``, else ``json_object`` with the schema, else ``prompt``).
        limits: Concurrency and rate limits.
        sampling: Sampling defaults.
        price: Dollars per 1,000 tokens, for cost estimates.
        gguf_file, cache_dir, device, dtype, max_batch_size, batch_window_s, max_new_tokens,
        max_input_tokens, revision, trust_remote_code, chat_template: ``transformers`` only
            (``gguf_file``: a GGUF checkpoint inside the directory or hub repository ``model``
            names; ``cache_dir``: where GGUF checkpoints are dequantized, once per machine); see
            :class:`openjudge.providers.transformers.TransformersSettings`.
    """

    kind: str = Field(json_schema_extra={"enum": list(PROVIDER_KINDS)})
    model: str | None = Field(default=None, min_length=1, validate_default=True)
    api_version: str | None = None
    base_url: str | None = Field(default=None, pattern=r"^https?://")
    api_key: SecretStr | None = None
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=19)
    structured_output: StructuredOutputMode | None = None
    limits: ProviderLimits = ProviderLimits()
    sampling: SamplingSpec = SamplingSpec()
    price: dict[Literal["prompt_per_1k", "completion_per_1k"], float] | None = None
    gguf_file: str | None = Field(default=None, min_length=1)
    cache_dir: str | None = Field(default=None, min_length=1)
    device: str | None = Field(default=None, pattern=r"^(auto|cpu|mps|cuda(:\d+)?)$")
    dtype: Literal["auto", "float32", "float16", "bfloat16"] | None = None
    max_batch_size: int | None = Field(default=None, ge=1)
    batch_window_s: float | None = Field(default=None, ge=0)
    max_new_tokens: int | None = Field(default=None, ge=1)
    max_input_tokens: int | None = Field(default=None, ge=1)
    revision: str | None = None
    trust_remote_code: bool | None = None
    chat_template: str | None = None

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # A base_url may carry user:pass@; reprs show it without (the key is a SecretStr already).
        for name, value in super().__repr_args__():
            yield name, safe_url(value) if name == "base_url" and isinstance(value, str) else value

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value not in PROVIDER_KINDS:
            close = difflib.get_close_matches(value, list(PROVIDER_KINDS), n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(
                f"unknown provider kind {value!r}{hint} (kinds: {', '.join(PROVIDER_KINDS)}; "
                "any other litellm route is kind 'litellm' with the route in 'model')"
            )
        return value

    @field_validator("api_version", mode="before")
    @classmethod
    def _date_as_text(cls, value: object) -> object:
        # YAML reads an unquoted 2024-10-21 as a date; Azure wants the text.
        return value.isoformat() if isinstance(value, datetime.date) else value

    @field_validator("model")
    @classmethod
    def _model_named(cls, value: str | None, info: ValidationInfo) -> str | None:
        # Only kind "verl" may omit it: VERL names the model it serves.
        if value is None and info.data.get("kind") != "verl":
            raise PydanticCustomError("missing", "Field required")
        return value


_IMPORT_PATH = r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$"


def _condition(value: object) -> object:
    if isinstance(value, dict):
        _When(value)  # the runner's own check, before pydantic's: one clear message per mistake
    return value


When = Annotated[
    dict[str, ConditionValue | list[ConditionValue]],
    BeforeValidator(_condition),
    Field(
        description="The rows this applies to: {field: value} or {field: [values]} (any of); every "
        "field must hold; fields are dotted paths, as in mappers. Elsewhere: not applicable.",
        json_schema_extra={"minProperties": 1},
    ),
]
"""A routing condition (``when:``): see :mod:`openjudge.runner._routing`."""


class GraderSpec(_Spec):
    """One grader.

    Attributes:
        type: A built-in grader name (``openjudge graders`` lists them), or a grader class
            of your own as ``module:ClassName``, imported with the config's folder on the
            Python path.
        provider: The provider name, for LLM graders.
        params: Constructor arguments.
        mapper: ``{input_name: "dotted.path.in.sample"}``; default: same-named sample fields.
        response_failure_score: The score of a response that made grading fail (deep
            nesting, huge numbers, a lone surrogate, a judge's refusal ...); default: the
            bottom of the grader's range. It must lie in the grader's range.
        when: The rows the grader applies to, e.g. ``{task: math}`` (a list of values is
            "any of"; every field must hold). Elsewhere its result is ``not_applicable``:
            neither a score nor an error. Default: every row.
    """

    type: str = Field(min_length=1)
    provider: str | None = None
    params: dict[str, JsonValue] = Field(default_factory=dict)
    mapper: dict[str, str] | None = None
    response_failure_score: FiniteFloat | None = None
    when: When | None = None


AGGREGATOR_TYPES = ("weighted_mean", "min", "gate")
"""The built-in aggregator types (any other ``type`` is a class of your own, ``module:Class``)."""


class AggregatorSpec(_Spec):
    """Combine each sample's grader results.

    Attributes:
        type: ``weighted_mean``, ``min`` or ``gate``, or an aggregator class of your own as
            ``module:ClassName`` (called with each sample's results, grader name -> result).
        name: Result name (defaults to the type; for a class, the class's name).
        params: Constructor arguments of an aggregator class of your own.
        weights: For ``weighted_mean`` (and the inner mean of ``gate``): grader -> weight
            (0 or more). Every grader it mixes must declare a score range. A name may be an
            aggregator listed before this one: its 0-1 value is mixed like a grader's.
        on_error: ``error`` (a failed input fails the aggregate) or ``skip``.
        gates: For ``gate``: grader (or earlier aggregator) -> minimum normalised score, in [0, 1].
        fail_score: For ``gate``: the score when a gate fails.
        when: The rows this aggregator applies to (as a grader's ``when``); elsewhere it
            is not applicable. Without it, it applies wherever one of its inputs does.
    """

    type: str = Field(
        json_schema_extra={"anyOf": [{"enum": list(AGGREGATOR_TYPES)}, {"pattern": _IMPORT_PATH}]}
    )
    name: str | None = Field(default=None, min_length=1)
    params: dict[str, JsonValue] = Field(default_factory=dict)
    weights: dict[str, Weight] | None = None
    on_error: Literal["error", "skip"] = "error"
    gates: dict[str, Minimum] | None = None
    fail_score: FiniteFloat = 0.0
    when: When | None = None

    @property
    def result_name(self) -> str:
        """The name its results go under: ``name``, else the type (a class's own name for ``module:Class``)."""
        if self.name:
            return self.name
        return self.type.rpartition(":")[2].rpartition(".")[2] if ":" in self.type else self.type

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value in AGGREGATOR_TYPES or ":" in value:
            return value
        close = difflib.get_close_matches(value, AGGREGATOR_TYPES, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"unknown aggregator type {value!r}{hint} (types: {', '.join(AGGREGATOR_TYPES)}; "
            "or a class of your own as 'module:ClassName')"
        )


class RunnerSpec(_Spec):
    """Runner settings.

    Attributes:
        tune_collector: Raise the garbage collector's young threshold while the run is
            active (see :class:`~openjudge.runner.grading_runner.RunSettings`). Unset: on
            where the process is openjudge's own (``openjudge run`` and its Ray workers),
            off in a host's process (a trainer's reward worker, a program that builds the job).
    """

    max_concurrency: int = Field(default=32, ge=1)
    timeout_s: float | None = Field(default=300.0, gt=0)
    deadline_s: float | None = Field(default=None, gt=0)
    tune_collector: bool | None = None


DEFAULT_MAX_RECORD_BYTES = 64 * 1024 * 1024
"""The default cap on one dataset record's size (``data.max_record_bytes``): 64 MiB."""


class DataSpec(_Spec):
    """Where samples come from (``--data`` overrides ``path``).

    Attributes:
        graders_field: A field of each row naming the graders that apply to it (a name, a
            list of names, or names separated by commas); the others are not applicable
            there. A row without the field runs every grader whose ``when`` holds.
        max_record_bytes: The largest record read: a JSON Lines line, a CSV line or a JSON
            array element (counted in characters there) past it is recorded as malformed
            without being held in memory, so memory is bounded by this cap, not by the
            largest record.
    """

    path: str | None = None
    format: Literal["auto", "jsonl", "json", "csv"] = "auto"
    id_field: str = "id"
    graders_field: str | None = Field(default=None, min_length=1)
    on_error: Literal["skip", "fail"] = "skip"
    max_record_bytes: int = Field(default=DEFAULT_MAX_RECORD_BYTES, ge=1)


class CacheSpec(_Spec):
    """The judge-reply cache, used by providers whose temperature is 0.

    Attributes:
        enabled: Serve repeated deterministic judge calls from the cache.
        path: Share one cache file between every job and run that names it (relative to
            the config file when relative): the explicit choice to reuse verdicts across
            jobs. Without it, ``openjudge run`` keeps a cache per results file (a new
            ``--out`` grades afresh) and other users of the config (trainers' workers,
            Ray actors) one per process.
    """

    enabled: bool = True
    path: str | None = None


class JobConfig(_Spec):
    """A whole job config file."""

    version: Literal[1] = 1
    providers: dict[str, ProviderSpec] = Field(default_factory=dict)
    graders: dict[str, GraderSpec] = Field(min_length=1)
    aggregators: list[AggregatorSpec] = Field(default_factory=list)
    runner: RunnerSpec = RunnerSpec()
    data: DataSpec = DataSpec()
    cache: CacheSpec = CacheSpec()

    _located: Located | None = PrivateAttr(default=None)
    _base_dir: Path | None = PrivateAttr(default=None)

    @property
    def base_dir(self) -> Path | None:
        """The folder of the file this config was loaded from: relative paths and
        ``module:Class`` types resolve there (``None`` for a config parsed from text)."""
        return self._base_dir

    def located(self, source: str = "<config>") -> Located:
        """Where each field is in the file this config was loaded from (for messages)."""
        return self._located if self._located is not None else Located(source)


def config_json_schema() -> dict[str, JsonValue]:
    """The JSON Schema of a job config file, for editor completion and validation."""
    schema: dict[str, JsonValue] = JobConfig.model_json_schema(mode="validation")
    defs = schema["$defs"]
    assert isinstance(defs, dict)
    discriminate_graders(defs)  # each built-in type's own params, so editors complete them
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "openjudge job config"
    return schema
