"""Meta-evaluating routed graders: an item a grader does not apply to is no judgement and no failure."""

from __future__ import annotations

import pytest

from openjudge.graders.base_grader import BaseGrader
from openjudge.metaeval._items import PointItem, PointwiseSet
from openjudge.metaeval._metrics import summarize
from openjudge.metaeval._runs import collect
from openjudge.results import GraderScore, ScoreRange
from openjudge.runner import GraderConfig

pytestmark = pytest.mark.anyio


class Echo(BaseGrader):
    """Scores the number in the response, on [1, 5]."""

    def __init__(self) -> None:
        super().__init__(name="echo", score_range=(1, 5))

    async def aevaluate(self, *, response: str) -> GraderScore:
        return GraderScore(name=self.name, score=float(response), score_range=ScoreRange(low=1, high=5))


async def test_items_another_grader_is_routed_to_are_left_out_of_a_graders_figures() -> None:
    tasks = ["math", "facts", "math", "facts", "math", "facts"]
    data = PointwiseSet(
        tuple(
            PointItem(
                id=f"i{k}",
                line=k + 1,
                prompt="q",
                response=str(1 + k % 5),
                label=float(1 + k % 5),
                extra={"task": task},
            )
            for k, task in enumerate(tasks)
        )
    )
    run = await collect(
        {
            "math": GraderConfig(Echo(), when={"task": "math"}),
            "facts": GraderConfig(Echo(), when={"task": "facts"}),
        },
        data,
    )
    math, facts = run.graders
    assert (math.judgements, math.not_applicable, dict(math.failures)) == (3, 3, {})
    assert (facts.judgements, facts.not_applicable) == (3, 3)
    report = summarize(run, bootstrap=50)
    g = report.graders[0]
    assert (g.cost.judgements, g.cost.not_applicable, g.cost.failure_rate) == (3, 3, 0.0)
    exact = g.agreement.exact
    assert exact is not None and (exact.value, exact.n) == (1.0, 3)  # over the items it applies to
