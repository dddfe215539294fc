"""TrajectoryComprehensiveGrader: an LLM judges every tool-call step of a trajectory.

Each step gets four integer scores from 1 to 5 (contribution, relevance, accuracy,
efficiency). As in OpenJudge 0.2.4, the score is the mean of the four per-dimension
averages, mapped from [1, 5] to [0, 1]. Unlike it, tool calls are written out one per
line (no Python list repr in the prompt), a trajectory without tool calls is an
``invalid_input`` error rather than a call, and an empty or malformed evaluation is
re-asked and then a ``parse_error``, never a silent 0.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.chat_model import ChatModel, ChatResponse, Sampling
from openjudge.models.schema.oai.message import ChatMessage
from openjudge.models.schema.prompt_template import LanguageEnum, PromptTemplate
from openjudge.results import GraderError, GraderMode, GraderResult, GraderScore, ScoreRange, TokenUsage

__all__ = ["StepEvaluation", "TrajectoryComprehensiveGrader", "TrajectoryEvaluationOutput"]

_DIMENSIONS = ("contribution_score", "relevance_score", "accuracy_score", "efficiency_score")

PROMPT_EN = """Evaluate how well an AI agent's tool-calling trajectory served the user's query.

For EVERY tool-call step (numbered from 0), give four integer scores from 1 (poor) to 5 (excellent):
- contribution_score: how much the step moved the task toward a correct final answer;
- relevance_score: how relevant the call was to the query at that point;
- accuracy_score: whether the tool and its arguments were correct, and the result used correctly;
- efficiency_score: whether the step was necessary (not redundant or wasteful).
Give a one-sentence step_reason per step.

User query:
{query}

Trajectory:
{trajectory}

Final answer:
{final_answer}"""

PROMPT_ZH = """评估 AI 智能体的工具调用轨迹在多大程度上满足了用户的问题。

对每一个工具调用步骤（从 0 开始编号）给出四个 1（差）到 5（优）的整数分：
- contribution_score：该步骤对得出正确最终答案的贡献；
- relevance_score：该调用与当前问题的相关性；
- accuracy_score：工具与参数是否正确，结果是否被正确使用；
- efficiency_score：该步骤是否必要（无冗余、无浪费）。
每个步骤给出一句话的 step_reason。

用户问题：
{query}

轨迹：
{trajectory}

最终答案：
{final_answer}"""

TEMPLATE = PromptTemplate(
    messages={
        LanguageEnum.EN: [ChatMessage(role="user", content=PROMPT_EN)],
        LanguageEnum.ZH: [ChatMessage(role="user", content=PROMPT_ZH)],
    }
)

_LABELS = {
    LanguageEnum.EN: ("Step {k} - Assistant Tool Calls", "Tool Response ({name})", "Assistant", "User"),
    LanguageEnum.ZH: ("步骤 {k} - 助手工具调用", "工具返回 ({name})", "助手", "用户"),
}


class StepEvaluation(BaseModel):
    """The judge's scores for one tool-call step."""

    model_config = ConfigDict(extra="ignore")

    step_index: int = Field(ge=0)
    step_reason: str
    contribution_score: int = Field(ge=1, le=5)
    relevance_score: int = Field(ge=1, le=5)
    accuracy_score: int = Field(ge=1, le=5)
    efficiency_score: int = Field(ge=1, le=5)


class TrajectoryEvaluationOutput(BaseModel):
    """The judge's reply: one evaluation per tool-call step."""

    model_config = ConfigDict(extra="ignore")

    step_evaluations: list[StepEvaluation]


def _as_dict(message: Mapping[str, Any] | ChatMessage) -> Mapping[str, Any]:
    if isinstance(message, ChatMessage):
        return message.model_dump(exclude_none=True)
    if isinstance(message, Mapping):
        inner = message.get("message")
        return inner if isinstance(inner, Mapping) else message
    raise TypeError(f"messages must be dicts or ChatMessage objects, got {type(message).__name__}")


def _text(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, Mapping) and p.get("type", "text") == "text"
        )
    return json.dumps(content, ensure_ascii=False, default=str)


def _format_call(call: Mapping[str, Any]) -> str:
    call = call.get("tool_call", call) if isinstance(call.get("tool_call"), Mapping) else call
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    name = str(function.get("name", ""))
    raw = function.get("arguments", "")
    if isinstance(raw, str):
        try:
            arguments = json.dumps(json.loads(raw), ensure_ascii=False)
        except ValueError:
            arguments = raw
    else:
        arguments = json.dumps(raw, ensure_ascii=False, default=str)
    return f"  - {name}({arguments})"


def format_trajectory(
    messages: Sequence[Mapping[str, Any] | ChatMessage], language: LanguageEnum
) -> tuple[str, str, str, int]:
    """The query, the trajectory text, the final answer, and the number of tool-call steps."""
    rows = [m for m in (_as_dict(x) for x in messages) if m.get("role") != "system"]
    query = _text(rows[0].get("content")) if rows and rows[0].get("role") == "user" else ""
    final_answer = ""
    for m in reversed(rows):
        if m.get("role") == "assistant" and _text(m.get("content")).strip():
            final_answer = _text(m.get("content"))
            break
    step_label, tool_label, assistant_label, user_label = _LABELS[language]
    lines: list[str] = []
    steps = 0
    for m in rows[1:]:
        role = m.get("role")
        content = _text(m.get("content"))
        calls = m.get("tool_calls")
        if role == "assistant" and isinstance(calls, list) and calls:
            formatted = "\n".join(_format_call(c) for c in calls if isinstance(c, Mapping))
            lines.append(f"**{step_label.format(k=steps)}**:\n{formatted}")
            steps += 1
        elif role in ("tool", "function"):
            name = str(m.get("name", "") or "")
            lines.append(f"**{tool_label.format(name=name)}**: {content}")
        elif role == "assistant" and content.strip() and content != final_answer:
            lines.append(f"**{assistant_label}**: {content}")
        elif role == "user" and content.strip():
            lines.append(f"**{user_label}**: {content}")
    return query, "\n\n".join(lines), final_answer, steps


class TrajectoryComprehensiveGrader(LLMGrader):
    """Judge each tool-call step of an agent trajectory on four dimensions (score in [0, 1]).

    Args:
        model: The judge.
        template: Prompt override with ``{query}``, ``{trajectory}`` and ``{final_answer}``.
        language: Prompt language.
        resolution_threshold: ``is_resolved`` in metadata is ``score >= resolution_threshold``.
        sampling: Sampling overrides for the judge calls.
    """

    default_name = "trajectory_comprehensive"
    default_score_range = ScoreRange(low=0.0, high=1.0)

    def __init__(
        self,
        model: ChatModel,
        template: PromptTemplate | None = None,
        language: LanguageEnum = LanguageEnum.EN,
        resolution_threshold: float = 0.8,
        *,
        sampling: Sampling | None = None,
    ) -> None:
        super().__init__(
            model,
            name=self.default_name,
            mode=GraderMode.POINTWISE,
            language=language,
            description="Step-by-step LLM evaluation of an agent's tool-calling trajectory",
            template=template or TEMPLATE,
            structured_model=TrajectoryEvaluationOutput,
            sampling=sampling,
        )
        self.resolution_threshold = resolution_threshold

    # Narrower than LLMGrader's template-driven ``**inputs``: this grader builds its template
    # values from the messages, so it declares the inputs it really takes.
    async def aevaluate(  # type: ignore[override]
        self,
        *,
        messages: Sequence[Mapping[str, Any] | ChatMessage],
        query: str | None = None,
        response: str | None = None,
    ) -> GraderResult:
        prepared = self.prepare({"messages": messages, "query": query, "response": response})
        if isinstance(prepared, GraderError):
            return prepared
        return await self._judge(prepared)

    def prepare(self, inputs: Mapping[str, object]) -> list[dict[str, Any]] | GraderError:
        messages = inputs.get("messages")
        if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
            return GraderError(
                name=self.name, kind="invalid_input", message="messages: expected a list of chat messages"
            )
        try:
            found_query, trajectory, final_answer, steps = format_trajectory(messages, self.language)
        except (TypeError, AttributeError) as exc:
            return GraderError(
                name=self.name,
                kind="invalid_input",
                message=f"messages: {exc}",
                error_type=type(exc).__name__,
            )
        query = inputs.get("query") or found_query
        answer = inputs.get("response") or final_answer
        if not isinstance(query, str) or not query.strip():
            return GraderError(
                name=self.name,
                kind="invalid_input",
                message="messages: no user query (first non-system message)",
            )
        if steps == 0:
            return GraderError(
                name=self.name,
                kind="invalid_input",
                message="messages: the trajectory has no tool-call steps to evaluate",
            )
        return self.build_messages({"query": query, "trajectory": trajectory, "final_answer": answer})

    def to_result(
        self,
        verdict: BaseModel,
        response: ChatResponse,
        *,
        usage: TokenUsage | None = None,
        latency_s: float | None = None,
    ) -> GraderResult:
        if not isinstance(verdict, TrajectoryEvaluationOutput) or not verdict.step_evaluations:
            raise ValueError("step_evaluations must list one evaluation per tool-call step")
        steps = verdict.step_evaluations
        averages = {d: sum(getattr(s, d) for s in steps) / len(steps) for d in _DIMENSIONS}
        overall_raw = sum(averages.values()) / len(_DIMENSIONS)
        score = (min(5.0, max(1.0, overall_raw)) - 1.0) / 4.0
        metadata: dict[str, Any] = {f"avg_{d}": (v - 1.0) / 4.0 for d, v in averages.items()}
        metadata.update(
            step_evaluations=[s.model_dump() for s in steps],
            is_resolved=score >= self.resolution_threshold,
            resolution_threshold=self.resolution_threshold,
            evaluation_type="trajectory_comprehensive",
        )
        return GraderScore(
            name=self.name,
            score=score,
            reason="\n".join(f"Step {s.step_index}: {s.step_reason}" for s in steps),
            metadata=metadata,
            score_range=self.score_range,
            usage=usage,
            latency_s=latency_s,
        )
