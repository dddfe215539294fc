"""Test helpers: a tokenizer built in code (no downloads) and batches built as VERL's trainer builds them."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig
from tokenizers import Tokenizer, models, pre_tokenizers  # type: ignore[import-untyped]  # no py.typed
from transformers import PreTrainedTokenizerFast
from verl import DataProto

PAD, UNK, EOS = "[PAD]", "[UNK]", "[EOS]"


def make_tokenizer(words: Sequence[str]) -> PreTrainedTokenizerFast:
    """A whitespace word-level tokenizer over ``words`` (plus [PAD], [UNK], [EOS])."""
    vocab: dict[str, int] = {PAD: 0, UNK: 1, EOS: 2}
    for w in words:
        vocab.setdefault(w, len(vocab))
    model = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    model.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]  # transformers 5 leaves it unannotated
        tokenizer_object=model, pad_token=PAD, unk_token=UNK, eos_token=EOS
    )


@dataclass
class Prompt:
    """One prompt of a batch and the ``rollout.n`` responses to it."""

    text: str
    ground_truth: str
    responses: list[str]
    data_source: str = "demo"
    extra_info: dict[str, object] = field(default_factory=dict)


def words_of(prompts: Sequence[Prompt], extra: Sequence[str] = ()) -> list[str]:
    found: list[str] = list(extra)
    for p in prompts:
        found += p.text.split()
        for r in p.responses:
            found += r.split()
    return found


def make_batch(
    tokenizer: PreTrainedTokenizerFast,
    prompts: Sequence[Prompt],
    *,
    prompt_length: int = 8,
    response_length: int = 8,
    with_raw_prompt: bool = True,
    messages: Sequence[list[dict[str, object]]] | None = None,
) -> DataProto:
    """A batch as ``RayPPOTrainer`` builds it after rollout.

    Prompts are left-padded to ``prompt_length``, responses right-padded to
    ``response_length``; rows are interleaved by prompt (``repeat(n, interleave=True)``)
    and share the prompt's ``uid``; non-tensor columns are numpy object arrays.
    """
    pad = tokenizer.pad_token_id
    assert isinstance(pad, int)
    rows_p: list[list[int]] = []
    rows_r: list[list[int]] = []
    masks: list[list[int]] = []
    uids: list[str] = []
    sources: list[str] = []
    reward_models: list[dict[str, object]] = []
    extras: list[dict[str, object]] = []
    raw_prompts: list[list[dict[str, str]]] = []
    for p in prompts:
        uid = str(uuid.uuid4())
        pids = tokenizer.encode(p.text, add_special_tokens=False)
        assert len(pids) <= prompt_length, p.text
        for r in p.responses:
            rids = tokenizer.encode(r, add_special_tokens=False)
            assert len(rids) <= response_length, r
            rows_p.append([pad] * (prompt_length - len(pids)) + pids)
            rows_r.append(rids + [pad] * (response_length - len(rids)))
            masks.append(
                [0] * (prompt_length - len(pids))
                + [1] * len(pids)
                + [1] * len(rids)
                + [0] * (response_length - len(rids))
            )
            uids.append(uid)
            sources.append(p.data_source)
            reward_models.append({"ground_truth": p.ground_truth, "style": "rule"})
            extras.append(dict(p.extra_info))
            raw_prompts.append([{"role": "user", "content": p.text}])
    prompts_t = torch.tensor(rows_p)
    responses_t = torch.tensor(rows_r)
    attention = torch.tensor(masks)
    non_tensors: dict[str, np.ndarray] = {
        "uid": np.array(uids, dtype=object),
        "data_source": np.array(sources, dtype=object),
        "reward_model": np.array(reward_models, dtype=object),
        "extra_info": np.array(extras, dtype=object),
    }
    if with_raw_prompt:
        raw = np.empty(len(raw_prompts), dtype=object)
        for i, chat in enumerate(raw_prompts):
            raw[i] = np.array(chat, dtype=object)  # VERL keeps raw_prompt as an object array per row
        non_tensors["raw_prompt"] = raw
    if messages is not None:
        col = np.empty(len(messages), dtype=object)
        for i, m in enumerate(messages):
            col[i] = m
        non_tensors["messages"] = col
    data: DataProto = DataProto.from_dict(
        tensors={
            "prompts": prompts_t,
            "responses": responses_t,
            "input_ids": torch.cat([prompts_t, responses_t], dim=1),
            "attention_mask": attention,
            "position_ids": (attention.cumsum(-1) - 1).clamp(min=0),
        },
        non_tensors=non_tensors,
    )
    return data


def last_token_rewards(tensor: torch.Tensor, data: DataProto) -> list[tuple[int, float]]:
    """(index of the last valid response token, value there) for every row."""
    p = data.batch["prompts"].shape[-1]
    lengths = data.batch["attention_mask"][:, p:].sum(-1)
    return [(int(lengths[i]) - 1, float(tensor[i, int(lengths[i]) - 1])) for i in range(len(data))]


def nonzero_only_at_last_token(tensor: torch.Tensor, data: DataProto) -> bool:
    p = data.batch["prompts"].shape[-1]
    lengths = data.batch["attention_mask"][:, p:].sum(-1)
    mask = torch.zeros_like(tensor, dtype=torch.bool)
    mask[torch.arange(len(data)), lengths - 1] = True
    return bool((tensor[~mask] == 0).all())


GRADERS_YAML = """\
version: 1
providers:
  judge:
    kind: openai
    model: test-judge
    base_url: {base_url}
    api_key: sk-test
    timeout_s: {timeout_s}
    max_retries: 0                 # a hang costs one timeout (retries are tested with the providers)
    limits: {{max_concurrency: 32}}
graders:
  correct:
    type: string_match
    params: {{match_mode: contains}}
    mapper: {{response: response, reference: ground_truth}}
  quality:
    type: llm
    provider: judge
    params:
      template: "Question: {{question}}\\nAnswer: {{answer}}\\nScore 1 to 5."
      score_range: [1, 5]
    mapper: {{question: prompt, answer: response}}
aggregators:
  - type: weighted_mean
    name: total
    weights: {{correct: 1, quality: 1}}
"""


def write_graders_yaml(directory: Path, base_url: str, *, timeout_s: float = 2.0) -> Path:
    """The test graders: a rule (``correct``) and an HTTP LLM judge (``quality``), averaged as ``total``."""
    path = directory / "graders.yaml"
    path.write_text(GRADERS_YAML.format(base_url=base_url, timeout_s=timeout_s), encoding="utf-8")
    return path


EXPERIMENTAL_CONFIGS = {
    "one_step_off_ppo_trainer": "experimental/one_step_off_policy/config",
    "fully_async_ppo_trainer": "experimental/fully_async_policy/config",
}
"""VERL's experimental trainers' own configs (each composes ``ppo_trainer``), by name."""


def trainer_config(overrides: Sequence[str], name: str = "ppo_trainer") -> DictConfig:
    """VERL's real Hydra config ``name`` (``ppo_trainer``, or an experimental trainer's, see
    :data:`EXPERIMENTAL_CONFIGS`) with ``overrides`` (as on a training command)."""
    import verl
    from hydra import compose, initialize_config_dir

    root = Path(verl.__file__).parent
    config_dir = str(root / EXPERIMENTAL_CONFIGS.get(name, "trainer/config"))
    # one_step_off's YAML finds ppo_trainer through a path relative to a VERL checkout (file://verl/...)
    search = ["hydra.searchpath=[pkg://verl.trainer.config]"] if name in EXPERIMENTAL_CONFIGS else []
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        cfg: DictConfig = compose(name, overrides=[*search, *overrides])
    return cfg


def importlib_overrides(graders: Path, *extra: str) -> list[str]:
    """The documented importlib route (VERL 0.7.1+), plus our options."""
    return [
        "reward.reward_manager.source=importlib",
        "reward.reward_manager.module.path=pkg://openjudge.integrations.verl",
        "reward.reward_manager.name=OpenJudgeRewardManager",
        f"+reward.openjudge.config={graders}",
        *extra,
    ]


# Responses carry judge-server directives: the LLM judge fails on some of them.
FAULT_PROMPTS = [
    Prompt("what is 2+2 ?", "4", ["answer 4 [EOS]", "answer 5", "maybe 4 #oj:status=503"]),
    Prompt("what is 3+3 ?", "6", ["answer 6 #oj:reply=prose", "answer 7 [EOS]", "6 #oj:hang"]),
]
FALLBACK = -1.0
FALLBACK_OPTIONS = ["+reward.openjudge.on_failure=fallback", f"+reward.openjudge.fallback_score={FALLBACK}"]
# correct (contains the ground truth) and quality 3 of 1..5 (normalised 0.5), averaged; or the fallback.
FAULT_REWARDS = [0.75, 0.25, FALLBACK, FALLBACK, 0.25, FALLBACK]
FAULT_KINDS = ["", "", "provider_error", "parse_error", "", "timeout"]


def unpack(out: dict[str, object]) -> tuple[torch.Tensor, dict[str, list[object]]]:
    """A legacy ``__call__(data, return_dict=True)`` result, checked and typed."""
    assert set(out) == {"reward_tensor", "reward_extra_info"}
    tensor, extra = out["reward_tensor"], out["reward_extra_info"]
    assert isinstance(tensor, torch.Tensor) and tensor.dtype == torch.float32
    assert isinstance(extra, dict) and all(isinstance(v, list) for v in extra.values())
    return tensor, extra


def stop_actors(handles: Sequence[Any], names: Sequence[str] = ()) -> None:
    """Kill ``handles`` and wait (at most 60 s) until the actors named ``names`` are gone."""
    import ray

    for handle in handles:
        ray.kill(handle, no_restart=True)
    deadline = time.monotonic() + 60
    for name in names:
        while time.monotonic() < deadline:
            try:
                ray.get_actor(name)
            except ValueError:
                break
            time.sleep(0.1)
