"""OpenAI ``score_model`` and ``label_model`` graders, through any openjudge chat model.

The grader's ``input`` messages are rendered (templates filled, ``developer`` sent as
``system``, image and audio parts as chat-completions parts: see :mod:`._messages`) and
sent to the configured provider, whatever the JSON's ``model`` says (it is kept in the
result's metadata). The judge is asked for structured output in the strongest mode the
provider declares, with this schema:

* ``score_model``: ``{"steps": [{"description", "conclusion"}], "result": <number>}``;
  the number is truncated into ``range`` (default [0, 1]) and a non-numeric output
  scores 0, by OpenAI's rule (see :mod:`._score_reading`);
* ``label_model``: ``{"steps": [...], "result": <one of labels>}``; the score is 1.0
  when the label is one of ``passing_labels``, else 0.0.

OpenAI enforces that format with structured outputs; open models also need to be told,
so one system message stating it is put before the grader's messages. The response's
text goes in verbatim, except that tags the prompt itself uses are escaped inside it
(see :meth:`ModelJudge.render`). A judge that refuses (a content filter, or the
provider's ``refusal`` field: ``ChatModelError(kind="refused")``) refuses what the
response wrote: the response's failure at the bottom of the range (cause
``judge_refused``), as :class:`~openjudge.graders.llm_grader.LLMGrader` scores it. That
is decided before the reply is read, so a refusal is never a score_model's non-numeric 0;
a refusal written as plain text in the reply (no refusal field, no filter) is a reply
without a number, read by OpenAI's rule like any other (see :mod:`._score_reading`). An
unusable label_model reply (and, with ``non_numeric="error"``, a score_model's) gets one
re-ask, then ``GraderError(parse_error)`` (OpenAI's ``model_grader_parse_error``), as for
every LLM judge here; a provider failure keeps the provider's kind.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from openjudge.graders._judge_output import evict_unusable
from openjudge.graders.blame import overflow_metadata
from openjudge.graders.openai._blame import response_failure
from openjudge.graders.openai._messages import PromptMessage
from openjudge.graders.openai._score_reading import (
    NonNumeric,
    non_numeric_score,
    number_in,
    read_reply,
    truncate,
)
from openjudge.graders.openai._spec import LabelModelSpec, SamplingParams, ScoreModelSpec
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatModel, OutputSpec, Sampling
from openjudge.results import GraderError, GraderScore, ScoreRange, TokenUsage

__all__ = ["ModelJudge"]

_STEPS: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"description": {"type": "string"}, "conclusion": {"type": "string"}},
        "required": ["description", "conclusion"],
        "additionalProperties": False,
    },
}
_SNIPPET = 200
_log = logging.getLogger(__name__)


def _sampling(params: SamplingParams | None, model: ChatModel, grader: str) -> Sampling | None:
    """The judge's sampling from OpenAI's ``sampling_params``: what the provider takes.

    An absent field is left out (the provider's own setting applies, then the server's
    default); ``max_completions_tokens`` (or the guide's ``max_tokens``) is the completion
    cap, sent under the name the provider uses; ``reasoning_effort`` is passed where the
    provider declares it
    (:attr:`~openjudge.models.chat_model.ModelCapabilities.reasoning_effort`), else
    dropped with a warning.
    """
    if params is None:
        return None
    effort = params.reasoning_effort
    if effort is not None and not model.capabilities.reasoning_effort:
        _log.warning(
            "%s: sampling_params.reasoning_effort %r is not sent: the judge %r does not take it",
            grader,
            effort,
            model.model_name,
        )
        effort = None
    return Sampling(
        temperature=params.temperature,
        top_p=params.top_p,
        seed=params.seed,
        max_tokens=params.max_completions_tokens or params.max_tokens,
        reasoning_effort=effort,
    )


def _fmt(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:g}"


def _check_media(messages: Sequence[PromptMessage], model: ChatModel) -> None:
    """Refuse image or audio parts the judge cannot take, when the grader is built."""
    takes = {"image": model.capabilities.image_input, "audio": model.capabilities.audio_input}
    for index, message in enumerate(messages):
        for kind in sorted(message.media):
            if not takes[kind]:
                raise ValueError(
                    f"input[{index}]: the judge {model.model_name!r} takes text only, not input_{kind} parts: "
                    f"use a provider that takes them (an OpenAI-compatible server such as vLLM or OpenAI, "
                    f"with a model that reads {kind}s), or remove the part"
                )


class ModelJudge:
    """The judge call of one ``score_model`` or ``label_model`` grader (stateless after construction)."""

    def __init__(
        self,
        spec: ScoreModelSpec | LabelModelSpec,
        model: ChatModel,
        *,
        max_reasks: int = 1,
        non_numeric: NonNumeric = "zero",
    ) -> None:
        self.spec = spec
        self.model = model
        self.max_reasks = max_reasks
        self.non_numeric = non_numeric
        self.messages = [PromptMessage(m, f"input[{i}]") for i, m in enumerate(spec.input)]
        _check_media(self.messages, model)
        self.tags = frozenset().union(*(m.tags for m in self.messages))
        self.sampling = _sampling(spec.sampling_params, model, spec.name or spec.type)
        if isinstance(spec, ScoreModelSpec):
            low, high = spec.range or (0.0, 1.0)
            self.score_range = ScoreRange(low=low, high=high)
            result: dict[str, Any] = {"type": "number", "minimum": low, "maximum": high}
            rule = f'"result" is your score, a number from {_fmt(low)} to {_fmt(high)}.'
        else:
            self.score_range = ScoreRange(low=0.0, high=1.0)
            result = {"type": "string", "enum": list(spec.labels)}
            rule = f'"result" is exactly one of these labels: {json.dumps(spec.labels, ensure_ascii=False)}.'
        schema = {
            "type": "object",
            "properties": {"steps": _STEPS, "result": result},
            "required": ["steps", "result"],
            "additionalProperties": False,
        }
        self.output = OutputSpec.from_schema(spec.type, schema)
        self.instructions = (
            'Reply with only a JSON object {"steps": [{"description": ..., "conclusion": ...}], "result": ...} '
            f"where the steps are your reasoning and {rule}"
        )

    def render(self, item: Mapping[str, JsonValue], sample: Mapping[str, JsonValue]) -> list[dict[str, Any]]:
        """The messages sent to the judge (raises :class:`~._templates.VariableError`).

        The response's text is inserted as the grader's author wrote the template, except
        that tags the prompt itself uses (``<answer>...</answer>``) are escaped inside it,
        so a response cannot close the block its author put it in and write instructions
        after it (:func:`~openjudge.models.schema._data_blocks.escape_tags`).
        """
        return [
            {"role": "system", "content": self.instructions},
            *(m.render(item, sample, self.tags) for m in self.messages),
        ]

    def _read(self, content: str) -> tuple[float, str, list[JsonValue], dict[str, JsonValue]]:
        """(score, label or "", steps, metadata) from a reply; ValueError if it is not usable.

        A score_model's number is read by OpenAI's rule (see :mod:`._score_reading`).
        """
        reply = read_reply(content)
        result = reply.result
        if isinstance(self.spec, LabelModelSpec):
            if result is None:
                raise ValueError(reply.problem)
            if not isinstance(result, str) or result not in self.spec.labels:
                raise ValueError(f'"result" must be one of {self.spec.labels}, got {result!r}')
            return (1.0 if result in self.spec.passing_labels else 0.0), result, reply.steps, {}
        number = number_in(result)
        if number is None:
            if self.non_numeric == "error":
                raise ValueError(reply.problem or f'"result" must be a number, got {result!r}')
            return non_numeric_score(self.score_range), "", reply.steps, {"non_numeric_output": True}
        score = truncate(number, self.score_range)
        return score, "", reply.steps, ({} if score == number else {"truncated_from": number})

    async def judge(self, name: str, messages: Sequence[Mapping[str, Any]]) -> GraderScore | GraderError:
        """Ask the judge (with one bounded re-ask on an unusable reply)."""
        usage: TokenUsage | None = None
        latency_s = 0.0
        output = None if self.model.capabilities.structured_output == "prompt" else self.output
        conversation = list(messages)
        for round_ in range(self.max_reasks + 1):
            try:
                response = await self.model.achat(
                    conversation, output=output, sampling=self.sampling, cache_tag=f"openai_grader:{name}@1"
                )
            except ChatModelError as exc:
                spent = TokenUsage(0, 0, exc.requests)
                total = spent if usage is None else usage + spent
                if exc.kind == "refused":
                    return self._refused(name, exc.message, total, latency_s or None)
                return GraderError(
                    name=name,
                    kind=exc.kind,
                    message=f"model_grader_server_error: {exc.message}",
                    error_type=exc.error_type,
                    metadata=overflow_metadata(exc.context_overflow) if exc.context_overflow else {},
                    usage=total,
                    latency_s=latency_s or None,
                )
            usage = response.usage if usage is None else usage + response.usage
            latency_s += response.latency_s
            if response.finish_reason == "content_filter":
                await evict_unusable(self.model, response)
                message = "the judge's reply was blocked by the content filter"
                return self._refused(name, message, usage, latency_s)
            try:
                score, label, steps, read = self._read(response.content)
            except ValueError as exc:
                await evict_unusable(self.model, response)
                if round_ < self.max_reasks:
                    conversation += [
                        {"role": "assistant", "content": response.content},
                        {
                            "role": "user",
                            "content": f"Your reply could not be used: {exc}. {self.instructions}",
                        },
                    ]
                    continue
                return GraderError(
                    name=name,
                    kind="parse_error",
                    message=f"model_grader_parse_error: {exc}; reply began: {response.content[:_SNIPPET]!r}",
                    error_type="ValueError",
                    usage=usage,
                    latency_s=latency_s,
                )
            metadata: dict[str, JsonValue] = {
                "openai_model": self.spec.model,
                "judge_model": response.model or self.model.model_name,
                **read,
            }
            if label:
                metadata["label"] = label
            if read.get("non_numeric_output"):
                # Scored by OpenAI's rule, but not a verdict: a rerun asks the judge again.
                await evict_unusable(self.model, response)
                return GraderScore(
                    name=name,
                    score=score,
                    reason=f"the judge's output is not a number, so {_fmt(score)} (OpenAI's rule); "
                    f"it began: {response.content[:_SNIPPET]!r}",
                    metadata=metadata,
                    score_range=self.score_range,
                    usage=usage,
                    latency_s=latency_s,
                )
            reason = "; ".join(
                str(step.get("conclusion", ""))
                for step in steps
                if isinstance(step, dict) and step.get("conclusion")
            )
            return GraderScore(
                name=name,
                score=score,
                reason=(reason or (f"label {label}" if label else f"score {_fmt(score)}"))[:2000],
                metadata=metadata,
                score_range=self.score_range,
                usage=usage,
                latency_s=latency_s,
            )
        raise AssertionError("unreachable: the loop always returns")

    def _refused(
        self, name: str, message: str, usage: TokenUsage | None, latency_s: float | None
    ) -> GraderScore:
        """A refusal to grade the response: its failure, at the bottom (OpenAI's ``model_grader_refusal_error``)."""
        failure = response_failure(
            name, self.score_range, "judge_refused", f"model_grader_refusal_error: {message}"
        )
        return failure.model_copy(update={"usage": usage, "latency_s": latency_s})
