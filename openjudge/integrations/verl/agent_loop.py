"""``openjudge_tool_agent``: VERL's ``ToolAgentLoop`` that hands its trajectory to the graders.

VERL's ``ToolAgentLoop`` keeps the conversation it builds (assistant turns with
``tool_calls``, ``tool`` turns, the final answer) in a local ``AgentData`` and returns
only token ids, so a reward manager sees the decoded text with tool outputs mixed in.
This subclass exports the structured messages as the output's extra field
``openjudge/messages``. VERL forwards extra fields to the reward worker
(``tool_extra_fields``), where they become each sample's ``messages``; ``turn_scores``,
``tool_rewards`` and ``num_turns`` are forwarded as they are.

Select it for every prompt with::

    actor_rollout_ref.rollout.agent.default_agent_loop=openjudge_tool_agent

(or per row with an ``agent_name`` column). The ``verl.plugins`` entry point imports
this module in every VERL process, which registers the name.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from openjudge.integrations.verl._verl import INSTALL_HINT
from openjudge.integrations.verl.samples import AGENT_MESSAGES_FIELD, Tokenizer, plain

try:
    from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register
    from verl.experimental.agent_loop.tool_agent_loop import AgentData, AgentState, ToolAgentLoop
except ImportError as exc:  # pragma: no cover - exercised only where verl is absent
    raise ImportError(
        f"openjudge_tool_agent needs VERL's agent loop (VERL >= 0.9).\n{INSTALL_HINT}\n({exc})"
    ) from exc

__all__ = ["AGENT_LOOP_NAME", "OpenJudgeToolAgentLoop"]

AGENT_LOOP_NAME = "openjudge_tool_agent"
"""The name to select (``actor_rollout_ref.rollout.agent.default_agent_loop``)."""


def _message(message: Any) -> dict[str, JsonValue]:
    """A plain copy of one chat message (tool-call arguments stay as VERL parsed them)."""
    out = dict(message)
    content = out.get("content")
    if isinstance(content, list):  # multimodal parts: keep the text, name the rest (no pixels)
        out["content"] = [
            part if not isinstance(part, dict) or part.get("type") == "text" else {"type": part.get("type")}
            for part in content
        ]
    return {str(k): plain(v) for k, v in out.items()}


class OpenJudgeToolAgentLoop(ToolAgentLoop):
    """``ToolAgentLoop`` plus ``extra_fields["openjudge/messages"]``: the structured trajectory.

    VERL builds one agent-loop object per trajectory, so keeping that trajectory's
    ``AgentData`` on the instance is safe.
    """

    _agent_data: AgentData | None = None

    async def _handle_pending_state(
        self, agent_data: AgentData, sampling_params: dict[str, Any]
    ) -> AgentState:
        self._agent_data = agent_data
        state: AgentState = await super()._handle_pending_state(agent_data, sampling_params)
        return state

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        output: AgentLoopOutput = await super().run(sampling_params, **kwargs)
        data = self._agent_data
        if data is not None:
            messages = [_message(m) for m in data.messages]
            assistant_turns = sum(1 for m in messages if m.get("role") == "assistant")
            if assistant_turns < data.assistant_turns and data.response_ids:
                # ToolAgentLoop stops at the length or turn limit before it appends that last
                # generation to its messages; the graders must still see the final answer.
                tokenizer: Tokenizer = self.tokenizer  # type: ignore[assignment]  # VERL annotates the AutoTokenizer class
                text = tokenizer.decode(data.response_ids, skip_special_tokens=True)
                messages.append({"role": "assistant", "content": str(text)})
            output.extra_fields[AGENT_MESSAGES_FIELD] = messages
        return output


register(AGENT_LOOP_NAME)(OpenJudgeToolAgentLoop)
