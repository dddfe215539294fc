"""A judge outage: the breaker fails fast after K failures; the failure-rate ceiling stops the run."""

from __future__ import annotations

import json
import pickle

import anyio
import pytest

from openjudge.graders.function_grader import FunctionGrader
from openjudge.graders.llm_grader import LLMGrader
from openjudge.integrations.scoring._guard import FailureGuard, FailureRateExceeded, SampleFailed
from openjudge.integrations.scoring._ledger import Ledger
from openjudge.integrations.scoring._scorer import RewardScorer
from openjudge.integrations.verl._settings import FailurePolicy, OpenJudgeVerlSettings
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel


class Judge:
    """A judge that is down until ``up`` is set; counts the calls it receives."""

    def __init__(self) -> None:
        self.calls = 0
        self.up = False

    async def reply(self, request: ChatRequest) -> str:
        self.calls += 1
        if not self.up:
            raise ChatModelError("connection refused", kind="provider_error", retryable=True)
        return json.dumps({"reason": "ok", "score": 5})


def scorer_for(judge: Judge, **policy: object) -> RewardScorer:
    model = FunctionChatModel(
        judge.reply,
        model="qwen-judge",
        policy=ProviderPolicy(retry=RetryPolicy(max_attempts=2, initial_backoff_s=0, max_backoff_s=0)),
    )
    runner = GradingRunner(
        {
            "rule": GraderConfig(FunctionGrader(lambda response: 1.0, score_range=(0, 1))),
            "quality": GraderConfig(LLMGrader(model, template="{response}", score_range=(1, 5))),
        },
        show_progress=False,
    )
    settings = OpenJudgeVerlSettings.model_validate({"config": "x", **policy})
    return RewardScorer(
        runner,
        settings,
        grader_providers={"quality": "judge"},
        describe_providers={"judge": "http://10.0.0.7:8000/v1, model 'qwen-judge'"},
    )


def guard_of(scorer: RewardScorer) -> FailureGuard:
    """The breakers and window of the scorer's ledger (its own here: one process, no Ray)."""
    assert isinstance(scorer.ledger, Ledger)
    return scorer.ledger.guard


def test_the_breaker_stops_calling_a_dead_judge_after_k_failed_samples() -> None:
    judge = Judge()
    scorer = scorer_for(
        judge, breaker_failures=3, on_failure="fallback", fallback_score=0.0, max_failure_rate=None
    )

    async def main() -> list[str]:
        kinds = []
        for _ in range(20):
            scored = await scorer.score({"response": "r"})
            kinds.append(str(scored.extra["openjudge/quality/error_kind"]))
        return kinds

    kinds = anyio.run(main)
    # Three samples try the judge (two attempts each); the other 17 fail at once, uncalled.
    assert judge.calls == 3 * 2
    assert kinds == ["provider_error"] * 3 + ["circuit_open"] * 17
    assert guard_of(scorer).breaker_open("judge") and guard_of(scorer).blocked == 17


def test_after_the_cooldown_one_probe_closes_the_breaker_when_the_judge_is_back() -> None:
    now = [0.0]
    guard = FailureGuard(
        FailurePolicy(breaker_failures=2, breaker_cooldown_s=10, max_failure_rate=None), clock=lambda: now[0]
    )
    for _ in range(2):
        guard.record({"judge": True}, ["judge: timeout"])
    assert guard.open_provider(["judge"]) == "judge"
    now[0] = 11.0
    assert guard.open_provider(["judge"]) is None  # the probe goes through
    assert guard.open_provider(["judge"]) == "judge"  # its siblings still fail fast
    guard.record({"judge": False}, [])
    assert guard.open_provider(["judge"]) is None and not guard.breaker_open("judge")


def test_a_failed_probe_opens_the_breaker_again() -> None:
    now = [0.0]
    guard = FailureGuard(
        FailurePolicy(breaker_failures=2, breaker_cooldown_s=10, max_failure_rate=None), clock=lambda: now[0]
    )
    for _ in range(2):
        guard.record({"judge": True}, ["judge: timeout"])
    now[0] = 11.0
    assert guard.open_provider(["judge"]) is None
    guard.record({"judge": True}, ["judge: timeout"])
    now[0] = 20.0
    assert guard.open_provider(["judge"]) == "judge"  # open until 21


def test_max_failure_rate_stops_with_a_message_naming_the_provider_and_the_count() -> None:
    judge = Judge()
    scorer = scorer_for(judge, breaker_failures=2, failure_window=10, max_failure_rate=0.5)

    async def main() -> tuple[int, str]:
        dropped = 0
        for _ in range(30):
            try:
                await scorer.score({"response": "r"})
            except SampleFailed:
                dropped += 1
            except FailureRateExceeded as exc:
                return dropped, str(exc)
        raise AssertionError("the run was not stopped")

    dropped, message = anyio.run(main)
    assert dropped == 9  # the tenth sample fills the window (2 called, 8 failed fast) and stops the run
    assert judge.calls == 2 * 2
    assert "10 of the last 10 samples failed, above max_failure_rate=0.5" in message
    assert "judge [http://10.0.0.7:8000/v1, model 'qwen-judge']: 8 circuit_open" in message
    assert "judge [http://10.0.0.7:8000/v1, model 'qwen-judge']: 2 provider_error" in message
    # It crosses Ray workers as it is.
    assert str(pickle.loads(pickle.dumps(FailureRateExceeded(message)))) == message
    with pytest.raises(FailureRateExceeded):
        anyio.run(scorer.score, {"response": "r"})  # and stays stopped


def test_a_healthy_judge_below_the_ceiling_keeps_running() -> None:
    judge = Judge()
    judge.up = True
    scorer = scorer_for(judge, failure_window=5, max_failure_rate=0.0)
    for _ in range(12):
        assert anyio.run(scorer.score, {"response": "r"}).reward == 1.0
    assert guard_of(scorer).samples == 12 and guard_of(scorer).failed == 0


def test_groups_evicted_for_a_failed_member_are_bounded_over_whole_steps() -> None:
    """An async trainer under drop: evictions come before the step's trained groups, so a window cut
    inside a step would read high; the share is over whole steps holding failure_window groups."""
    guard = FailureGuard(FailurePolicy(max_failure_rate=0.5, failure_window=100))
    for _ in range(3):  # 40 % evicted each step: 43 evicted (on the way), then 64 trained
        guard.record_groups(43, 0, batch=64)
        guard.record_groups(0, 64)
    assert guard.tripped is None and (guard.evicted_groups, guard.groups) == (129, 321)
    guard.record_groups(60, 0, batch=64)  # an unlucky step so far: 60 evicted, 64 to train
    assert guard.tripped is None  # 60 of 124: this step with the batch it will train (48 %)
    guard.record_groups(90, 0, batch=64)  # 150 evicted for 64 groups: 150 of 214 this step alone
    message = guard.tripped
    assert message is not None and "150 of the last 214 prompt groups were evicted" in message
    assert "on_failure=neutral" in message


def test_a_first_step_that_evicts_most_groups_trips_before_any_is_trained() -> None:
    guard = FailureGuard(FailurePolicy(max_failure_rate=0.5, failure_window=100))
    guard.record_groups(30, 0, batch=64)
    assert guard.tripped is None  # fewer than failure_window groups seen
    guard.record_groups(40, 0, batch=64)
    assert guard.tripped is not None and "70 of the last 134" in guard.tripped
