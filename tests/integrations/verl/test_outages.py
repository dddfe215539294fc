"""Outage cases next to the per-mode runs of ``test_outages_trainers`` (VERL's own trainer loops).

Here, what those runs do not show: VERL's async buffer alone regenerates failed groups for
ever; the colocated reward path; a reward worker that cannot start; V0's neutral values.

The V1 trainers decide in their replay buffer's ``sample()``: VERL's own
``ReplayBuffer`` / ``ReplayBufferAsync`` (over the in-memory TransferQueue of
``fake_tq``) run here, fed as VERL's ``AgentLoopWorkerTQ._run_prompt`` feeds them: each
session's reward from ``OpenJudgeRewardManager.run_single``, VERL's own
``_settle_session_tasks``, then the prompt's ``finished`` / ``failure`` status. The V0
trainer and the colocated reward model decide in ``run_single`` itself (VERL gathers
them without ``return_exceptions``). One process: the ledger is the process's.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from omegaconf import OmegaConf

from openjudge.graders.llm_grader import LLMGrader
from openjudge.integrations.scoring._guard import FailureRateExceeded, SampleFailed
from openjudge.integrations.scoring._scorer import RewardScorer
from openjudge.integrations.verl._ledger import run_ledger
from openjudge.integrations.verl._reward_loop import OpenJudgeRewardManager
from openjudge.integrations.verl._settings import OpenJudgeVerlSettings
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel
from tests.integrations.verl import fake_tq
from tests.integrations.verl.helpers import Prompt, make_batch, make_tokenizer, trainer_config
from tests.integrations.verl.test_failure_policy import streaming_rows

pytestmark = pytest.mark.slow  # real VERL managers and trainers (seconds per test)

N = 2  # rollout.n
WINDOW = 8  # failure_window: a full outage stops the run after this many samples
PROMPT = Prompt("what is 2+2 ?", "4", ["answer 4", "answer 5"])
TOKENIZER = make_tokenizer(["what", "is", "2+2", "?", "answer", "4", "5"])


class Judge:
    """Down for the first ``down`` calls (``None``: for ever), then answers 4 of 1..5."""

    def __init__(self, down: int | None) -> None:
        self.down = down
        self.calls = 0

    def __call__(self, request: ChatRequest) -> str:
        self.calls += 1
        if self.down is None or self.calls <= self.down:
            raise ChatModelError(
                "judge.example: HTTP 503: overloaded", kind="provider_error", retryable=False
            )
        return json.dumps({"reason": "ok", "score": 4})


def reward_manager(judge: Judge, *overrides: str) -> OpenJudgeRewardManager:
    settings = OpenJudgeVerlSettings(config="x", failure_window=WINDOW, breaker_failures=0)
    model = FunctionChatModel(judge, model="judge", policy=ProviderPolicy(retry=RetryPolicy(max_attempts=1)))
    runner = GradingRunner(
        {"quality": GraderConfig(LLMGrader(model, template="{a}", score_range=(1, 5)), {"a": "response"})},
        show_progress=False,
    )
    policy = settings.failure_policy()
    describe = {"judge": "http://judge.example/v1, model 'judge'"}
    scorer = RewardScorer(
        runner,
        settings,
        grader_providers={"quality": "judge"},
        describe_providers=describe,
        ledger=run_ledger(policy, describe),
    )
    config = trainer_config([f"actor_rollout_ref.rollout.n={N}", *overrides])
    return OpenJudgeRewardManager(config, TOKENIZER, scorer=scorer)


class Rollout:
    """Submits prompts as VERL's trainer does and runs their sessions as ``AgentLoopWorkerTQ`` does."""

    def __init__(self, manager: OpenJudgeRewardManager, store: fake_tq.Store, limit: int = 50) -> None:
        self.manager, self.store, self.limit = manager, store, limit
        self.prompts = 0

    def refill(self, count: int) -> None:
        from verl.trainer.ppo.v1.agent_loop_tq import _settle_session_tasks

        for _ in range(count):
            self.prompts += 1
            if self.prompts > self.limit:
                raise RuntimeError(f"still regenerating after {self.limit} prompts")
            uid = f"p{self.prompts}"
            rows = streaming_rows(make_batch(TOKENIZER, [PROMPT]))

            async def run_prompt(uid: str = uid, rows: list[Any] = rows) -> str:
                async def session(s: int) -> None:
                    out = await self.manager.run_single(rows[s])
                    fields = {"extra_fields": {"reward_extra_info": out["reward_extra_info"]}}
                    self.store.put("train", f"{uid}_{s}_0", {"status": "success", "global_steps": 1}, fields)

                errors = await _settle_session_tasks([asyncio.create_task(session(s)) for s in range(N)])
                return "failure" if errors else "finished"

            status = asyncio.run(run_prompt())
            self.store.put("train", uid, {"is_prompt": True, "status": status, "global_steps": 1}, None)


@pytest.fixture
def store() -> Iterator[fake_tq.Store]:
    with fake_tq.installed() as s:
        yield s


def buffer(cls: type[Any], mode: str, refill: Callable[[int], None]) -> Any:
    return cls(  # the arguments VERL's trainer gives a sampler
        trainer_mode=mode,
        trainer_config=OmegaConf.create({}),
        max_off_policy_threshold=8,
        max_off_policy_strategy="drop",
        sampler_kwargs=OmegaConf.create({}),
        poll_interval=0.0,
        refill_fn=refill,
    )


ASYNC = ["trainer.v1.trainer_mode=colocate_async"]


def test_async_trainers_regenerate_for_ever_without_our_buffer(store: fake_tq.Store) -> None:
    from verl.trainer.ppo.v1.replay_buffer import ReplayBufferAsync

    rollout = Rollout(reward_manager(Judge(down=None), *ASYNC), store, limit=12)
    rollout.refill(2)
    with pytest.raises(RuntimeError, match="still regenerating after 12 prompts"):
        buffer(ReplayBufferAsync, "colocate_async", rollout.refill).sample(1, "train", 2)


def gather_v0(manager: OpenJudgeRewardManager, prompts: int) -> list[dict[str, Any]]:
    """V0's agent loop: every trajectory of the step at once, no ``return_exceptions``."""
    rows = [r for _ in range(prompts) for r in streaming_rows(make_batch(TOKENIZER, [PROMPT]))]

    async def step() -> list[dict[str, Any]]:
        return [dict(o) for o in await asyncio.gather(*(manager.run_single(r) for r in rows))]

    return asyncio.run(step())


def test_v0_passing_outage_is_neutral_not_an_error() -> None:
    passing = reward_manager(Judge(down=3), "trainer.use_v1=false")
    outs = gather_v0(passing, 2)  # no exception: the failed trajectories are neutral
    failed = [o["reward_extra_info"]["openjudge/failed"] for o in outs]
    assert sorted(failed) == [0.0, 1.0, 1.0, 1.0]  # which 3 calls fail first is the scheduler's choice
    survivors_group = failed.index(0.0) // N
    # The survivor's group-mate gets the group mean (0.75); the group with no survivor gets 0.0.
    assert [o["reward_score"] for o in outs] == pytest.approx(
        [0.75 if i // N == survivors_group else 0.0 for i in range(len(outs))]
    )


def test_colocated_outage_ends_the_step() -> None:
    down = reward_manager(
        Judge(down=None), "reward.reward_model.enable=true", "reward.custom_reward_function.path=x"
    )
    data = make_batch(TOKENIZER, [PROMPT] * (WINDOW // N + 1))

    async def batch() -> list[Any]:  # RewardLoopWorker.compute_score_batch
        return list(await asyncio.gather(*(down.run_single(data[i : i + 1]) for i in range(len(data)))))

    with pytest.raises(FailureRateExceeded):
        asyncio.run(batch())


def test_a_worker_that_cannot_start_stops_the_run_at_the_first_sample(store: fake_tq.Store) -> None:
    from openjudge.integrations.verl.sampler import OpenJudgeReplayBufferAsync

    config = trainer_config(["+reward.openjudge.config=/no/such/graders.yaml"])
    with pytest.raises(Exception, match=r"graders\.yaml"):
        OpenJudgeRewardManager(config, TOKENIZER)  # what each RewardLoopWorker does; VERL does not wait
    with pytest.raises(FailureRateExceeded, match=r"a reward worker could not start: .*graders\.yaml"):
        buffer(OpenJudgeReplayBufferAsync, "colocate_async", lambda n: None).sample(0, "val", 1)


def test_drop_on_v1_is_a_dropped_session_not_an_error(store: fake_tq.Store) -> None:
    manager = reward_manager(Judge(down=1), *ASYNC)
    rows = streaming_rows(make_batch(TOKENIZER, [PROMPT]))
    with pytest.raises(SampleFailed):
        asyncio.run(manager.run_single(rows[0]))
