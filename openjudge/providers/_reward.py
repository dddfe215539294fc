"""What every reward-model provider does alike (vLLM's pooling endpoints, a local model).

Both score the same conversation for the same arguments (the
:class:`~openjudge.models.reward_model.RewardModel` protocol), and both pick the reward
from a row of per-label outputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openjudge.models._errors import ChatModelError
from openjudge.results import InvalidInputError

__all__ = ["labelled", "scored_conversation"]


def scored_conversation(
    response: str, *, prompt: str | None, messages: Sequence[Mapping[str, Any]] | None
) -> list[dict[str, Any]] | None:
    """``messages`` then the response, or ``[user: prompt, assistant: response]``.

    ``None`` when neither is given: the response alone is scored, as plain text.

    Raises:
        InvalidInputError: Both ``prompt`` and ``messages`` were given.
    """
    if prompt is not None and messages is not None:
        raise InvalidInputError("give either 'prompt' or 'messages', not both")
    if messages is not None:
        return [*(dict(m) for m in messages), {"role": "assistant", "content": response}]
    if prompt is not None:
        return [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
    return None


def labelled(row: Sequence[float], label_index: int, *, where: str) -> tuple[float, ...]:
    """``(row[label_index], *row)``: the reward, then the row it came from.

    Raises:
        ChatModelError: The row has no ``label_index`` (``LabelIndexError``, final).
    """
    if label_index >= len(row):
        raise ChatModelError(
            f"{where}: label_index={label_index} but the model returns {len(row)} value(s)",
            error_type="LabelIndexError",
        )
    return (row[label_index], *row)
