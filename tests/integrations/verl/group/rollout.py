"""A scripted rollout server for VERL's agent loop, and the tiny model directory it needs.

``ScriptedRollout`` stands in for VERL's ``LLMServerClient`` (the agent loop calls its
``generate``). The k-th request for a prompt answers ``answer q<k>`` after ``0.02 * k``
seconds (varied latency, distinct qualities); for a prompt containing ``fail`` the second
request raises, as a crashed generation would. Ray pickles it into each agent-loop worker.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from transformers import LlamaConfig, PreTrainedTokenizerFast
from verl.workers.rollout.replica import TokenOutput

from tests.integrations.verl.helpers import make_tokenizer

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> {% endfor %}"
    "{% if add_generation_prompt %}<|im_start|> assistant {% endif %}"
)
WORDS = [
    "<|im_start|>",
    "<|im_end|>",
    "system",
    "user",
    "assistant",
    "answer",
    *(f"q{k}" for k in range(10)),
    *["what", "is", "2+2", "3+3", "4+4", "5+5", "6+6", "?", "fail", "#hang"],
]


def tokenizer() -> PreTrainedTokenizerFast:
    tok = make_tokenizer(WORDS)
    tok.chat_template = CHAT_TEMPLATE
    return tok


def model_dir(path: Path) -> Path:
    """A tokenizer and a (weightless) model config, as ``actor_rollout_ref.model.path`` needs."""
    tokenizer().save_pretrained(str(path))
    # llama: no model-specific Continuous Token builder, so VERL uses its generic one.
    LlamaConfig(
        vocab_size=len(WORDS) + 3,
        hidden_size=8,
        intermediate_size=16,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        architectures=["LlamaForCausalLM"],
    ).save_pretrained(str(path))
    return path


class ScriptedRollout:
    """See the module docstring."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[int, ...]] = Counter()
        self._tokenizer: PreTrainedTokenizerFast | None = None

    async def generate(
        self, request_id: str, prompt_ids: list[int], sampling_params: dict[str, object], **kwargs: object
    ) -> TokenOutput:
        if self._tokenizer is None:
            self._tokenizer = tokenizer()
        tok = self._tokenizer
        key = tuple(prompt_ids)
        k = self.requests[key]
        self.requests[key] += 1
        await asyncio.sleep(0.02 * k)
        if k == 1 and "fail" in tok.decode(prompt_ids):
            raise RuntimeError("scripted generation failure")
        return TokenOutput(token_ids=[*tok.encode(f"answer q{k}"), tok.eos_token_id], log_probs=None)
