"""Small helpers shared by these tests: a judge on the tiny model, its grader, probes.

llguidance is part of the test install (the ``transformers`` extra is in scripts/_pip.sh's
TEST_EXTRAS), so constrained decoding is tested, never skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.policy import ProviderLimits, ProviderPolicy, RetryPolicy
from openjudge.providers.transformers import TransformersChatModel

ForwardHook = Callable[[TransformersChatModel, Callable[[], None]], None]
"""The ``forward_hooks`` fixture: install a function to run before every forward pass."""

TEMPLATE = "Question: {question}\nAnswer: {answer}\nScore the answer from 1 to 5."


def direct(
    path: Path, response: str, prompt: str | None = None, messages: Sequence[Mapping[str, Any]] | None = None
) -> float:
    """The reward by hand: the unpadded sequence through the model, head output at the last token."""
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    if messages is None and prompt is None:
        ids = tokenizer(response)["input_ids"]
    else:
        conversation = [dict(m) for m in messages or [{"role": "user", "content": prompt}]]
        ids = tokenizer.apply_chat_template(
            [*conversation, {"role": "assistant", "content": response}],
            return_dict=False,
        )
    with torch.no_grad():
        return float(model(torch.tensor([list(ids)])).logits[0, 0])


def direct_reward(path: Path, prompt: str, response: str) -> float:
    """:func:`direct` for ``[user: prompt, assistant: response]`` (the config tests' argument order)."""
    return direct(path, response, prompt=prompt)


def judge(path: Path, **options: Any) -> TransformersChatModel:
    """The tiny judge on CPU, 16 new tokens at most (enough for its verdict)."""
    options.setdefault("device", "cpu")
    options.setdefault("max_new_tokens", 16)
    return TransformersChatModel(str(path), **options)


def grader(model: TransformersChatModel, **options: Any) -> LLMGrader:
    return LLMGrader(model, template=TEMPLATE, score_range=(1, 5), **options)


def no_retries(max_concurrency: int = 64, timeout_s: float = 120.0) -> ProviderPolicy:
    return ProviderPolicy(
        timeout_s=timeout_s,
        retry=RetryPolicy(max_attempts=1),
        limits=ProviderLimits(max_concurrency=max_concurrency),
    )


def count_generate_calls(model: TransformersChatModel) -> list[int]:
    """Wrap the loaded model's ``generate``; the list collects each call's batch size."""
    loaded = model.local_model.load()
    original: Callable[..., Any] = loaded.model.generate  # type: ignore[assignment]  # GenerationMixin's
    sizes: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        sizes.append(int(kwargs["input_ids"].shape[0]))
        return original(*args, **kwargs)

    loaded.model.generate = counting  # type: ignore[assignment]  # instrumenting the instance
    return sizes


async def until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` on the event loop (bounded: a stuck test fails instead of hanging)."""
    with anyio.fail_after(30):
        while True:
            if condition():
                return
            await anyio.sleep(0.002)
