"""VERL's own agent loop on CPU: a byte tokenizer, a scripted rollout server, a fake tool.

VERL builds the reward rows here, not the tests: ``AgentLoopWorker`` (V0) and
``AgentLoopWorkerTQ`` (V1) run their real code, with an ``LLMServerClient`` stand-in
that answers from a script instead of vLLM, and reward workers that are VERL's
``RewardLoopWorker`` (in process through :class:`LocalRewardHandle`, or Ray actors).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
from omegaconf import DictConfig
from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # type: ignore[import-untyped]  # no py.typed
from transformers import LlamaConfig, PreTrainedTokenizerFast
from verl import DataProto
from verl.workers.rollout.replica import TokenOutput

from tests.integrations.verl.helpers import trainer_config

CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}"
    "{% if m.get('tool_calls') %}{% for c in m['tool_calls'] %}"
    "<tool_call>{{ c['function'] | tojson }}</tool_call>{% endfor %}{% endif %}"
    "</{{ m['role'] }}>\n{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}"
)

TOOLS_PY = '''\
from verl.tools.function_tool import function_tool


@function_tool
def weather(city: str) -> str:
    """The weather in a city now.

    Args:
        city: The city.
    """
    return f"{city}: sunny, 22C"
'''


def byte_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level tokenizer (every text round-trips) with a small chat template."""
    vocab = {"<pad>": 0, "<eos>": 1}
    for ch in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab[ch] = len(vocab)
    model = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    model.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    model.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]  # transformers 5 leaves it unannotated
        tokenizer_object=model, pad_token="<pad>", eos_token="<eos>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def write_model_dir(directory: Path) -> Path:
    """What ``actor_rollout_ref.model.path`` needs: the tokenizer and a config (no weights)."""
    byte_tokenizer().save_pretrained(str(directory))
    LlamaConfig(
        vocab_size=300,
        hidden_size=8,
        intermediate_size=16,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        architectures=["LlamaForCausalLM"],
    ).save_pretrained(str(directory))
    (directory / "tools.py").write_text(TOOLS_PY, encoding="utf-8")
    return directory


def agent_config(model_dir: Path, overrides: Sequence[str] = (), trainer: str = "ppo_trainer") -> DictConfig:
    """VERL's ``trainer`` config (``ppo_trainer``, or an experimental trainer's) for an agent
    loop on ``model_dir`` with the weather tool."""
    return trainer_config(
        [
            f"actor_rollout_ref.model.path={model_dir}",
            "actor_rollout_ref.rollout.name=vllm",
            "actor_rollout_ref.rollout.prompt_length=256",
            "actor_rollout_ref.rollout.response_length=512",
            "actor_rollout_ref.rollout.multi_turn.format=hermes",
            f"actor_rollout_ref.rollout.multi_turn.function_tool_path={model_dir / 'tools.py'}",
            *overrides,
        ],
        trainer,
    )


def tool_call(name: str, **arguments: object) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


class ScriptedServer:
    """Stands in for VERL's ``LLMServerClient``: answers each request from ``script``.

    ``script(prompt_text)`` returns the next assistant text for that conversation;
    ``delay_s`` is how long each generation takes, ``capacity`` how many run at once
    (``None``: unbounded). (A plain class: Hydra, which builds the agent loop around it,
    would treat a dataclass as a config.)
    """

    def __init__(
        self, script: Callable[[str], str], *, delay_s: float = 0.0, capacity: int | None = None
    ) -> None:
        self.script = script
        self.tokenizer = byte_tokenizer()
        self.delay_s = delay_s
        self.capacity = capacity
        self._slots: asyncio.Semaphore | None = None  # made inside the running loop
        self.prompts: list[str] = []

    async def generate(self, *, request_id: str, prompt_ids: list[int], **kwargs: Any) -> TokenOutput:
        text = str(self.tokenizer.decode(prompt_ids))
        self.prompts.append(text)
        if self.capacity is not None:
            if self._slots is None:
                self._slots = asyncio.Semaphore(self.capacity)
            async with self._slots:
                await asyncio.sleep(self.delay_s)
        elif self.delay_s:
            await asyncio.sleep(self.delay_s)
        ids = self.tokenizer.encode(self.script(text), add_special_tokens=False)
        eos = self.tokenizer.eos_token_id
        assert isinstance(eos, int)
        return TokenOutput(token_ids=[*ids, eos], stop_reason="completed")


def weather_script(prompt: str) -> str:
    """Call the weather tool (twice in a row when asked "twice"), then answer."""
    wanted = 2 if "twice" in prompt else 1
    if prompt.count("<tool>") < wanted:
        return "Let me check." + tool_call("weather", city="Lyon" if "Lyon" in prompt else "Paris")
    return "It is sunny there."


class _Remote:
    def __init__(self, method: Callable[..., Any]) -> None:
        self._method = method

    def remote(self, *args: Any) -> Any:
        return self._method(*args)


class LocalRewardHandle:
    """A ``RewardLoopWorker`` in this process, called the way the agent loop calls the actor."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker
        self.compute_score = _Remote(worker.compute_score)


@dataclass
class Question:
    system: str
    user: str
    ground_truth: str
    data_source: str = "weather"


def dataset_batch(questions: Sequence[Question], *, n: int = 1) -> DataProto:
    """Prompts as VERL's dataset gives them to the agent loop, each repeated ``n`` times."""
    rows = [q for q in questions for _ in range(n)]
    raw = np.empty(len(rows), dtype=object)
    for i, q in enumerate(rows):
        raw[i] = [{"role": "system", "content": q.system}, {"role": "user", "content": q.user}]
    data: DataProto = DataProto.from_dict(
        non_tensors={
            "raw_prompt": raw,
            "uid": np.array([f"uid-{i // n}" for i in range(len(rows))], dtype=object),
            "index": np.array([i // n for i in range(len(rows))]),
            "data_source": np.array([q.data_source for q in rows], dtype=object),
            "reward_model": np.array([{"ground_truth": q.ground_truth} for q in rows], dtype=object),
            "extra_info": np.array([{"index": i // n} for i in range(len(rows))], dtype=object),
        }
    )
    return data


def agent_loop_worker(config: DictConfig, server: ScriptedServer, handles: Sequence[object]) -> Any:
    """VERL's V0 ``AgentLoopWorker`` with our stand-ins (typed as VERL's client and Ray handles)."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    return AgentLoopWorker(config, cast(Any, server), cast(Any, None), cast(Any, list(handles)))


def v1_agent_loop_worker(config: DictConfig, server: ScriptedServer, handles: Sequence[object] | None) -> Any:
    """VERL's V1 ``AgentLoopWorkerTQ`` (the class behind its ``@ray.remote``), in this process.

    ``handles=None``: no streaming reward (VERL's colocated reward-model path).
    """
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ

    cls = cast(Any, AgentLoopWorkerTQ).__ray_actor_class__
    return cls(config, server, None, None if handles is None else list(handles))
