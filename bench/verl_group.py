"""Group judging in VERL's reward loop: step time against the pointwise path, and overhead.

    python -m bench.verl_group            # both
    python -m bench.verl_group step       # or: overhead

``step``: 16 prompts x n=8 sessions; session s of prompt p generates for
0.05 s x (1 + s) x (1 + p / 16) (0.05-0.78 s: members of a group differ, and groups
finish at different times), judge latency L = 0.2 s. Each session runs as VERL's V1
worker runs it: generation, then ``_compute_score``.

* pointwise: each trajectory is judged alone as soon as it is generated (one LLM call).
  Ideal step time = max over trajectories of (G + L).
* group: each trajectory arrives at its group's barrier
  (:class:`~openjudge.integrations.verl.group._barrier.GroupBarrier`), the group is judged once by
  the real :class:`~openjudge.integrations.verl.group.judges.GraderGroupJudge` (listwise: one call;
  knockout: ceil(log2 n) rounds of calls; all-pairs and anchor: one concurrent wave),
  and every member gets its reward. Ideal = max over groups of (slowest member + the
  group judgement's call latency).

The cost of group judging is each group's slowest member plus the group call: with
the generation spread here, the group path's step time equals the pointwise one plus
(rounds - 1) x L for multi-round graders. Reported as measured / ideal (target <= 1.1).

``overhead``: 256 groups x 8 members with a zero-latency judge and no generation time:
the CPU the group stage adds per member (barrier, grader runner, member split, policy).
Target: < 1 ms per member.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Mapping

from bench.common import report
from openjudge.graders.base_grader import BaseGrader
from openjudge.graders.comparison import (
    AnchorComparisonGrader,
    GroupTournamentGrader,
    KnockoutTournamentGrader,
    ListwiseRankingGrader,
)
from openjudge.graders.llm_grader import LLMGrader
from openjudge.integrations.verl._functions import RewardSample
from openjudge.integrations.verl.group import GroupSettings
from openjudge.integrations.verl.group._barrier import GroupBarrier
from openjudge.integrations.verl.group._verdict import GroupVerdict, MemberReward
from openjudge.integrations.verl.group.judges import GraderGroupJudge
from openjudge.integrations.verl.group.members import Member
from openjudge.models.chat_model import ChatModel, ChatRequest
from openjudge.models.policy import ProviderLimits, ProviderPolicy
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel

PROMPTS = 16
N = 8
GEN_S = 0.05
L = 0.2
_CANDIDATES = re.compile(r'<candidate id="(R\d+)">\n(.*?)\n</candidate>', re.DOTALL)


def verdict(request: ChatRequest) -> str:
    """Listwise: rank by the number in each response; pairwise: A wins if its number is larger."""
    user = str(request.messages[-1]["content"])
    found = _CANDIDATES.findall(user)
    if found:
        ranked = sorted(found, key=lambda c: -int(c[1].split()[-1]))
        return json.dumps({"reason": "r", "ranking": [cid for cid, _ in ranked]})
    if "<response_a>" in user:
        a = int(user.split("<response_a>\n", 1)[1].split("\n", 1)[0].split()[-1])
        b = int(user.split("<response_b>\n", 1)[1].split("\n", 1)[0].split()[-1])
        return json.dumps({"reason": "r", "winner": "A" if a > b else "B"})
    return json.dumps({"reason": "r", "score": 4})


def judge_model(latency_s: float) -> FunctionChatModel:
    async def reply(request: ChatRequest) -> str:
        if latency_s:
            await asyncio.sleep(latency_s)
        return verdict(request)

    return FunctionChatModel(reply, policy=ProviderPolicy(limits=ProviderLimits(max_concurrency=4096)))


GRADERS: dict[str, tuple[Callable[[ChatModel], BaseGrader], dict[str, str], int]] = {
    # name: (grader, mapper, judge rounds per group)
    "listwise": (lambda m: ListwiseRankingGrader(m), {"query": "query", "responses": "responses"}, 1),
    "knockout": (
        lambda m: KnockoutTournamentGrader(m),
        {"query": "query", "responses": "responses"},
        math.ceil(math.log2(N)),
    ),
    "all_pairs": (
        lambda m: GroupTournamentGrader(m, max_concurrency=64),
        {"query": "query", "responses": "responses"},
        1,
    ),
    "anchor": (
        lambda m: AnchorComparisonGrader(m),
        {"query": "query", "responses": "responses", "anchor": "ground_truth"},
        1,
    ),
}


def member(prompt: int, session: int) -> Member:
    sample = RewardSample(
        original_index=session,
        group_index=prompt,
        prompt=f"question {prompt}",
        response=f"answer {session}",
        messages=[],
        extra={},
        ground_truth="answer 3",
        uid=f"u{prompt}",
    )
    return Member(session_id=session, sample=sample, pointwise=None)


def group_judge(kind: str, latency_s: float) -> GraderGroupJudge:
    make, mapper, _ = GRADERS[kind]
    runner = GradingRunner({kind: GraderConfig(make(judge_model(latency_s)), mapper)}, show_progress=False)
    return GraderGroupJudge(runner, GroupSettings(pointwise=False), source=f"<{kind}>")


async def group_step(judge: GraderGroupJudge, gen: Callable[[int, int], float]) -> list[float]:
    async def judge_group(members: Mapping[int, Member]) -> GroupVerdict:
        return await judge.judge(members, N)

    barriers = [GroupBarrier(f"u{p}", N, 600.0, judge_group) for p in range(PROMPTS)]

    async def session(p: int, s: int) -> float:
        await asyncio.sleep(gen(p, s))
        barriers[p].arrive(s, member(p, s))
        result, judged = await barriers[p].verdict(s)
        outcome = result.outcome(s, judged)
        assert isinstance(outcome, MemberReward)
        return outcome.reward

    return list(await asyncio.gather(*(session(p, s) for p in range(PROMPTS) for s in range(N))))


async def pointwise_step(gen: Callable[[int, int], float]) -> list[float]:
    grader = LLMGrader(judge_model(L), template="Rate: {response}", score_range=(1, 5))
    runner = GradingRunner({"judge": GraderConfig(grader, {"response": "response"})}, show_progress=False)

    async def session(p: int, s: int) -> float:
        await asyncio.sleep(gen(p, s))
        out = await runner.arun([member(p, s).sample.grader_sample()])
        score = out["judge"][0]
        assert hasattr(score, "score")
        return float(score.score)

    return list(await asyncio.gather(*(session(p, s) for p in range(PROMPTS) for s in range(N))))


def step() -> None:
    def gen(prompt: int, session: int) -> float:
        return GEN_S * (1 + session) * (1 + prompt / PROMPTS)

    slowest = gen(PROMPTS - 1, N - 1)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (figures stretch with load)")
    start = time.perf_counter()
    scores = asyncio.run(pointwise_step(gen))
    pointwise = time.perf_counter() - start
    assert len(scores) == PROMPTS * N
    print(
        f"{PROMPTS} prompts x n={N}; generation {gen(0, 0):.2f}-{slowest:.2f} s per trajectory; judge L = {L} s"
    )
    print(f"pointwise path: {pointwise:.3f} s (ideal max(G + L) = {slowest + L:.3f} s)")
    report("  ratio to ideal (pointwise)", pointwise / (slowest + L), "x", 1.1)
    for kind, (_, _, rounds) in GRADERS.items():
        judge = group_judge(kind, L)
        start = time.perf_counter()
        rewards = asyncio.run(group_step(judge, gen))
        elapsed = time.perf_counter() - start
        assert len(rewards) == PROMPTS * N and all(0.0 <= r <= 1.0 for r in rewards)
        ideal = slowest + rounds * L
        print(
            f"group path, {kind} ({rounds} round{'s' if rounds > 1 else ''} of calls): {elapsed:.3f} s "
            f"(ideal slowest member + {rounds} x L = {ideal:.3f} s; {elapsed - pointwise:+.3f} s vs pointwise)"
        )
        report(f"  ratio to ideal ({kind})", elapsed / ideal, "x", 1.1)
    print(
        "  bound: each group waits for its slowest member, then its judgement (1 call latency; a knockout\n"
        "  takes ceil(log2 n) sequential rounds). Other groups keep generating meanwhile, so a step costs\n"
        "  the slowest group's tail, not the sum; V1's async trainer modes hide that tail behind training."
    )


def overhead() -> None:
    judge = group_judge("listwise", 0.0)
    groups = 256

    async def run() -> float:
        async def judge_group(members: Mapping[int, Member]) -> GroupVerdict:
            return await judge.judge(members, N)

        async def one_round(offset: int) -> None:
            barriers = [GroupBarrier(f"u{p}", N, 600.0, judge_group) for p in range(groups)]

            async def session(p: int, s: int) -> None:
                barriers[p].arrive(s, member(p + offset, s))
                await barriers[p].verdict(s)

            await asyncio.gather(*(session(p, s) for p in range(groups) for s in range(N)))

        await one_round(10_000)  # warm-up
        start = time.perf_counter()
        await one_round(0)
        return (time.perf_counter() - start) / (groups * N)

    per_member = asyncio.run(run())
    report(
        f"group stage CPU per member ({groups} groups x {N}, listwise, zero-latency judge)",
        per_member * 1e3,
        " ms",
        1.0,
    )
    print(
        "  bound: one event loop's CPU: the listwise prompt, its parse, the runner and the policy per group"
    )


def main(argv: list[str] | None = None) -> None:
    which = (argv if argv is not None else sys.argv[1:]) or ["step", "overhead"]
    for name in which:
        {"step": step, "overhead": overhead}[name]()


if __name__ == "__main__":
    main()
