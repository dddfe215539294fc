"""One response cannot spend another's budget.

N answers that are slow to compare are graded in one batch with honest answers that need
the worker too; the pool has 2 workers and the runner a per-pair timeout shorter than the
queue the slow answers build. Property: the honest answers' verdicts do not change for any
N from 1 to 4x the pool, and each slow answer is its own timeout (the bottom score, blamed
on the response), never an error: a response's budget is its own compute, queueing is
charged to no one (``WorkerPool`` and :func:`~openjudge.models._timeouts.untimed`).

The worker function is a stand-in (``tests.graders.slow_functions:slow_or_equal``) so that
"slow" is exact and the test is fast; the pool, the grader and the runner are the real ones.
"""

from __future__ import annotations

import anyio
import pytest

from openjudge.graders._workers import WorkerPool
from openjudge.graders.math import MathAnswerEquivalenceGrader
from openjudge.results import GraderScore, RowResult
from openjudge.runner import GradingRunner

pytestmark = pytest.mark.anyio

WORKERS = 2
BUDGET_S = 0.3
RUNNER_TIMEOUT_S = 1.0  # above an answer's own compute, below the queue 4 or more slow answers make
SLOW = "tests.graders.slow_functions"
HONEST = [
    (r"\boxed{x+1}", "1+x"),
    (r"\boxed{y + 2}", "2+y"),
    (r"\boxed{x+2}", "1+x"),
    (r"\boxed{2y}", "y2"),
    (r"<answer>b+a</answer>", "a+b"),
    (r"<answer>z</answer>", "q"),
]


class StandIn(MathAnswerEquivalenceGrader):
    symbolic_function = f"{SLOW}:slow_or_equal"

    def __init__(self) -> None:
        super().__init__(sympy_timeout_s=BUDGET_S, sympy_workers=WORKERS)
        self.workers = WorkerPool(max_workers=WORKERS, preload=(SLOW,))  # quick to restart


def verdict(result: RowResult) -> tuple[object, ...]:
    assert isinstance(result, GraderScore), result
    return result.score, result.metadata.get("method"), result.metadata.get("cause")


async def grade(grader: StandIn, samples: list[dict[str, str]]) -> list[RowResult]:
    runner = GradingRunner(
        {"math": grader}, max_concurrency=64, show_progress=False, timeout_s=RUNNER_TIMEOUT_S
    )
    return list((await runner.arun(samples))["math"])


@pytest.mark.parametrize("slow", [1, 2, 4, 8])
async def test_slow_answers_change_no_verdict_of_the_honest_ones_around_them(slow: int) -> None:
    grader = StandIn()
    alone = [verdict(r) for r in await grade(grader, [{"response": a, "reference": r} for a, r in HONEST])]
    assert [score for score, _, _ in alone] == [1.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    assert {method for _, method, _ in alone} == {"symbolic"}  # each needed the worker
    samples: list[dict[str, str]] = []
    for i in range(max(slow, len(HONEST))):  # slow answers first in each pair: the honest ones queue behind
        if i < slow:
            samples.append({"response": rf"\boxed{{SLOW {i}}}", "reference": "1+x"})
        if i < len(HONEST):
            samples.append({"response": HONEST[i][0], "reference": HONEST[i][1]})
    results = await grade(grader, samples)
    honest = [verdict(r) for s, r in zip(samples, results, strict=True) if "SLOW" not in s["response"]]
    assert honest == alone
    for sample, result in zip(samples, results, strict=True):
        if "SLOW" in sample["response"]:
            assert verdict(result) == (0.0, None, "timeout")
            assert isinstance(result, GraderScore) and result.metadata["blame"] == "response"
    grader.workers.close()


async def test_verl_streaming_arrivals_wait_their_turn_instead_of_timing_out() -> None:
    """VERL awaits ``run_single`` for every trajectory at once, with no cap: the pool is the backpressure.

    Each arrival is scored as VERL's reward loop scores it (the shared scorer, one sample per
    call, ``timeout_s`` per pair); 8 slow answers arrive first, then the honest ones.
    """
    from openjudge.integrations.scoring._scorer import RewardScorer
    from openjudge.integrations.verl._settings import OpenJudgeVerlSettings

    grader = StandIn()
    runner = GradingRunner({"math": grader}, show_progress=False)
    scorer = RewardScorer(runner, OpenJudgeVerlSettings(config="x", timeout_s=RUNNER_TIMEOUT_S))
    slow = [{"response": rf"\boxed{{SLOW {i}}}", "reference": "1+x"} for i in range(4 * WORKERS)]
    honest = [{"response": a, "reference": r} for a, r in HONEST]
    rewards: dict[int, float] = {}

    async def arrive(index: int, sample: dict[str, str]) -> None:
        scored = await scorer.score(sample)
        assert not scored.failed
        rewards[index] = scored.reward

    async with anyio.create_task_group() as group:
        for index, sample in enumerate([*slow, *honest]):
            group.start_soon(arrive, index, sample)
    assert [rewards[i] for i in range(len(slow))] == [0.0] * len(slow)
    assert [rewards[len(slow) + i] for i in range(len(honest))] == [1.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    grader.workers.close()
