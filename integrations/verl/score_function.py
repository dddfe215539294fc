"""An async ``compute_score`` for VERL's own ``naive`` (or ``rate_limited``) reward manager.

::

    reward.custom_reward_function.path=pkg://integrations.verl
    reward.custom_reward_function.name=compute_score
    +reward.custom_reward_function.reward_kwargs.openjudge.config=/abs/graders.yaml

VERL passes ``reward_kwargs`` on every call; the graders are built once per process.
The naive manager does not pass the prompt: graders see ``response``, ``ground_truth``,
``data_source``, ``extra_info`` and ``messages`` (the response as one assistant message).
Use :class:`~integrations.verl.OpenJudgeRewardManager` when graders need the prompt.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue

from integrations.verl.functions import ExtraValue
from integrations.verl.scoring import shared_scorer
from integrations.verl.settings import OpenJudgeVerlSettings, read_settings

__all__ = ["compute_score"]


def _plain(value: object) -> JsonValue:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and not isinstance(value, Mapping):
        try:
            return _plain(item())
        except (TypeError, ValueError):
            pass
    tolist = getattr(value, "tolist", None)  # numpy arrays
    if callable(tolist):
        return _plain(tolist())
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


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
        **kwargs: Other arguments VERL passes (``reward_router_address``, ...); ignored.

    Returns:
        ``{"score": reward, **reward_extra_info}``: VERL's naive manager takes ``score``
        as the reward and every key as extra info (the same keys for every sample).
    """
    scorer = shared_scorer(
        read_settings(openjudge, where="reward.custom_reward_function.reward_kwargs.openjudge")
    )
    sample: dict[str, JsonValue] = {
        "response": solution_str,
        "messages": [{"role": "assistant", "content": solution_str}],
        "data_source": data_source,
        "extra_info": _plain(extra_info) if extra_info is not None else {},
    }
    if ground_truth is not None:
        sample["ground_truth"] = _plain(ground_truth)
    scored = await scorer.score(sample)
    return {"score": scored.reward, **scored.extra}
