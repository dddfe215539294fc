"""Metrics on small hand-made cases: ties, failures, costs, consistency."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from openjudge.graders.base_grader import BaseGrader
from openjudge.jobs._summary import Price
from openjudge.metaeval._items import PairItem, PairLabel, PairwiseSet, PointItem, PointwiseSet
from openjudge.metaeval._metrics import summarize
from openjudge.metaeval._runs import collect
from openjudge.results import GraderError, GraderResult, GraderScore, ScoreRange, TokenUsage

pytestmark = pytest.mark.anyio

UNIT = ScoreRange(low=0, high=1)
Verdict = Callable[[str, str, str], GraderResult]


class CannedPairGrader(BaseGrader):
    """Answers each (query, first shown, second shown) with a scripted result."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(name="canned")
        self.verdict = verdict

    async def aevaluate(self, *, query: str, response_a: str, response_b: str) -> GraderResult:
        return self.verdict(query, response_a, response_b)


def score(winner: str, *, usage: TokenUsage | None = None, latency_s: float | None = None) -> GraderScore:
    value = {"A": 1.0, "B": 0.0, "tie": 0.5}[winner]
    return GraderScore(
        name="canned",
        score=value,
        metadata={"winner": winner},
        score_range=UNIT,
        usage=usage,
        latency_s=latency_s,
    )


def pair_set(labels: list[PairLabel]) -> PairwiseSet:
    return PairwiseSet(
        tuple(
            PairItem(
                id=str(k), line=k + 1, prompt=f"q{k}", response_a=f"a{k}", response_b=f"bb{k}", label=label
            )
            for k, label in enumerate(labels)
        )
    )


async def test_ties_are_explicit_and_failures_are_left_out_and_counted() -> None:
    # Items: q0 A-labelled, judged A; q1 A-labelled, judged tie; q2 B-labelled, judged A;
    # q3 tie-labelled, judged tie; q4 times out; q5 returns a score with no range.
    def verdict(query: str, first: str, second: str) -> GraderResult:
        if query == "q4":
            return GraderError(name="canned", kind="timeout", message="judge timed out")
        if query == "q5":
            return GraderScore(name="canned", score=1.0)
        stored_order = first.startswith("a")
        winner = {"q0": "A", "q1": "tie", "q2": "A", "q3": "tie"}[query]
        return score(winner if stored_order else {"A": "B", "B": "A", "tie": "tie"}[winner])

    data = pair_set(["A", "A", "B", "tie", "A", "B"])
    g = summarize(await collect({"canned": CannedPairGrader(verdict)}, data), bootstrap=200).graders[0]
    accuracy = g.agreement.pairwise_accuracy
    assert accuracy is not None and accuracy.n == 3  # q0 right; q1 a tie, q2 wrong
    assert accuracy.value == pytest.approx(1 / 3)
    three_way = g.agreement.three_way_agreement
    assert three_way is not None and three_way.n == 4 and three_way.value == pytest.approx(2 / 4)
    assert g.agreement.tie_rate is not None and g.agreement.tie_rate.value == pytest.approx(2 / 4)
    assert g.agreement.confusion == {
        "A": {"A": 1, "B": 0, "tie": 1},
        "B": {"A": 1, "B": 0, "tie": 0},
        "tie": {"A": 0, "B": 0, "tie": 1},
    }
    # Consistent in both orders; the first position won 2 of the 4 decisive verdicts.
    assert g.position.flip_rate is not None and (g.position.flip_rate.value, g.position.flip_rate.n) == (
        0.0,
        4,
    )
    first = g.position.first_position_win_rate
    assert first is not None and first.value == pytest.approx(0.5)
    assert g.cost.judgements == 12
    assert g.cost.failures == {"no_verdict": 2, "timeout": 2}
    assert g.cost.failure_rate == pytest.approx(4 / 12)
    assert g.cost.failure_examples["timeout"] == "judge timed out"
    assert "score_range" in g.cost.failure_examples["no_verdict"]


async def test_longer_wins_only_among_ties_and_shorter_labelled_better() -> None:
    # response_b ("bbK") is always the longer one.
    data = pair_set(["A", "tie", "B", "A"])
    winners = {"q0": "B", "q1": "B", "q2": "B", "q3": "A"}

    def verdict(query: str, first: str, second: str) -> GraderResult:
        w = winners[query]
        return score(w if first.startswith("a") else {"A": "B", "B": "A"}[w])

    g = summarize(
        await collect({"canned": CannedPairGrader(verdict)}, data, swap=False), bootstrap=200
    ).graders[0]
    longer = g.length.longer_wins_rate
    # Eligible: q0 (shorter A labelled better), q1 (tie), q3 (A); q2 labels the longer one better.
    assert longer is not None and longer.n == 3 and longer.value == pytest.approx(2 / 3)
    assert g.position.flip_rate is None and g.position.first_position_win_rate is None  # one order
    assert g.cost.judgements == 4
    assert len(g.length.points) == 4 and {x for x, _ in g.length.points} == {-1.0}


async def test_cost_per_1000_judgements_uses_the_price() -> None:
    usage = TokenUsage(prompt_tokens=300, completion_tokens=50, requests=1)

    def verdict(query: str, first: str, second: str) -> GraderResult:
        return score("A" if first.startswith("a") else "B", usage=usage, latency_s=0.25)

    data = pair_set(["A"] * 5)
    price = Price(prompt_per_1k=0.5, completion_per_1k=2.0)
    run = await collect(
        {"canned": CannedPairGrader(verdict)}, data, prices={"canned": price}, providers={"canned": "p"}
    )
    g = summarize(run, bootstrap=100).graders[0]
    assert g.provider == "p"
    cost = g.cost
    assert (cost.judgements, cost.requests, cost.prompt_tokens, cost.completion_tokens) == (10, 10, 3000, 500)
    assert cost.cost == pytest.approx(3000 / 1000 * 0.5 + 500 / 1000 * 2.0)
    assert cost.cost_per_1k == pytest.approx((3000 / 1000 * 0.5 + 500 / 1000 * 2.0) / 10 * 1000)
    assert cost.tokens_per_1k == pytest.approx(350_000)
    assert cost.judge_s == pytest.approx(2.5)
    assert cost.wall_s_per_1k is not None and cost.wall_s_per_1k == pytest.approx(cost.wall_s * 100)


class CountingScorer(BaseGrader):
    """Scores each response by its prompt's script; the n-th call of a prompt takes entry n."""

    def __init__(self, scripts: dict[str, list[float]]) -> None:
        super().__init__(name="counting", score_range=(1, 5))
        self.scripts = scripts
        self.calls: Counter[str] = Counter()

    async def aevaluate(self, *, query: str, response: str) -> GraderResult:
        n = self.calls[query]
        self.calls[query] += 1
        return GraderScore(name="counting", score=self.scripts[query][n], score_range=self.score_range)


async def test_consistency_on_scored_responses() -> None:
    # Every repeat of an item is equally right or wrong, so the figures below do not depend on
    # which call counted as the first repeat.
    scripts = {"q0": [3.0, 3, 3], "q1": [2.0, 4, 2], "q2": [5.0, 5, 5], "q3": [1.0, 1, 5]}
    data = PointwiseSet(
        tuple(PointItem(id=k, line=i + 1, prompt=k, response="r", label=3.0) for i, k in enumerate(scripts))
    )
    g = summarize(
        await collect({"counting": CountingScorer(scripts)}, data, repeats=3), bootstrap=100
    ).graders[0]
    change = g.consistency.verdict_change_rate
    assert change is not None and (change.value, change.n) == (0.5, 4)
    exact, within = g.agreement.exact, g.agreement.within_one
    assert exact is not None and exact.value == 0.25  # labels are all 3: only q0 is exact
    assert within is not None and within.value == 0.5


async def test_a_report_serialises_to_json_and_back() -> None:
    from openjudge.metaeval._report import MetaEvalReport

    data = pair_set(["A", "B"])
    report = summarize(
        await collect({"canned": CannedPairGrader(lambda q, a, b: score("A"))}, data), bootstrap=50
    )
    again = MetaEvalReport.model_validate_json(report.model_dump_json())
    assert again == report
    assert again.data.labels == {"A": 1, "B": 1, "tie": 0}
