"""What decides a score: the fingerprint a results file is bound to.

A results file's header (see :mod:`openjudge.jobs._results`) records a
:class:`JobFingerprint`: per grader its type, class, version, constructor parameters,
mapper, routing (``when``), a digest of its prompt template and its provider's kind,
model, endpoint, API version, structured-output mode and sampling; per aggregator its
settings; the field that holds sample ids and the one that names each row's graders. Settings that change how fast or how safely a job runs (limits,
timeouts, retries, prices, the cache) are left out: they do not change a score.

Resuming compares the file's fingerprint with the current job's (:func:`compare`):

* nothing differs: samples already in the file are skipped;
* graders were added, or aggregators changed: the added graders are graded (and the
  aggregates recomputed) for the samples already in the file; nothing else is repeated;
* a grader changed or was removed, or the id field changed: resuming would mix results of
  two different jobs, so it needs consent (``--regrade``: re-grade only the changed graders).

API keys are never part of a fingerprint, and credentials are cut from endpoint URLs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from openjudge.graders.base_grader import BaseGrader
from openjudge.models.schema.prompt_template import PromptTemplate

if TYPE_CHECKING:
    from openjudge.config._build import BuiltJob
    from openjudge.config._spec import JobConfig, ProviderSpec

__all__ = ["GraderFingerprint", "JobChanges", "JobFingerprint", "compare", "job_fingerprint"]

_VALUE_CHARS = 48


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class GraderFingerprint(_Model):
    """Everything about one grader that decides its scores.

    Attributes:
        type: The config's grader type.
        grader_class: The class that grades.
        version: The class's ``version`` attribute, if it has one (bumped when its judging changes).
        params: Constructor parameters from the config.
        mapper: The mapper from the config.
        prompt: A digest of the prompt template(s) the grader sends, for LLM graders.
        provider: The judge's kind, model, endpoint, API version, structured output and sampling.
        when: The rows it applies to (its routing condition), if it has one.
    """

    type: str
    grader_class: str
    version: str | None = None
    params: dict[str, JsonValue] = Field(default_factory=dict)
    mapper: dict[str, str] | None = None
    prompt: str | None = None
    provider: dict[str, JsonValue] | None = None
    when: dict[str, JsonValue] | None = None


class JobFingerprint(_Model):
    """Everything about a job that decides the contents of its results file."""

    graders: dict[str, GraderFingerprint]
    aggregators: dict[str, dict[str, JsonValue]] = Field(default_factory=dict)
    id_field: str = "id"
    graders_field: str | None = None


@dataclass(frozen=True, slots=True)
class JobChanges:
    """How the job that wrote a results file differs from the current one.

    Attributes:
        added: Graders the file has no results for.
        changed: Grader name to what changed (one line per difference).
        removed: Graders the file has results for that the job no longer has.
        aggregators: One line per aggregator added, removed or changed.
        id_field: ``(old, new)`` if the id field changed.
    """

    added: tuple[str, ...] = ()
    changed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    removed: tuple[str, ...] = ()
    aggregators: tuple[str, ...] = ()
    id_field: tuple[str, str] | None = None

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed or self.aggregators or self.id_field)

    @property
    def needs_consent(self) -> bool:
        """Whether resuming would replace or drop results already in the file."""
        return bool(self.changed or self.removed or self.id_field)

    @property
    def to_grade(self) -> frozenset[str]:
        """Graders to grade again on the samples already in the file."""
        return frozenset(self.added) | frozenset(self.changed)

    def describe(self) -> list[str]:
        """One line per difference, e.g. ``graders.quality: params.template: 'a' -> 'b'``."""
        lines = [f"graders.{name}: added" for name in self.added]
        for name, what in self.changed.items():
            lines += [f"graders.{name}: {line}" for line in what]
        lines += [f"graders.{name}: removed (its results would be dropped)" for name in self.removed]
        lines += [f"aggregators.{line}" for line in self.aggregators]
        if self.id_field is not None:
            old, new = self.id_field
            lines.append(f"data.id_field: {old!r} -> {new!r} (every sample id changes)")
        return lines


def _short(value: object) -> str:
    if value is None:
        return "(unset)"
    text = (
        json.dumps(value, ensure_ascii=False, sort_keys=True) if not isinstance(value, str) else repr(value)
    )
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 1] + "…"


def _differences(old: object, new: object, path: str) -> list[str]:
    """One line per leaf that differs between two JSON-like values."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        lines: list[str] = []
        for key in sorted({*old, *new}, key=str):
            sub = f"{path}.{key}" if path else str(key)
            lines += _differences(old.get(key), new.get(key), sub)
        return lines
    if old == new:
        return []
    if path.endswith("prompt"):
        return [f"{path}: the prompt template changed"]
    return [f"{path}: {_short(old)} -> {_short(new)}"]


def compare(old: JobFingerprint, new: JobFingerprint) -> JobChanges:
    """How ``new`` differs from ``old`` (the fingerprint a results file was written under)."""
    changed: dict[str, tuple[str, ...]] = {}
    routing = (
        []
        if old.graders_field == new.graders_field
        else _differences(old.graders_field, new.graders_field, "")
    )
    for name in old.graders.keys() & new.graders.keys():
        before, after = old.graders[name].model_dump(), new.graders[name].model_dump()
        lines = _differences(before, after, "")
        if routing:  # every grader's rows may change
            lines += [f"data.graders_field: {line.removeprefix(': ')}" for line in routing]
        if lines:
            changed[name] = tuple(lines)
    aggregators: list[str] = []
    for name in sorted(old.aggregators.keys() | new.aggregators.keys()):
        if name not in old.aggregators:
            aggregators.append(f"{name}: added")
        elif name not in new.aggregators:
            aggregators.append(f"{name}: removed")
        else:
            aggregators += [
                f"{name}: {line}" for line in _differences(old.aggregators[name], new.aggregators[name], "")
            ]
    return JobChanges(
        added=tuple(n for n in new.graders if n not in old.graders),
        changed=dict(sorted(changed.items())),
        removed=tuple(n for n in old.graders if n not in new.graders),
        aggregators=tuple(aggregators),
        id_field=None if old.id_field == new.id_field else (old.id_field, new.id_field),
    )


def _without_credentials(url: str | None) -> str | None:
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _prompt_digest(grader: BaseGrader) -> str | None:
    """A digest of every prompt template the grader (or a grader it wraps) holds."""
    templates: list[str] = []
    seen: set[int] = set()

    def visit(obj: object, depth: int) -> None:
        if id(obj) in seen or depth > 2:
            return
        seen.add(id(obj))
        for value in list(vars(obj).values()) if hasattr(obj, "__dict__") else []:
            if isinstance(value, PromptTemplate):
                templates.append(value.model_dump_json())
            elif isinstance(value, BaseGrader):
                visit(value, depth + 1)

    visit(grader, 0)
    if not templates:
        return None
    return "sha256:" + hashlib.sha256("\n".join(templates).encode("utf-8")).hexdigest()[:16]


def _provider(spec: ProviderSpec, built: object) -> dict[str, JsonValue]:
    base_url = spec.base_url or getattr(built, "base_url", None)
    return {
        "kind": spec.kind,
        "model": spec.model,
        "base_url": _without_credentials(base_url if isinstance(base_url, str) else None),
        "api_version": spec.api_version,
        # Unset finds the strongest mode the server takes: json_schema wherever the old default
        # (json_schema) worked, so files written under it still match.
        "structured_output": spec.structured_output or "json_schema",
        "sampling": spec.sampling.model_dump(mode="json"),
    }


def job_fingerprint(config: JobConfig, job: BuiltJob) -> JobFingerprint:
    """The fingerprint of a job built from ``config``."""
    graders: dict[str, GraderFingerprint] = {}
    for name, spec in config.graders.items():
        grader = job.runner.grader_configs[name].grader
        cls = type(grader)
        version = getattr(cls, "version", None)
        provider = None
        if spec.provider is not None:
            provider = _provider(config.providers[spec.provider], job.providers.get(spec.provider))
        graders[name] = GraderFingerprint(
            type=spec.type,
            grader_class=f"{cls.__module__}.{cls.__qualname__}",
            version=version if isinstance(version, str) else None,
            params=dict(spec.params),
            mapper=dict(spec.mapper) if spec.mapper is not None else None,
            prompt=_prompt_digest(grader),
            provider=provider,
            when=dict(spec.when) if spec.when is not None else None,
        )
    aggregators: dict[str, dict[str, JsonValue]] = {}
    for agg in config.aggregators:
        # 'params' (for aggregator classes of the user's) and 'when' only when set: files
        # written before they existed still match
        left_out = (
            {"name"} | ({"params"} if not agg.params else set()) | ({"when"} if agg.when is None else set())
        )
        settings = agg.model_dump(mode="json", exclude=left_out)
        aggregators[agg.result_name] = settings
    return JobFingerprint(
        graders=graders,
        aggregators=aggregators,
        id_field=config.data.id_field,
        graders_field=config.data.graders_field,
    )
