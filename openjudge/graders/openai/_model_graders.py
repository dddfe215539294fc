"""OpenAI ``score_model`` and ``label_model`` graders, through any openjudge chat model.

The grader's ``input`` messages are rendered (templates filled, ``developer`` sent as
``system``, text parts joined) and sent to the configured provider, whatever the
JSON's ``model`` says (it is kept in the result's metadata). The judge is asked for
structured output in the strongest mode the provider declares, with this schema:

* ``score_model``: ``{"steps": [{"description", "conclusion"}], "result": <number>}``;
  the result must lie in ``range`` (default [0, 1]) and is the score;
* ``label_model``: ``{"steps": [...], "result": <one of labels>}``; the score is 1.0
  when the label is one of ``passing_labels``, else 0.0.

OpenAI enforces that format with structured outputs; open models also need to be told,
so one system message stating it is put before the grader's messages. The response's
text goes in verbatim, except that tags the prompt itself uses are escaped inside it
(see :meth:`ModelJudge.render`). An unusable
reply gets one re-ask, then ``GraderError(parse_error)`` (OpenAI's
``model_grader_parse_error``), as for every LLM judge here; a content-filtered reply is
``GraderError(refused)``; a provider failure keeps the provider's kind.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from openjudge.graders._judge_output import evict_unusable, extract_json_object
from openjudge.graders.openai._spec import LabelModelSpec, MessageSpec, SamplingParams, ScoreModelSpec
from openjudge.graders.openai._templates import Template
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatModel, OutputSpec, Sampling
from openjudge.models.schema._data_blocks import escape_tags
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
_TAG = re.compile(r"<\s*/?\s*([A-Za-z][\w.-]*)")


def _sampling(params: SamplingParams | None) -> Sampling | None:
    if params is None:
        return None
    return Sampling(
        temperature=params.temperature,
        top_p=params.top_p,
        seed=params.seed,
        max_tokens=params.max_completions_tokens or params.max_tokens,
    )


def _fmt(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:g}"


class _Message:
    """One prompt message with its text parts compiled as templates."""

    def __init__(self, spec: MessageSpec, grader: str) -> None:
        self.role = "system" if spec.role == "developer" else spec.role
        parts = spec.content if isinstance(spec.content, list) else [spec.content]
        texts: list[str] = []
        for part in parts:
            if isinstance(part, str):
                texts.append(part)
            elif part.type in ("input_text", "output_text") and part.text is not None:
                texts.append(part.text)
            else:
                raise ValueError(
                    f"{grader}: {part.type} content parts are not supported (openjudge's chat judges take text)"
                )
        self.template = Template("".join(texts))
        self.tags = frozenset(m.group(1).lower() for m in _TAG.finditer(self.template.literal_text()))

    def render(
        self, item: Mapping[str, JsonValue], sample: Mapping[str, JsonValue], tags: frozenset[str]
    ) -> dict[str, str]:
        escape = (lambda text: escape_tags(text, tags)) if tags else None
        return {"role": self.role, "content": self.template.render(item, sample, escape)}


class ModelJudge:
    """The judge call of one ``score_model`` or ``label_model`` grader (stateless after construction)."""

    def __init__(
        self, spec: ScoreModelSpec | LabelModelSpec, model: ChatModel, *, max_reasks: int = 1
    ) -> None:
        self.spec = spec
        self.model = model
        self.max_reasks = max_reasks
        self.messages = [_Message(m, spec.name) for m in spec.input]
        self.tags = frozenset().union(*(m.tags for m in self.messages))
        self.sampling = _sampling(spec.sampling_params)
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

    def render(self, item: Mapping[str, JsonValue], sample: Mapping[str, JsonValue]) -> list[dict[str, str]]:
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

    def _read(self, content: str) -> tuple[float, str, list[JsonValue]]:
        """(score, label or "", steps) from a reply; ValueError if it is not usable."""
        try:
            reply = json.loads(content)
        except ValueError:
            reply = extract_json_object(content)
        if not isinstance(reply, dict) or "result" not in reply:
            raise ValueError('the reply has no "result"')
        result = reply["result"]
        steps = reply.get("steps")
        steps_out: list[JsonValue] = steps if isinstance(steps, list) else []
        if isinstance(self.spec, LabelModelSpec):
            if not isinstance(result, str) or result not in self.spec.labels:
                raise ValueError(f'"result" must be one of {self.spec.labels}, got {result!r}')
            return (1.0 if result in self.spec.passing_labels else 0.0), result, steps_out
        if isinstance(result, bool) or not isinstance(result, int | float) or not math.isfinite(result):
            raise ValueError(f'"result" must be a number, got {result!r}')
        if not self.score_range.contains(float(result)):
            raise ValueError(
                f'"result" {result} is outside the range {_fmt(self.score_range.low)} to {_fmt(self.score_range.high)}'
            )
        return float(result), "", steps_out

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
                return GraderError(
                    name=name,
                    kind=exc.kind,
                    message=f"model_grader_server_error: {exc.message}",
                    error_type=exc.error_type,
                    usage=spent if usage is None else usage + spent,
                    latency_s=latency_s or None,
                )
            usage = response.usage if usage is None else usage + response.usage
            latency_s += response.latency_s
            if response.finish_reason == "content_filter":
                await evict_unusable(self.model, response)
                return GraderError(
                    name=name,
                    kind="refused",
                    message="model_grader_refusal_error: the judge's reply was blocked by the content filter",
                    usage=usage,
                    latency_s=latency_s,
                )
            try:
                score, label, steps = self._read(response.content)
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
            }
            if label:
                metadata["label"] = label
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
