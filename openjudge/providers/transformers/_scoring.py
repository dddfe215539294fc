"""Batched forward passes of a sequence-classification (reward) model.

A reward model such as Skywork-Reward or ArmoRM is a ``*ForSequenceClassification``
checkpoint: one forward pass over the templated conversation, and the head's output at
the last token is the reward (one value per label). :class:`Scorer` encodes each request
(a request that cannot be encoded fails alone), left-pads the batch, runs one forward
pass and returns each row's head output as floats.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import torch

from openjudge.errors import ContextOverflow
from openjudge.providers.transformers._errors import InferenceError
from openjudge.providers.transformers._loading import LoadedModel
from openjudge.providers.transformers._requests import ScoreRequest

__all__ = ["Scorer", "Scores"]


@dataclass(frozen=True, slots=True)
class Scores:
    """The head's output for one request (one value per label) and the tokens it read."""

    values: tuple[float, ...]
    prompt_tokens: int


class Scorer:
    """Runs batches of :class:`ScoreRequest` on one loaded classification model."""

    def __init__(self, loaded: LoadedModel) -> None:
        self.loaded = loaded

    def encode(self, request: ScoreRequest) -> list[int]:
        """The input's token ids.

        Raises:
            InferenceError: No chat template for a conversation, or too long (``invalid_input``).
        """
        if request.messages is not None:
            ids = self.loaded.chat_ids(
                request.messages,
                add_generation_prompt=False,
                what="conversation",
                without_template=" to format the conversation; set chat_template in the provider's "
                "settings, or score the response alone",
            )
        else:
            tokenizer = self.loaded.tokenizer
            ids = [int(i) for i in cast("list[int]", tokenizer(request.text or "")["input_ids"])]
        limit = self.loaded.max_input_tokens
        if limit is not None and len(ids) > limit:
            raise InferenceError(
                f"{self.loaded.name}: the input has {len(ids)} tokens, more than the model's {limit}",
                kind="invalid_input",
                error_type="InputTooLong",
                context_overflow=ContextOverflow(limit, len(ids), 0),
            )
        if not ids:
            raise InferenceError(
                "nothing to score: the input is empty", kind="invalid_input", error_type="EmptyInput"
            )
        return ids

    def run(self, requests: Sequence[ScoreRequest]) -> list[Scores | BaseException]:
        """One result (or a per-request error) per request; raises if the forward pass fails."""
        outcomes: dict[int, Scores | BaseException] = {}
        runnable: list[tuple[int, list[int]]] = []
        for index, request in enumerate(requests):
            try:
                runnable.append((index, self.encode(request)))
            except InferenceError as exc:
                outcomes[index] = exc
        if runnable:
            rows = self.forward([ids for _, ids in runnable])
            for (index, ids), values in zip(runnable, rows, strict=True):
                if all(math.isfinite(v) for v in values):
                    outcomes[index] = Scores(values, len(ids))
                else:  # e.g. float16 overflow: never let it become a score
                    outcomes[index] = InferenceError(
                        f"{self.loaded.name}: the model's output is not finite ({list(values)}); "
                        "try dtype: float32 or bfloat16",
                        error_type="NonFiniteOutput",
                    )
        return [outcomes[i] for i in range(len(requests))]

    def forward(self, batch: Sequence[list[int]]) -> list[tuple[float, ...]]:
        """The head's output for each (unpadded) token-id list, in one left-padded forward pass."""
        loaded = self.loaded
        width = max(len(ids) for ids in batch)
        pad = loaded.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in batch], device=loaded.device)
        attention = torch.tensor(
            [[0] * (width - len(ids)) + [1] * len(ids) for ids in batch], device=loaded.device
        )
        with torch.inference_mode():
            logits = loaded.model(input_ids=input_ids, attention_mask=attention).logits
        values = logits.float().cpu().tolist()
        return [tuple(float(v) for v in row) for row in values]
