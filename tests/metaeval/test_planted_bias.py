"""Planted biases come back out: a scripted judge with known position, length and random behaviour.

The judge (tests/metaeval/scripted.py) answers "A" on 30 % of the items whatever the order,
flips a fair coin on 20 %, and prefers the longer response on the rest. Population values
follow from the plan (shares p = 0.3, r = 0.2, l = 0.5; 10 % of pairs labelled tie; of the
others, 2/3 have the longer response labelled better; which side is longer is balanced):

* flip rate = p + r/2 (the position items always flip; a coin pair repeats a side half the time);
* first-position win rate = p + r/2 + l/2 (every verdict is decisive);
* pairwise accuracy = p/2 + r/2 + l * 2/3; three-way agreement = 0.9 * pairwise accuracy;
* longer-wins rate = p/2 + r/2 + l (pairs labelled tie or shorter-better);
* with 3 repeats, verdict change rate = r * (1 - 2 / 2**3).

Each test checks the reported value exactly against the value recomputed here from the
judge's own decision function, and that the planted population value is inside the
reported 95 % interval.
"""

from __future__ import annotations

import json
import re

import pytest

from openjudge.graders.comparison import PairwiseJudge, PairwisePreferenceGrader
from openjudge.graders.comparison.prompts import pairwise_template
from openjudge.graders.llm_grader import LLMGrader
from openjudge.metaeval._items import PairItem, PointItem, PointwiseSet
from openjudge.metaeval._metrics import summarize
from openjudge.metaeval._report import Estimate, GraderReport
from openjudge.metaeval._runs import collect
from openjudge.models.chat_model import ChatRequest, Sampling
from openjudge.models.schema.prompt_template import LanguageEnum
from openjudge.testing.function_model import FunctionChatModel
from tests.metaeval.scripted import PLANTED, RANDOM_SHARE, ScriptedJudge, coin, pairs

pytestmark = pytest.mark.anyio

N = 400
SWAP = {"A": "B", "B": "A", "tie": "tie"}


def single_order_grader(judge: ScriptedJudge, *, sampling: Sampling | None = None) -> PairwiseJudge:
    model = FunctionChatModel(judge, sampling=sampling)
    return PairwiseJudge(model, pairwise_template(LanguageEnum.EN, None, with_reference=False), name="judge")


def assert_inside(estimate: Estimate | None, planted: float) -> None:
    assert estimate is not None and estimate.low is not None and estimate.high is not None
    assert estimate.low <= planted <= estimate.high, (planted, estimate)


def value(estimate: Estimate | None) -> float | None:
    assert estimate is not None
    return estimate.value


def metric(g: GraderReport, name: str) -> Estimate | None:
    for section in (g.agreement, g.position, g.length, g.consistency):
        if name in type(section).model_fields:
            found = getattr(section, name)
            assert found is None or isinstance(found, Estimate)
            return found
    raise KeyError(name)


async def test_single_order_judge_reports_the_planted_biases() -> None:
    data = pairs(N)
    run = await collect({"judge": single_order_grader(ScriptedJudge())}, data)
    g = summarize(run).graders[0]

    oracle = ScriptedJudge()
    flips = first_wins = correct = decisive_labels = agree3 = longer_wins = eligible = 0
    for k, item in enumerate(data.items):
        shown = oracle.winner(k, item.response_a, item.response_b)
        swapped = SWAP[oracle.winner(k, item.response_b, item.response_a)]  # back to stored labels
        flips += shown != swapped
        first_wins += (shown == "A") + (swapped == "B")
        if item.label != "tie":
            decisive_labels += 1
            correct += shown == item.label
        agree3 += shown == item.label
        longer = "A" if len(item.response_a) > len(item.response_b) else "B"
        if item.label in ("tie", SWAP[longer]):
            eligible += 1
            longer_wins += shown == longer

    assert g.items == N and g.cost.judgements == 2 * N and g.cost.failures == {}
    assert value(g.position.flip_rate) == pytest.approx(flips / N)
    assert value(g.position.first_position_win_rate) == pytest.approx(first_wins / (2 * N))
    assert value(g.agreement.pairwise_accuracy) == pytest.approx(correct / decisive_labels)
    assert value(g.agreement.three_way_agreement) == pytest.approx(agree3 / N)
    assert value(g.length.longer_wins_rate) == pytest.approx(longer_wins / eligible)
    assert value(g.agreement.tie_rate) == 0.0
    assert g.agreement.confusion is not None and sum(g.agreement.confusion["tie"].values()) == N // 10
    for name, planted in PLANTED.items():
        assert_inside(metric(g, name), planted)
    assert g.position.judge_flip_rate is None  # one order per call: nothing reported inside
    assert g.consistency.verdict_change_rate is None  # one repeat


async def test_debiased_grader_absorbs_the_bias_and_reports_it_inside() -> None:
    data = pairs(N)
    grader = PairwisePreferenceGrader(FunctionChatModel(ScriptedJudge()), name="debiased")
    g = summarize(await collect({"debiased": grader}, data)).graders[0]

    oracle = ScriptedJudge()
    inner_flips = sum(
        oracle.winner(k, i.response_a, i.response_b) != SWAP[oracle.winner(k, i.response_b, i.response_a)]
        for k, i in enumerate(data.items)
    )
    # Both orders are judged inside, so swapping outside changes nothing.
    assert value(g.position.flip_rate) == 0.0
    assert value(g.position.judge_flip_rate) == pytest.approx(inner_flips / N)
    assert_inside(g.position.judge_flip_rate, PLANTED["flip_rate"])
    assert_inside(g.position.judge_first_position_win_rate, PLANTED["first_position_win_rate"])
    # A flip becomes a tie verdict: the tie rate is the inner flip rate.
    assert value(g.agreement.tie_rate) == pytest.approx(inner_flips / N)
    assert g.cost.judgements == 2 * N and g.cost.requests == 4 * N


async def test_repeats_measure_self_consistency_with_real_calls() -> None:
    data = pairs(N)
    judge = ScriptedJudge(vary_calls=True)
    grader = single_order_grader(judge, sampling=Sampling(temperature=0.0))  # would be deduplicated
    model = grader.model
    assert isinstance(model, FunctionChatModel) and model.dedupe
    g = summarize(await collect({"judge": grader}, data, repeats=3)).graders[0]

    assert judge.total == N * 2 * 3  # every repeat reached the judge
    assert model.dedupe  # restored after the run
    changed = sum(
        len({coin(f"{k}|{i.response_a}|{call}") for call in range(3)}) > 1
        for k, i in enumerate(data.items)
        if k % 10 in (3, 4)  # the random items
    )
    assert value(g.consistency.verdict_change_rate) == pytest.approx(changed / N)
    assert g.consistency.repeats == 3
    assert_inside(g.consistency.verdict_change_rate, RANDOM_SHARE * (1 - 2 / 2**3))
    assert g.cost.judgements == N * 2 * 3


def length_scorer() -> LLMGrader:
    """A single-response judge that scores by length: 1 + characters // 20, at most 5."""

    def reply(request: ChatRequest) -> str:
        found = re.search(r"<response>\n(.*?)\n</response>", str(request.messages[-1]["content"]), re.DOTALL)
        assert found is not None
        return json.dumps({"reason": "length", "score": min(5, 1 + len(found.group(1)) // 20)})

    return LLMGrader(
        FunctionChatModel(reply), name="verbose", template="{query}\n{response}", score_range=(1, 5)
    )


async def test_single_grader_on_pairs_compares_its_two_scores() -> None:
    data = pairs(200)
    g = summarize(await collect({"verbose": length_scorer()}, data)).graders[0]
    assert g.kind == "single" and g.cost.judgements == 400  # each response scored once
    assert value(g.length.longer_wins_rate) == 1.0
    decisive = [i for i in data.items if i.label != "tie"]
    longer_better = sum((i.label == "A") == (len(i.response_a) > len(i.response_b)) for i in decisive)
    assert value(g.agreement.pairwise_accuracy) == pytest.approx(longer_better / len(decisive))
    assert longer_better / len(decisive) == pytest.approx(2 / 3)
    assert g.position.flip_rate is None and g.position.first_position_win_rate is None
    rho = value(g.length.length_score_spearman)
    assert rho is not None and rho > 0.8


def pointwise_items(n: int) -> PointwiseSet:
    items = []
    for k in range(n):
        label = 1 + k % 5
        items.append(
            PointItem(id=f"p{k}", line=k + 1, prompt=f"item {k}", response=f"answer {k}", label=float(label))
        )
    return PointwiseSet(tuple(items))


def planted_score(k: int) -> int:
    """60 % exact, 30 % off by one, 10 % off by two (by item index)."""
    label = 1 + k % 5
    block = (k // 5) % 10
    if block < 6:
        return label
    if block < 9:
        return label + 1 if label < 5 else label - 1
    return label + 2 if label <= 3 else label - 2


async def test_pointwise_agreement_matches_the_planted_errors() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    data = pointwise_items(500)

    def reply(request: ChatRequest) -> str:
        found = re.search(r"item (\d+)", str(request.messages[-1]["content"]))
        assert found is not None
        return json.dumps({"reason": "planted", "score": planted_score(int(found.group(1)))})

    grader = LLMGrader(
        FunctionChatModel(reply), name="rater", template="{query}\n{response}", score_range=(1, 5)
    )
    g = summarize(await collect({"rater": grader}, data)).graders[0]
    assert value(g.agreement.exact) == pytest.approx(0.6)
    assert value(g.agreement.within_one) == pytest.approx(0.9)
    scores = [planted_score(k) for k in range(500)]
    labels = [i.label for i in data.items]
    assert value(g.agreement.spearman) == pytest.approx(scipy_stats.spearmanr(scores, labels)[0])
    assert value(g.agreement.kendall) == pytest.approx(scipy_stats.kendalltau(scores, labels)[0])
    assert_inside(g.agreement.exact, 0.6)
    assert_inside(g.agreement.within_one, 0.9)
    assert g.agreement.pairwise_accuracy is None and g.length.longer_wins_rate is None


async def test_pair_grader_on_scored_responses_is_skipped_with_the_reason() -> None:
    grader = single_order_grader(ScriptedJudge())
    run = await collect({"judge": grader}, pointwise_items(5))
    assert run.graders == ()
    assert "judges pairs" in run.skipped["judge"]


def test_pairs_helper_plans_exact_shares() -> None:
    data = pairs(N)
    assert len(data.items) == N
    assert sum(i.label == "tie" for i in data.items) == N // 10
    assert sum(len(i.response_a) > len(i.response_b) for i in data.items) == N // 2
    item: PairItem = data.items[0]
    assert item.prompt.startswith("item 0:")
