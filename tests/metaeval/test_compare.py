"""Comparison mode: paired differences between two graders on the same labelled items."""

from __future__ import annotations

import pytest

from openjudge.metaeval._compare import compare_runs
from openjudge.metaeval._console import render_comparison
from openjudge.metaeval._items import PairLabel, PairwiseSet
from openjudge.metaeval._runs import MetaEvalRun, collect
from openjudge.results import GraderResult
from tests.metaeval.test_metrics import CannedPairGrader, pair_set, score

pytestmark = pytest.mark.anyio

N = 300
SWAP = {"A": "B", "B": "A", "tie": "tie"}


def labels() -> list[PairLabel]:
    return ["A" if k % 2 else "B" for k in range(N)]


def judge(right_every: int, flip_every: int) -> CannedPairGrader:
    """Right on items k % right_every != 0; always "A" (a flip) on items k % flip_every == 0."""

    def verdict(query: str, first: str, second: str) -> GraderResult:
        k = int(query[1:])
        if k % flip_every == 0:
            return score("A")
        truth = "A" if k % 2 else "B"
        winner = truth if k % right_every else SWAP[truth]
        return score(winner if first.startswith("a") else SWAP[winner])

    return CannedPairGrader(verdict)


async def run(grader: CannedPairGrader, data: PairwiseSet, label: str) -> MetaEvalRun:
    return await collect({"judge": grader}, data, label=label)


async def test_a_better_prompt_is_called_better_with_a_paired_interval() -> None:
    data = pair_set(labels())
    baseline = await run(judge(right_every=2, flip_every=7), data, "old.yaml")
    candidate = await run(judge(right_every=5, flip_every=1000), data, "new.yaml")
    comparison = compare_runs(baseline, candidate, bootstrap=500)
    assert (comparison.baseline, comparison.candidate) == ("old.yaml", "new.yaml")
    (grader,) = comparison.graders
    found = {d.metric: d for d in grader.differences}
    assert set(found) == {"pairwise_accuracy", "flip_rate", "longer_wins_rate"}
    accuracy = found["pairwise_accuracy"]
    assert accuracy.baseline.value is not None and accuracy.candidate.value is not None
    assert accuracy.difference.value == pytest.approx(accuracy.candidate.value - accuracy.baseline.value)
    assert accuracy.difference.low is not None and accuracy.difference.low > 0
    assert accuracy.verdict == "candidate better"
    flips = found["flip_rate"]
    assert flips.baseline.value == pytest.approx(43 / 300)  # k % 7 == 0 for k < 300
    assert flips.difference.value is not None and flips.difference.value < 0
    assert flips.verdict == "candidate better"  # fewer flips is better
    text = render_comparison(comparison)
    assert "new.yaml minus old.yaml" in text and "candidate better" in text


async def test_the_same_judge_twice_shows_no_difference() -> None:
    data = pair_set(labels())
    a = await run(judge(right_every=3, flip_every=11), data, "a")
    b = await run(judge(right_every=3, flip_every=11), data, "b")
    for d in compare_runs(a, b, bootstrap=100).graders[0].differences:
        assert (d.difference.value, d.difference.low, d.difference.high) == (0.0, 0.0, 0.0)
        assert d.verdict == "no clear difference"


async def test_graders_pair_by_name_or_explicitly_and_data_must_match() -> None:
    data = pair_set(labels()[:20])
    a = await collect({"old": judge(2, 7), "other": judge(3, 5)}, data)
    b = await collect({"new": judge(5, 9)}, data)
    assert compare_runs(a, b).graders == []  # no shared name, and `a` has two graders
    (pair,) = compare_runs(a, b, graders=[("old", "new")], bootstrap=50).graders
    assert (pair.baseline_grader, pair.candidate_grader) == ("old", "new")
    with pytest.raises(ValueError, match="no grader named 'nope'"):
        compare_runs(a, b, graders=[("nope", "new")])
    shorter = await collect({"new": judge(5, 9)}, pair_set(labels()[:10]))
    with pytest.raises(ValueError, match="same labelled items"):
        compare_runs(a, shorter)
