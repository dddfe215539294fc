"""Per-token log-probabilities of a batched ``generate``, and their token texts.

:class:`StepRecorder` runs as the last custom logits processor: it sees each step's
logits after the grammar mask and before temperature or top-p, so the recorded
distribution is the model's own, restricted to what the output schema allows. That is
what a logprob-weighted score needs: at the score token, the alternatives are exactly
the scores the judge could have written. Only the top ``k`` per step and the chosen
token's value are kept (a full vocabulary row per step would be gigabytes on a GPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers import LogitsProcessor, PreTrainedTokenizerBase

__all__ = ["StepRecorder", "TokenChoice", "decode", "token_pieces"]


@dataclass(frozen=True, slots=True)
class TokenChoice:
    """One generated token: its text, log-probability and the top alternatives."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


class StepRecorder(LogitsProcessor):
    """Records, per step and row, the chosen token's logprob and the top ``k`` alternatives."""

    def __init__(self, top_k: int) -> None:
        self.top_k = top_k
        self._previous: torch.Tensor | None = None
        self._chosen: list[torch.Tensor] = []
        self._top_values: list[torch.Tensor] = []
        self._top_ids: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        logprobs = torch.log_softmax(scores.float(), dim=-1)
        if self._previous is not None:
            # The token picked at the previous step is now the last column of input_ids.
            self._chosen.append(self._previous.gather(1, input_ids[:, -1:]).squeeze(1))
        self._previous = logprobs
        if self.top_k:
            values, ids = logprobs.topk(min(self.top_k, logprobs.shape[-1]), dim=-1)
            self._top_values.append(values)
            self._top_ids.append(ids)
        return scores

    def finish(self, sequences: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(chosen, top_values, top_ids)`` on CPU: (rows × steps), (rows × steps × k) twice."""
        if self._previous is not None:
            self._chosen.append(self._previous.gather(1, sequences[:, -1:]).squeeze(1))
            self._previous = None
        rows = sequences.shape[0]
        chosen = torch.stack(self._chosen, dim=1).cpu() if self._chosen else torch.zeros(rows, 0)
        if self._top_values:
            top_values = torch.stack(self._top_values, dim=1).cpu()
            top_ids = torch.stack(self._top_ids, dim=1).cpu()
        else:
            top_values = torch.zeros(rows, chosen.shape[1], 0)
            top_ids = torch.zeros(rows, chosen.shape[1], 0, dtype=torch.long)
        return chosen, top_values, top_ids


def decode(
    tokenizer: PreTrainedTokenizerBase, ids: Sequence[int], *, skip_special_tokens: bool = True
) -> str:
    """The text of ``ids`` (special tokens left out unless asked)."""
    text = tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)
    assert isinstance(text, str)  # one sequence in, one string out
    return text


def token_pieces(tokenizer: PreTrainedTokenizerBase, ids: Sequence[int]) -> list[str]:
    """Each token's share of ``decode(ids)``: the pieces concatenate to the decoded text.

    Decoding prefixes (rather than single tokens) keeps leading spaces and characters
    split over several byte tokens right; a piece that ends inside a character is empty
    and its bytes go to the token that completes it.
    """
    pieces: list[str] = []
    shown = ""
    for end in range(1, len(ids) + 1):
        text = decode(tokenizer, ids[:end])
        if text.endswith("\ufffd") and end < len(ids):
            pieces.append("")
            continue
        pieces.append(text[len(shown) :] if text.startswith(shown) else text)
        shown = text
    return pieces
