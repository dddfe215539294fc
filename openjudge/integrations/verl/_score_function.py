"""An async ``compute_score`` for VERL's own ``naive`` (or ``rate_limited``) reward manager.

::

    reward.custom_reward_function.path=pkg://openjudge.integrations.verl
    reward.custom_reward_function.name=compute_score
    +reward.custom_reward_function.reward_kwargs.openjudge.config=/abs/graders.yaml

VERL passes ``reward_kwargs`` on every call; the graders are built once per process.
The naive manager passes no prompt tokens: graders see ``response``, ``ground_truth``,
``data_source`` and ``extra_info``. The naive manager merges the agent loop's extra fields
into ``extra_info``, so ``prompt`` / ``prompt_messages`` (from ``raw_prompt``) and the
structured ``messages`` of :class:`~openjudge.integrations.verl.agent_loop.OpenJudgeToolAgentLoop`
are available when the agent loop exported them; otherwise ``messages`` is the response
as one assistant message and there is no ``prompt``. Use
:class:`~openjudge.integrations.verl.OpenJudgeRewardManager` when graders need the prompt.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue

from openjudge.integrations.scoring._keys import ExtraValue
from openjudge.integrations.scoring._scorer import Placement
from openjudge.integrations.verl._hosted_judge import hosted_judge_from_verl
from openjudge.integrations.verl._scoring import shared_scorer
from openjudge.integrations.verl._settings import OpenJudgeVerlSettings, read_settings
from openjudge.integrations.verl.samples import build_sample, plain

__all__ = ["compute_score"]

_PLACEMENT = Placement(can_drop=True)
"""VERL's managers tell a function neither its path nor its group: a failure under ``drop``
raises (the V1 streaming path drops the trajectory; elsewhere VERL ends the step: use
:class:`~openjudge.integrations.verl.OpenJudgeRewardManager` there), under ``neutral`` it is 0.0."""

_UNKNOWN_WITHOUT_PROMPT = ("prompt", "prompt_text", "prompt_messages", "prompt_length", "response_length")


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: object,
    extra_info: Mapping[str, object] | None = None,
    *,
    openjudge: OpenJudgeVerlSettings | Mapping[str, object] | None = None,
    **kwargs: object,
) -> dict[str, ExtraValue]:
    """Grade one response with the graders YAML named by ``openjudge.config``.

    Args:
        data_source: The row's data source.
        solution_str: The decoded response.
        ground_truth: ``reward_model["ground_truth"]``.
        extra_info: The row's ``extra_info``.
        openjudge: Options (``reward_kwargs.openjudge``); default: ``OPENJUDGE_VERL_CONFIG``.
        **kwargs: Other arguments VERL passes: ``reward_router_address`` and
            ``reward_model_tokenizer`` (the judge VERL hosts: ``kind: verl`` providers
            call it); anything else is ignored.

    Returns:
        ``{"score": reward, **reward_extra_info}``: VERL's naive manager takes ``score``
        as the reward and every key as extra info (the same keys for every sample).
    """
    router = kwargs.get("reward_router_address")
    hosted = hosted_judge_from_verl(
        None, router if isinstance(router, str) else None, kwargs.get("reward_model_tokenizer")
    )
    scorer = shared_scorer(
        read_settings(openjudge, where="reward.custom_reward_function.reward_kwargs.openjudge"), hosted
    )
    info = plain(extra_info) if extra_info is not None else {}
    info = info if isinstance(info, dict) else {}
    fields: dict[str, JsonValue] = {
        "data_source": data_source,
        "reward_model": {"ground_truth": plain(ground_truth)},
        "extra_info": info,
        "tool_extra_fields": info,  # naive merged the agent loop's extra fields into extra_info
        "__num_turns__": info.get("num_turns"),
    }
    built = build_sample([], [], fields, prompt_text="", response=solution_str)
    sample = built.grader_sample()
    if not any(m.get("role") == "user" for m in built.prompt_messages if m.get("content")):
        for key in _UNKNOWN_WITHOUT_PROMPT:  # no prompt reached us: leave it absent, never empty
            sample.pop(key, None)
        if built.messages[:-1] == built.prompt_messages:
            sample["messages"] = [{"role": "assistant", "content": solution_str}]
    else:
        for key in ("prompt_text", "prompt_length", "response_length"):  # no tokens reached us
            sample.pop(key, None)
    if ground_truth is None:
        sample.pop("ground_truth", None)
    scored = await scorer.score(sample, _PLACEMENT)
    return {"score": scored.reward, **scored.extra}
