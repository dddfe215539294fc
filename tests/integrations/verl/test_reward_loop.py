"""``OpenJudgeRewardManager`` on VERL 0.9.1 without Ray: VERL's own loader, real batches, a faulty HTTP judge."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from verl import DataProto
from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
from verl.trainer.ppo.reward import load_reward_manager

from openjudge.integrations.verl import OpenJudgeRewardManager, RewardSample
from openjudge.integrations.verl._reward_loop import RewardLoopOutput
from openjudge.integrations.verl._settings import SettingsError
from tests.integrations.verl.guide_functions import LengthRank
from tests.integrations.verl.helpers import (
    FALLBACK,
    FALLBACK_OPTIONS,
    FAULT_KINDS,
    FAULT_PROMPTS,
    FAULT_REWARDS,
    Prompt,
    importlib_overrides,
    make_batch,
    make_tokenizer,
    nonzero_only_at_last_token,
    trainer_config,
    words_of,
)

pytestmark = pytest.mark.slow  # VERL's own managers on real batches (seconds per test)

TOKENIZER = make_tokenizer(words_of(FAULT_PROMPTS, ["extra", "words"]))


async def run_all(manager: OpenJudgeRewardManager, data: DataProto) -> list[RewardLoopOutput]:
    """What ``RewardLoopWorker.compute_score_batch`` does: one task per row, gathered."""
    return list(await asyncio.gather(*(manager.run_single(data[i : i + 1]) for i in range(len(data)))))


@pytest.fixture(scope="module")
def manager(graders_yaml: Path) -> OpenJudgeRewardManager:
    cfg = trainer_config(importlib_overrides(graders_yaml, *FALLBACK_OPTIONS))
    loaded = load_reward_manager(cfg, TOKENIZER, reward_router_address=None, reward_model_tokenizer=None)
    assert isinstance(loaded, OpenJudgeRewardManager)
    return loaded


def test_scores_through_verls_loader_with_failing_judge_calls(manager: OpenJudgeRewardManager) -> None:
    data = make_batch(TOKENIZER, FAULT_PROMPTS)
    outs = asyncio.run(run_all(manager, data))
    assert [o["reward_score"] for o in outs] == FAULT_REWARDS
    extras = [o["reward_extra_info"] for o in outs]
    keys = [list(e) for e in extras]
    assert all(k == keys[0] for k in keys)  # identical keys even where the judge failed
    assert keys[0] == [
        "openjudge/correct",
        "openjudge/correct/error",
        "openjudge/correct/error_kind",
        "openjudge/quality",
        "openjudge/quality/error",
        "openjudge/quality/error_kind",
        "openjudge/total",
        "openjudge/total/error",
        "openjudge/total/error_kind",
        "openjudge/reward",
        "openjudge/failed",
    ]
    kinds = [e["openjudge/quality/error_kind"] for e in extras]
    assert kinds == FAULT_KINDS
    failed = [e["openjudge/failed"] for e in extras]
    assert failed == [0.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    quality = [e["openjudge/quality"] for e in extras]
    assert quality == [3.0, 3.0, 0.0, 0.0, 3.0, 0.0]  # a failure is 0.0 and flagged, never None
    assert [e["openjudge/quality/error"] for e in extras] == failed
    assert [e["openjudge/reward"] for e in extras] == FAULT_REWARDS

    rm = OpenJudgeRewardManager.assemble_rm_scores(data, [o["reward_score"] for o in outs])
    assert rm.shape == data.batch["responses"].shape
    assert nonzero_only_at_last_token(rm, data)
    lengths = data.batch["attention_mask"][:, data.batch["prompts"].shape[-1] :].sum(-1).tolist()
    assert lengths == [3, 2, 3, 3, 3, 2]  # "[EOS]" is a valid token; a directive is one token
    assert [float(rm[i, lengths[i] - 1]) for i in range(len(data))] == FAULT_REWARDS


def test_driven_from_other_loops_than_the_one_it_was_built_in(manager: OpenJudgeRewardManager) -> None:
    data = make_batch(TOKENIZER, [FAULT_PROMPTS[0]])  # the fixture was built outside any loop
    first = asyncio.run(run_all(manager, data))
    second = asyncio.run(run_all(manager, data))  # a new loop: clients and limits follow it
    third = asyncio.new_event_loop().run_until_complete(run_all(manager, data))
    assert [o["reward_score"] for o in first] == [o["reward_score"] for o in second] == [0.75, 0.25, FALLBACK]
    assert [o["reward_score"] for o in third] == [0.75, 0.25, FALLBACK]


def test_decodes_exactly_as_verls_naive_manager(graders_yaml: Path) -> None:
    seen: list[tuple[str, object, str]] = []

    def record(
        data_source: str, solution_str: str, ground_truth: object, extra_info: object, **kw: object
    ) -> float:
        seen.append((solution_str, ground_truth, data_source))
        return 0.0

    data = make_batch(TOKENIZER, FAULT_PROMPTS)
    captured: list[tuple[str, object, str]] = []

    class Recorder(LengthRank):
        async def compute_batch_scores(self, prompt_to_samples):  # type: ignore[no-untyped-def]  # override for the test
            for group in prompt_to_samples.values():
                captured.extend((s.response, s.ground_truth, str(s.data_source)) for s in group)
            return await super().compute_batch_scores(prompt_to_samples)

    async def main() -> None:
        naive = NaiveRewardManager(None, TOKENIZER, record)  # type: ignore[no-untyped-call]  # VERL leaves it unannotated
        ours = OpenJudgeRewardManager(None, TOKENIZER, Recorder())
        for i in range(len(data)):
            await naive.run_single(data[i : i + 1])
            await ours.run_single(data[i : i + 1])

    asyncio.run(main())
    assert captured == seen
    assert seen[0] == ("answer 4", "4", "demo")  # [EOS] skipped as a special token


def test_maps_prompt_messages_uid_and_extra_info() -> None:
    prompt = Prompt("what is 2+2 ?", "4", ["answer 4"], data_source="math", extra_info={"level": 2})
    data = make_batch(TOKENIZER, [prompt])
    captured: list[dict[str, object]] = []

    class Capture(LengthRank):
        async def compute_batch_scores(self, prompt_to_samples):  # type: ignore[no-untyped-def]  # override for the test
            for group in prompt_to_samples.values():
                captured.extend(s.grader_sample() for s in group)
            return await super().compute_batch_scores(prompt_to_samples)

    out = asyncio.run(OpenJudgeRewardManager(None, TOKENIZER, Capture()).run_single(data))
    assert out == {"reward_score": 1.0, "reward_extra_info": {"length": 8, "group_size": 1}}
    assert captured == [
        {
            "prompt": "what is 2+2 ?",
            "prompt_text": "what is 2+2 ?",
            "prompt_messages": [{"role": "user", "content": "what is 2+2 ?"}],
            "response": "answer 4",
            "messages": [
                {"role": "user", "content": "what is 2+2 ?"},
                {"role": "assistant", "content": "answer 4"},
            ],
            "extra_info": {"level": 2},
            "prompt_length": 4,
            "response_length": 2,
            "ground_truth": "4",
            "data_source": "math",
            "uid": str(data.non_tensor_batch["uid"][0]),
        }
    ]


def test_a_dataset_messages_column_is_not_the_trajectory() -> None:
    prompt = Prompt("what is 2+2 ?", "4", ["answer 4"])
    dataset_messages: list[list[dict[str, object]]] = [[{"role": "user", "content": "an unrelated column"}]]
    data = make_batch(TOKENIZER, [prompt], messages=dataset_messages)
    captured: list[RewardSample] = []

    class Capture(LengthRank):
        async def compute_batch_scores(self, prompt_to_samples):  # type: ignore[no-untyped-def]  # override for the test
            captured.extend(s for group in prompt_to_samples.values() for s in group)
            return await super().compute_batch_scores(prompt_to_samples)

    asyncio.run(OpenJudgeRewardManager(None, TOKENIZER, Capture()).run_single(data))
    assert captured[0].messages == [
        {"role": "user", "content": "what is 2+2 ?"},
        {"role": "assistant", "content": "answer 4"},
    ]


def test_several_rows_score_the_last_one(manager: OpenJudgeRewardManager) -> None:
    data = make_batch(TOKENIZER, [FAULT_PROMPTS[0]])  # VERL 0.8+ multi-output trajectories
    out = asyncio.run(manager.run_single(data[0:2]))
    assert out["reward_score"] == 0.25  # row 1 ("answer 5"), not row 0


def test_accepts_what_verl_passes_positionally_and_future_keywords(graders_yaml: Path) -> None:
    cfg = trainer_config(importlib_overrides(graders_yaml))
    positional = OpenJudgeRewardManager(cfg, TOKENIZER, None, None, None)  # VERL 0.7.0's RewardLoopWorker
    keywords = OpenJudgeRewardManager(
        config=cfg,
        tokenizer=TOKENIZER,
        compute_score=None,
        reward_router_address=None,
        reward_model_tokenizer=None,
        something_new=1,
    )
    assert positional.scorer is keywords.scorer  # graders, providers and limits shared in the process


def test_verl_0_7_0_options_under_reward_model_reward_kwargs(graders_yaml: Path) -> None:
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"reward_model": {"reward_kwargs": {"openjudge": {"config": str(graders_yaml)}}}})
    manager = OpenJudgeRewardManager(cfg, TOKENIZER, None, None, None)  # 0.7.0's positional construction
    assert manager.scorer is not None and manager.scorer.aggregate == "total"
    out = asyncio.run(manager.run_single(make_batch(TOKENIZER, [FAULT_PROMPTS[0]])[0:1]))
    assert out["reward_score"] == 0.75


def test_guide_reward_function_through_verls_custom_function_loader(graders_yaml: Path) -> None:
    cfg = trainer_config(
        [
            "reward.reward_manager.source=importlib",
            "reward.reward_manager.module.path=pkg://openjudge.integrations.verl",
            "reward.reward_manager.name=OpenJudgeRewardManager",
            "reward.custom_reward_function.path=pkg://tests.integrations.verl.guide_functions",
            "reward.custom_reward_function.name=length_rank",
        ]
    )
    manager = load_reward_manager(cfg, TOKENIZER)
    assert isinstance(manager, OpenJudgeRewardManager) and manager.scorer is None
    data = make_batch(TOKENIZER, [FAULT_PROMPTS[0]])
    outs = asyncio.run(run_all(manager, data))
    assert [o["reward_score"] for o in outs] == [1.0, 1.0, 1.0]  # groups of one on the reward loop


def test_no_configuration_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENJUDGE_VERL_CONFIG", raising=False)
    with pytest.raises(SettingsError, match=r"\+reward\.openjudge\.config="):
        OpenJudgeRewardManager(trainer_config([]), TOKENIZER, None)
    with pytest.raises(SettingsError, match="use one"):
        OpenJudgeRewardManager(None, TOKENIZER, LengthRank(), openjudge={"config": "x.yaml"})
