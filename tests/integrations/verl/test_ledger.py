"""One failure ledger for the run: every reward worker's samples count, breakers open for the cluster."""

from __future__ import annotations

import contextlib
import json

import anyio
import pytest

from openjudge.graders.llm_grader import LLMGrader
from openjudge.integrations.scoring._guard import FailureRateExceeded
from openjudge.integrations.scoring._ledger import GroupRewards, Ledger
from openjudge.integrations.scoring._scorer import RewardScorer
from openjudge.integrations.verl._ledger import actor_name, driver_view, run_ledger
from openjudge.integrations.verl._settings import FailurePolicy, OpenJudgeVerlSettings
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel


class Judge:
    def __init__(self) -> None:
        self.up = False
        self.calls = 0

    def __call__(self, request: ChatRequest) -> str:
        self.calls += 1
        if not self.up:
            raise ChatModelError("judge: HTTP 503: down", kind="provider_error", retryable=False)
        return json.dumps({"reason": "ok", "score": 5})


def worker(judge: Judge, ledger: Ledger, settings: OpenJudgeVerlSettings) -> RewardScorer:
    """One reward worker's scorer (its own runner and provider), reporting to the run's ledger."""
    model = FunctionChatModel(judge, model="j", policy=ProviderPolicy(retry=RetryPolicy(max_attempts=1)))
    runner = GradingRunner(
        {"q": GraderConfig(LLMGrader(model, template="{a}", score_range=(1, 5)), {"a": "response"})},
        show_progress=False,
    )
    return RewardScorer(runner, settings, grader_providers={"q": "judge"}, ledger=ledger)


def test_one_breaker_for_every_worker_and_one_probe() -> None:
    settings = OpenJudgeVerlSettings(
        config="x", breaker_failures=3, breaker_cooldown_s=0.01, max_failure_rate=None, on_failure="neutral"
    )
    ledger = Ledger(settings.failure_policy())
    judge = Judge()
    a, b = worker(judge, ledger, settings), worker(judge, ledger, settings)
    sample = {"response": "r"}
    for w in (a, b, a):  # three consecutive failures, on two workers
        assert anyio.run(w.score, sample).failed
    assert judge.calls == 3
    blocked = anyio.run(b.score, sample)  # worker b has seen two failures only, but the run has seen three
    assert blocked.extra["openjudge/q/error_kind"] == "circuit_open" and judge.calls == 3
    judge.up = True
    anyio.run(anyio.sleep, 0.02)  # the cooldown

    async def both() -> list[bool]:
        out: list[bool] = []

        async def one(w: RewardScorer) -> None:
            out.append((await w.score(sample)).failed)

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, a)
            tg.start_soon(one, b)
        return out

    assert sorted(anyio.run(both)) == [False, True]  # one probe for the cluster; the other still fails fast
    assert judge.calls == 4
    assert not anyio.run(a.score, sample).failed and not anyio.run(b.score, sample).failed


def test_the_failure_rate_is_the_run_s() -> None:
    settings = OpenJudgeVerlSettings(
        config="x", breaker_failures=0, failure_window=4, max_failure_rate=0.5, on_failure="neutral"
    )
    ledger = Ledger(settings.failure_policy())
    workers = [worker(Judge(), ledger, settings) for _ in range(4)]
    for w in workers[:3]:  # no worker alone has a full window
        anyio.run(w.score, {"response": "r"})
    assert ledger.problem_now() is None
    with pytest.raises(FailureRateExceeded):
        anyio.run(workers[3].score, {"response": "r"})
    message = ledger.problem_now()
    assert (
        message is not None
        and "4 of the last 4 samples failed" in message
        and "judge: 4 provider_error" in message
    )


def test_group_rewards_settle_when_the_group_is_in() -> None:
    groups = GroupRewards()
    groups.post("u", 1.0, {"openjudge/q": 5.0})
    groups.post("u", None)
    done, means = groups.settled("u", expected=3, deadline=float("inf"))
    assert not done and means.reward == 1.0 and means.scored == 1
    groups.post("u", 0.5, {"openjudge/q": 3.0})
    done, means = groups.settled("u", expected=3, deadline=float("inf"))
    assert done and means.reward == 0.75 and means.values == {"openjudge/q": 4.0}  # what GDPO reads, neutral


def test_a_group_with_nothing_scored_has_no_mean_until_every_member_is_in() -> None:
    now = [0.0]
    groups = GroupRewards(clock=lambda: now[0])
    groups.post("u", None)
    now[0] = 120.0  # quiet for two minutes: with a member scored the wait would end here
    done, means = groups.settled("u", expected=3, deadline=600.0)
    assert not done and means.scored == 0 and not means.known
    now[0] = 600.0
    done, means = groups.settled("u", expected=3, deadline=600.0)
    assert done and not means.known  # 0.0 here would not be its group's mean
    groups.post("u", None)
    groups.post("u", None)
    done, means = groups.settled("u", expected=3, deadline=float("inf"))
    assert done and means.known and means.reward == 0.0  # every member failed: equal rewards
    done, means = groups.settled("lost", expected=3, deadline=float("inf"))  # a restarted ledger's
    assert done and not means.known


def test_a_scored_member_ends_the_wait_after_a_quiet_minute() -> None:
    now = [0.0]
    groups = GroupRewards(clock=lambda: now[0])
    groups.post("u", None)
    groups.post("u", 0.5)
    now[0] = 61.0
    done, means = groups.settled("u", expected=3, deadline=600.0)
    assert done and means.known and means.reward == 0.5 and not means.complete


@pytest.mark.slow  # Ray
def test_the_named_actor_is_shared_by_every_process(ray_session: None) -> None:
    import ray

    policy = FailurePolicy(breaker_failures=0, failure_window=2, max_failure_rate=0.5)

    @ray.remote(num_cpus=0)
    def reward_worker(labels: list[str]) -> str | None:  # another process of the job
        async def report() -> str | None:
            return await run_ledger(policy, {"judge": "http://j/v1"}).record({"judge": True}, labels)

        return anyio.run(report)

    with contextlib.suppress(ValueError):  # an earlier test's reward workers may have started it
        ray.kill(ray.get_actor(actor_name()))
    run_ledger(
        policy, {"judge": "http://j/v1"}
    )  # owned by the driver here; by the first reward worker in VERL
    try:
        assert ray.get(reward_worker.remote(["judge: timeout"])) is None
        assert ray.get(reward_worker.remote(["judge: timeout"])) is not None
        problem, counts = driver_view()  # the driver, as the replay buffer reads it
        assert problem is not None and "judge [http://j/v1]: 2 timeout" in problem
        assert counts == {"samples": 2, "failed": 2, "blocked": 0}
    finally:
        ray.kill(ray.get_actor(actor_name()))


class _Handle:
    """The ledger actor's handle, over a :class:`Ledger` in this process; counts the calls."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.calls: list[str] = []

    def __getattr__(self, method: str) -> object:
        outer = self

        class _Method:
            def remote(self, *args: object) -> object:
                outer.calls.append(method)
                return getattr(outer.ledger, method)(*args)

        return _Method()


def test_a_worker_batches_scored_samples_and_reports_failures_at_once() -> None:
    from openjudge.integrations.verl._ledger import RECORD_BATCH, _RayLedger

    policy = FailurePolicy(breaker_failures=2, failure_window=1000, breaker_cooldown_s=60)
    handle = _Handle(Ledger(policy, {"judge": "http://j/v1"}))
    client = _RayLedger(handle)

    async def run() -> None:
        for _ in range(RECORD_BATCH):  # scored samples: one view, one batch of records
            assert await client.admit(["judge"]) == (None, None)
            assert await client.record({"judge": False}, []) is None
        # Two calls (a view, a batch) unless the machine is slow enough for the 50 ms refresh to fire:
        # far fewer than the two per sample (128) of a ledger asked every time.
        assert set(handle.calls) == {"view", "record_many"} and len(handle.calls) <= 8
        assert handle.ledger.counts_now()["samples"] == RECORD_BATCH
        for _ in range(2):  # failures: sent at once, so the breaker opens for every worker
            await client.record({"judge": True}, ["judge: timeout"])
        assert handle.calls[-2:] == ["record_many", "record_many"]
        problem, blocked = await client.admit(["judge"])  # the actor decides while a breaker is open
        assert handle.calls[-1] == "admit" and blocked == "judge" and problem is None

    anyio.run(run)
