""":class:`OpenAIGrader`: one OpenAI grader JSON (any type, ``multi`` included) as an openjudge grader.

Inputs (what the mapper gives it):

* ``response``: the model's output text, or its assistant message (``content`` and
  ``tool_calls``); becomes the ``sample`` namespace (see :mod:`._sample`);
* ``tool_calls`` (optional): the response's tool calls (``sample.output_tools``);
* ``item`` (optional): the dataset item (the ``item`` namespace). Without it, every
  other field the grader receives is the item: with no mapper, a dataset row's
  fields (``{"question": ..., "reference_answer": ..., "response": ...}`` gives
  ``{{ item.reference_answer }}``), which is how OpenAI reads an RFT dataset row.

The score is OpenAI's ``reward``: string_check 0/1; text_similarity in [0, 1];
python ``grade()``'s float (declared range [0, 1] unless ``python_score_range``);
score_model in its ``range``; label_model 0/1; multi the formula over the
sub-graders' scores (its range derived from theirs, see :mod:`._formula`).
``metadata`` holds ``openai_type``, ``sub_rewards`` for multi, ``passed`` when the
JSON has a ``pass_threshold``, and for failures ``blame``/``cause`` (see :mod:`.blame`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import anyio
import anyio.to_thread
from pydantic import JsonValue

from openjudge.graders.base_grader import BaseGrader, InputSpec
from openjudge.graders.code._backends import sandbox_backend
from openjudge.graders.code._sandbox import BackendName, SandboxBackend, SandboxError, SandboxLimits
from openjudge.graders.openai import _blame as blame
from openjudge.graders.openai._formula import Formula, FormulaError, Interval
from openjudge.graders.openai._model_graders import ModelJudge
from openjudge.graders.openai._python_grader import (
    PythonSource,
    executes_text,
    run_grade,
    third_party_imports,
)
from openjudge.graders.openai._sample import SampleError, build_sample
from openjudge.graders.openai._similarity import Embedder, Metric, cosine, metric_for
from openjudge.graders.openai._spec import (
    LabelModelSpec,
    MultiSpec,
    OpenAIGraderSpec,
    PythonSpec,
    ScoreModelSpec,
    StringCheckSpec,
    TextSimilaritySpec,
    parse_grader,
)
from openjudge.graders.openai._templates import Template, VariableError
from openjudge.models._loop_local import LoopLocal
from openjudge.models.chat_model import ChatModel
from openjudge.results import GraderError, GraderResult, GraderScore, ScoreRange, TokenUsage

__all__ = ["OpenAIGrader", "from_openai_grader", "read_grader_json"]

_UNIT = ScoreRange(low=0.0, high=1.0)
_THREAD_CHARS = 20_000
_METRIC_CHARS = 50_000  # each text is cut to this before a similarity metric  # metrics over longer texts run in a worker thread, off the event loop
_SPECIAL_INPUTS = frozenset({"response", "tool_calls", "item"})

LeafSpec = StringCheckSpec | TextSimilaritySpec | PythonSpec | ScoreModelSpec | LabelModelSpec


def read_grader_json(source: str | os.PathLike[str]) -> dict[str, JsonValue]:
    """The grader object in a JSON file (a grader, or an RFT job / run request holding one).

    Raises:
        ValueError: The file is unreadable, not JSON, or holds no single grader.
    """
    from openjudge.graders.openai._importer import graders_in

    path = Path(source)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the grader file ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    found = graders_in(data)
    if len(found) != 1:
        raise ValueError(
            f"{path}: expected one grader, found {len(found)} (use openjudge import-openai-graders)"
        )
    return found[0][1]


class OpenAIGrader(BaseGrader):
    """An OpenAI grader JSON run with OpenAI's semantics (see the module docstring).

    Args:
        grader: The grader: a JSON object (mapping), a JSON string, or a path to a JSON
            file (a grader, or an RFT job or graders-run request holding one).
        model: The chat model ``score_model``/``label_model`` graders use (any provider;
            the JSON's ``model`` name is recorded, not used). Required when there are any.
        embedder: ``async (texts) -> vectors`` for ``text_similarity`` with ``cosine``.
        sandbox: Where ``python`` graders run: a backend name (``auto``, ``bwrap``,
            ``unshare``, ``process``) or a :class:`~openjudge.graders.code.SandboxBackend`.
        python_timeout_s: Wall-clock limit of one ``grade()`` call.
        python_memory_mb: Memory limit of one ``grade()`` call (MiB).
        site_packages: Let ``python`` graders import installed packages (numpy,
            rapidfuzz, ...), read-only. Default: on only when a source imports a module
            outside the standard library (the least the grader needs).
        allow_subprocess: Let ``python`` graders start processes (killed with the run), e.g.
            to run a sample's code in a process of its own rather than ``exec`` it.
        python_score_range: The range a ``python`` grader's float must lie in.
        max_processes: Sandboxes running at once for this grader in one event loop.
        score_range: Override the declared range of the whole grader (e.g. of a multi formula).
        response_failure_score: The score of a response-caused failure (default: the
            bottom of the range).
        max_reasks: Re-asks of a model grader after an unusable reply.
        name: Result name (default: the JSON's ``name``).
        description: One line on what is graded.

    Raises:
        ValueError: The JSON is not a grader OpenAI accepts, a template names something
            other than ``item``/``sample`` fields, the formula does not parse, the python
            source does not define ``grade``, a model grader has no ``model``, or
            ``cosine`` has no ``embedder``.
        ImportError: A text_similarity metric's library is missing (names the extra).
    """

    default_name: ClassVar[str] = "openai_grader"

    def __init__(
        self,
        grader: Mapping[str, object] | OpenAIGraderSpec | str | os.PathLike[str],
        *,
        model: ChatModel | None = None,
        embedder: Embedder | None = None,
        sandbox: BackendName | SandboxBackend = "auto",
        python_timeout_s: float = 30.0,
        python_memory_mb: int | None = 2048,
        site_packages: bool | None = None,
        allow_subprocess: bool = False,
        python_score_range: tuple[float, float] | Sequence[float] | ScoreRange = (0.0, 1.0),
        max_processes: int | None = None,
        score_range: ScoreRange | tuple[float, float] | Sequence[float] | None = None,
        response_failure_score: float | None = None,
        max_reasks: int = 1,
        name: str = "",
        description: str = "",
    ) -> None:
        self.spec: OpenAIGraderSpec = _load(grader)
        python_range = ScoreRange.coerce(python_score_range)
        assert python_range is not None  # coerce only returns None for None
        self.python_range = python_range
        self.model = model
        self.embedder = embedder
        self.response_failure_score = response_failure_score
        self._templates: dict[int, tuple[Template, Template]] = {}
        self._metrics: dict[int, Metric] = {}
        self._judges: dict[int, ModelJudge] = {}
        self._sources: dict[int, PythonSource] = {}
        self._ranges: dict[int, ScoreRange] = {}
        self._formula: Formula | None = None
        leaves = list(self.spec.graders.values()) if isinstance(self.spec, MultiSpec) else [self.spec]
        for leaf in leaves:
            self._prepare(leaf, max_reasks)
        declared = ScoreRange.coerce(score_range)
        # Sub-graders that wait (a judge, a sandbox, an embedder) run concurrently.
        self._waits = bool(self._judges or self._sources) or any(
            isinstance(leaf, TextSimilaritySpec) and leaf.evaluation_metric == "cosine" for leaf in leaves
        )
        if isinstance(self.spec, MultiSpec):
            try:
                self._formula = Formula(self.spec.calculate_output, set(self.spec.graders))
            except FormulaError as exc:
                raise ValueError(f"{self.spec.name}: formula_parse_error: {exc}") from None
            if declared is None:
                bounds = self._formula.bounds(
                    {
                        key: Interval(self._ranges[id(g)].low, self._ranges[id(g)].high)
                        for key, g in self.spec.graders.items()
                    }
                )
                declared = (
                    ScoreRange(low=bounds.low, high=bounds.high)
                    if bounds and bounds.low < bounds.high
                    else None
                )
        else:
            declared = declared or self._ranges[id(self.spec)]
        super().__init__(
            name=name or self.spec.name or self.spec.type, description=description, score_range=declared
        )
        if site_packages is None:
            site_packages = any(third_party_imports(s.source) for s in self._sources.values())
        self.limits = SandboxLimits(
            timeout_s=python_timeout_s,
            memory_mb=python_memory_mb,
            site_packages=site_packages,
            allow_subprocess=allow_subprocess,
        )
        self.sandbox: SandboxBackend | None = None
        if self._sources:
            self.sandbox = sandbox_backend(sandbox) if isinstance(sandbox, str) else sandbox
            processes = max_processes or os.cpu_count() or 2
            self._processes = LoopLocal(lambda: anyio.CapacityLimiter(processes))
        self._input_spec = InputSpec(
            frozenset({"response"}), frozenset({"tool_calls", "item"}), accepts_any=True
        )

    def _prepare(self, leaf: LeafSpec, max_reasks: int) -> None:
        key = id(leaf)
        if isinstance(leaf, StringCheckSpec | TextSimilaritySpec):
            self._templates[key] = (Template(leaf.input), Template(leaf.reference))
            self._ranges[key] = _UNIT
            if isinstance(leaf, TextSimilaritySpec):
                if leaf.evaluation_metric == "cosine":
                    if self.embedder is None:
                        metric_for("cosine")  # raises the explanation
                else:
                    self._metrics[key] = metric_for(leaf.evaluation_metric)
        elif isinstance(leaf, PythonSpec):
            self._sources[key] = PythonSource.check(leaf.source, leaf.name)
            self._ranges[key] = self.python_range
            runners = executes_text(leaf.source)
            if runners:
                import logging

                logging.getLogger(__name__).warning(
                    "python grader %r runs text as code (%s): if that text comes from the sample, the sample "
                    "controls grade()'s process and can return any score; run it in a subprocess instead",
                    leaf.name,
                    ", ".join(runners),
                )
        else:
            if self.model is None:
                raise ValueError(
                    f"{leaf.type} grader {leaf.name!r} needs a judge: pass model=<chat model> "
                    "(in a job config: provider: <name>)"
                )
            judge = ModelJudge(leaf, self.model, max_reasks=max_reasks)
            self._judges[key] = judge
            self._ranges[key] = judge.score_range

    def input_spec(self) -> InputSpec:
        """``response`` is required; ``tool_calls`` and ``item`` are optional; other fields form the item."""
        return self._input_spec

    async def aevaluate(self, **inputs: object) -> GraderResult:
        """Grade one response (see the module docstring for the inputs)."""
        try:
            item, sample = self._namespaces(inputs)
        except (SampleError, TypeError, RecursionError) as exc:
            return GraderError(
                name=self.name, kind="invalid_input", message=str(exc), error_type=type(exc).__name__
            )
        try:
            if isinstance(self.spec, MultiSpec):
                result = await self._multi(self.spec, item, sample)
            else:
                result = await self._leaf(self.spec, self.name, self.score_range, item, sample)
        except Exception as exc:  # a bug here: a system failure, never a score
            return GraderError(
                name=self.name, kind="internal", message=f"other_error: {exc}", error_type=type(exc).__name__
            )
        return self._finish(result)

    def _finish(self, result: GraderScore | GraderError) -> GraderResult:
        if not isinstance(result, GraderScore):
            return result
        metadata: dict[str, JsonValue] = {"openai_type": self.spec.type, **result.metadata}
        threshold = getattr(self.spec, "pass_threshold", None)
        if threshold is not None:
            metadata["passed"] = result.score >= threshold
        update: dict[str, object] = {"metadata": metadata, "name": self.name}
        if blame.is_response_failure(result):
            bottom = blame.response_failure(
                self.name,
                self.score_range,
                str(result.metadata.get("cause")),
                result.reason,
                score=self.response_failure_score,
            )
            update.update(score=bottom.score, score_range=self.score_range)
        return result.model_copy(update=update)

    def _namespaces(self, inputs: Mapping[str, object]) -> tuple[dict[str, JsonValue], dict[str, JsonValue]]:
        if "response" not in inputs:
            raise TypeError(f"{self.name}: missing input 'response' (the model output to grade)")
        response = inputs["response"]
        if not isinstance(response, str | Mapping):
            raise TypeError(
                f"input 'response' must be text or a message object, got {type(response).__name__}"
            )
        tool_calls = inputs.get("tool_calls")
        if tool_calls is not None and not isinstance(tool_calls, Sequence):
            raise TypeError(f"input 'tool_calls' must be a list, got {type(tool_calls).__name__}")
        if "item" in inputs:
            item = inputs["item"]
            if item is None:
                item = {}
            if not isinstance(item, Mapping):
                raise TypeError(
                    f"input 'item' must be an object (the dataset item), got {type(item).__name__}"
                )
        else:
            item = {k: v for k, v in inputs.items() if k not in _SPECIAL_INPUTS}
        sample = build_sample(response, tool_calls)
        return {str(k): _json(v) for k, v in item.items()}, sample

    async def _leaf(
        self,
        leaf: LeafSpec,
        name: str,
        score_range: ScoreRange | None,
        item: Mapping[str, JsonValue],
        sample: Mapping[str, JsonValue],
    ) -> GraderScore | GraderError:
        key = id(leaf)
        rng = self._ranges[key] if score_range is None else score_range
        try:
            if isinstance(leaf, StringCheckSpec | TextSimilaritySpec):
                left, right = (t.render(item, sample) for t in self._templates[key])
                if isinstance(leaf, StringCheckSpec):
                    return _string_check(leaf, name, left, right)
                return await self._similarity(leaf, name, left, right)
            if isinstance(leaf, PythonSpec):
                return await self._python(leaf, name, rng, item, sample)
            judge = self._judges[key]
            messages = judge.render(item, sample)
        except VariableError as exc:
            if exc.namespace == "item":
                return GraderError(
                    name=name,
                    kind="invalid_input",
                    message=f"invalid_variable_error: {exc} (the dataset item lacks it: add it, or map 'item' to the field that holds it)",
                    error_type="VariableError",
                )
            return blame.response_failure(name, rng, exc.cause, f"{exc.cause}: {exc}")
        return await judge.judge(name, messages)

    async def _similarity(self, leaf: TextSimilaritySpec, name: str, hyp: str, ref: str) -> GraderScore:
        metadata: dict[str, JsonValue] = {"evaluation_metric": leaf.evaluation_metric}
        if leaf.evaluation_metric == "cosine":
            assert self.embedder is not None  # checked when built
            value = await cosine(self.embedder, hyp, ref)
        else:
            metric = self._metrics[id(leaf)]
            if max(len(hyp), len(ref)) > _METRIC_CHARS:
                # Bounds the work a long response can cause (METEOR's alignment is quadratic).
                hyp, ref = hyp[:_METRIC_CHARS], ref[:_METRIC_CHARS]
                metadata["truncated_to_chars"] = _METRIC_CHARS
            if len(hyp) + len(ref) > _THREAD_CHARS:
                value, extra = await anyio.to_thread.run_sync(metric.score, hyp, ref)
            else:
                value, extra = metric.score(hyp, ref)
            metadata.update(extra)
        value = min(1.0, max(0.0, value))
        return GraderScore(
            name=name,
            score=value,
            reason=f"{leaf.evaluation_metric} {value:.4f}",
            metadata=metadata,
            score_range=_UNIT,
        )

    async def _python(
        self,
        leaf: PythonSpec,
        name: str,
        rng: ScoreRange,
        item: Mapping[str, JsonValue],
        sample: Mapping[str, JsonValue],
    ) -> GraderScore | GraderError:
        assert self.sandbox is not None  # built when there is a python grader
        try:
            async with self._processes.get():
                outcome = await run_grade(self.sandbox, self.limits, self._sources[id(leaf)], sample, item)
        except SandboxError as exc:
            return GraderError(
                name=name,
                kind=exc.kind,
                message=f"python_grader_server_error: {exc}",
                error_type="SandboxError",
            )
        except ValueError as exc:  # the item cannot be sent
            return GraderError(name=name, kind="invalid_input", message=str(exc), error_type="ValueError")
        metadata: dict[str, JsonValue] = {"image_tag": leaf.image_tag} if leaf.image_tag else {}
        if outcome.blame == "system":
            return GraderError(
                name=name, kind="internal", message=f"python grader {leaf.name!r}: {outcome.detail}"
            )
        if outcome.value is None:
            return blame.response_failure(name, rng, outcome.cause, outcome.detail, metadata=metadata)
        if not rng.contains(outcome.value):
            return blame.response_failure(
                name,
                rng,
                "python_grader_out_of_range",
                f"grade() returned {outcome.value:g}, outside [{rng.low:g}, {rng.high:g}] "
                "(a grader whose scores have another range: set python_score_range)",
                metadata=metadata,
            )
        return GraderScore(
            name=name,
            score=outcome.value,
            reason=f"grade() returned {outcome.value:g}",
            metadata=metadata,
            score_range=rng,
        )

    async def _multi(
        self, spec: MultiSpec, item: Mapping[str, JsonValue], sample: Mapping[str, JsonValue]
    ) -> GraderScore | GraderError:
        keys = list(spec.graders)
        results: list[GraderScore | GraderError | None] = [None] * len(keys)

        async def one(index: int) -> None:
            key = keys[index]
            results[index] = await self._leaf(spec.graders[key], key, None, item, sample)

        if self._waits:
            async with anyio.create_task_group() as tg:
                for index in range(len(keys)):
                    tg.start_soon(one, index)
        else:  # only in-process rules: a task group would cost more than the graders themselves
            for index in range(len(keys)):
                await one(index)
        done = [r for r in results if r is not None]
        sub_rewards: dict[str, JsonValue] = {
            key: (r.score if isinstance(r, GraderScore) else None) for key, r in zip(keys, done, strict=True)
        }
        errors = [(key, r) for key, r in zip(keys, done, strict=True) if isinstance(r, GraderError)]
        if errors:
            key, first = errors[0]
            return GraderError(
                name=self.name,
                kind=first.kind,
                message=f"sub-grader {key!r}: {first.message}",
                error_type=first.error_type,
                metadata={"sub_rewards": sub_rewards, "failed": [k for k, _ in errors]},
            )
        failures = [(key, r) for key, r in zip(keys, done, strict=True) if blame.is_response_failure(r)]
        metadata: dict[str, JsonValue] = {"sub_rewards": sub_rewards}
        if failures:
            key, failed = failures[0]
            assert isinstance(failed, GraderScore)
            return blame.response_failure(
                self.name,
                self.score_range,
                str(failed.metadata.get("cause")),
                f"sub-grader {key!r}: {failed.reason}",
                metadata=metadata,
            )
        scores = {key: r.score for key, r in zip(keys, done, strict=True) if isinstance(r, GraderScore)}
        assert self._formula is not None
        try:
            value = self._formula.evaluate(scores)
        except FormulaError as exc:
            return blame.response_failure(
                self.name, self.score_range, "formula_error", str(exc), metadata=metadata
            )
        if self.score_range is not None and not self.score_range.contains(value):
            return blame.response_failure(
                self.name,
                self.score_range,
                "formula_out_of_range",
                f"calculate_output gave {value:g}, outside [{self.score_range.low:g}, {self.score_range.high:g}]",
                metadata=metadata,
            )
        return GraderScore(
            name=self.name,
            score=value,
            reason=f"{spec.calculate_output} = {value:g}",
            metadata=metadata,
            score_range=self.score_range,
            usage=_usage(done),
        )


def _usage(results: Sequence[GraderScore | GraderError]) -> TokenUsage | None:
    """The judge tokens the sub-graders spent (None when none called a judge)."""
    spent = [r.usage for r in results if r.usage is not None]
    return sum(spent[1:], spent[0]) if spent else None


def _json(value: object) -> JsonValue:
    """A dataset value as JSON data (tuples as lists, other objects as their text)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, Sequence | set | frozenset) and not isinstance(value, bytes | bytearray):
        return [_json(v) for v in value]
    return str(value)


def _string_check(spec: StringCheckSpec, name: str, left: str, right: str) -> GraderScore:
    if spec.operation == "eq":
        passed = left == right
    elif spec.operation == "ne":
        passed = left != right
    elif spec.operation == "like":
        passed = right in left
    else:
        passed = right.lower() in left.lower()
    return GraderScore(
        name=name,
        score=1.0 if passed else 0.0,
        reason=f"{spec.operation}: {'true' if passed else 'false'}",
        metadata={"operation": spec.operation},
        score_range=_UNIT,
    )


def _load(grader: Mapping[str, object] | OpenAIGraderSpec | str | os.PathLike[str]) -> OpenAIGraderSpec:
    if isinstance(
        grader,
        StringCheckSpec | TextSimilaritySpec | PythonSpec | ScoreModelSpec | LabelModelSpec | MultiSpec,
    ):
        return grader
    if isinstance(grader, str) and grader.lstrip().startswith("{"):
        try:
            data = json.loads(grader)
        except ValueError as exc:
            raise ValueError(f"the grader is not valid JSON: {exc}") from None
        return parse_grader(data)
    if isinstance(grader, str | os.PathLike):
        return parse_grader(read_grader_json(grader))
    return parse_grader(grader)


def from_openai_grader(
    grader: Mapping[str, object] | str | os.PathLike[str],
    *,
    model: ChatModel | None = None,
    embedder: Embedder | None = None,
    sandbox: BackendName | SandboxBackend = "auto",
    site_packages: bool | None = None,
    name: str = "",
) -> OpenAIGrader:
    """An openjudge grader that runs an OpenAI grader JSON unchanged (see :class:`OpenAIGrader`).

    Example:
        >>> grader = from_openai_grader(
        ...     {"type": "string_check", "name": "exact", "input": "{{ sample.output_text }}",
        ...      "reference": "{{ item.answer }}", "operation": "eq"}
        ... )
        >>> grader.name, grader.score_range.high
        ('exact', 1.0)
    """
    return OpenAIGrader(
        grader, model=model, embedder=embedder, sandbox=sandbox, site_packages=site_packages, name=name
    )
