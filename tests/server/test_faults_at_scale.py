"""2,000 samples through the real openai client against a faulty local judge server.

Every (sample, grader) pair must yield exactly one result; faults that heal must heal,
faults that persist must become typed errors (never scores); the server never sees more
requests in flight than the provider allows; the run ends within its deadline.
"""

from __future__ import annotations

import time
from collections import Counter

import anyio
import pytest

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.policy import ProviderLimits, ProviderPolicy, RetryPolicy
from openjudge.providers.openai import OpenAIChatModel
from openjudge.results import GraderError, GraderScore
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.judge_server import JudgeServerProcess

pytestmark = pytest.mark.slow  # 2,000 samples against a faulty judge (20 s)

N = 2000
PROVIDER_LIMIT = 24
DEADLINE_S = 90.0

# (directive in the sample, expected outcome): a score value, or the error kind.
CASES: list[tuple[str, float | str]] = [
    ("#oj:score=1", 1.0),
    ("#oj:score=5", 5.0),
    ("#oj:score=2", 2.0),
    ("#oj:status=429,retry_after_s=0.05,times=1 #oj:score=4", 4.0),
    ("#oj:status=500,times=2 #oj:score=2", 2.0),
    ("#oj:status=503,times=1", 3.0),
    ("#oj:status=503", "provider_error"),
    ("#oj:status=400", "provider_error"),
    ("#oj:reset,times=1 #oj:score=5", 5.0),
    ("#oj:reply=fenced", 3.0),
    ("#oj:reply=prose", "parse_error"),
    ("#oj:reply=missing_score", "parse_error"),
    ("#oj:reply=out_of_range", "parse_error"),
    ("#oj:reply=nonnumeric", "parse_error"),
    ("#oj:reply=truncated,times=1", 3.0),
    ("#oj:reply=out_of_range,times=1 #oj:score=1", 1.0),
    ("#oj:score=3", 3.0),
    ("#oj:score=4", 4.0),
    ("#oj:score=5", 5.0),
]
# Hangs cost a full attempt timeout each, so they are rarer: one in 100 hangs once,
# one in 200 hangs on every attempt.
HANG_ONCE = ("#oj:hang,times=1 #oj:score=4", 4.0)
HANG_ALWAYS = ("#oj:hang", "timeout")


def case(i: int) -> tuple[str, float | str]:
    if i % 200 == 199:
        return HANG_ALWAYS
    if i % 100 == 98:
        return HANG_ONCE
    return CASES[i % len(CASES)]


def test_two_thousand_samples_with_faults(judge_server: JudgeServerProcess) -> None:
    judge_server.set_latency(0.01, 0.01)
    model = OpenAIChatModel(
        "judge",
        api_key="sk-test",
        base_url=judge_server.base_url,
        temperature=0.0,
        policy=ProviderPolicy(
            timeout_s=3.0,  # generous: the client and server share two cores
            retry=RetryPolicy(max_attempts=3, max_elapsed_s=10.0, initial_backoff_s=0.02, max_backoff_s=0.1),
            limits=ProviderLimits(max_concurrency=PROVIDER_LIMIT, adaptive=True),
        ),
    )
    grader = LLMGrader(model, name="quality", template="Grade this answer:\n{response}", score_range=(1, 5))
    runner = GradingRunner(
        {"quality": GraderConfig(grader, {"response": "text"})},
        max_concurrency=64,
        show_progress=False,
        timeout_s=15.0,  # above the provider's own budget (3 attempts x 3 s), so its errors carry usage
        deadline_s=DEADLINE_S,
    )
    data = [{"text": f"sample {i}: the answer is {i}. {case(i)[0]}"} for i in range(N)]
    judge_server.reset_stats()
    started = time.monotonic()
    result = anyio.run(runner.arun, data)
    elapsed = time.monotonic() - started

    results = result["quality"]
    assert len(results) == N  # nothing lost: one result per pair, in order
    outcomes: Counter[str] = Counter()
    for i, r in enumerate(results):
        expected = case(i)[1]
        if isinstance(expected, float):
            assert isinstance(r, GraderScore), (i, data[i]["text"], r)
            assert r.score == expected, (i, r)
            outcomes["score"] += 1
        else:
            assert isinstance(r, GraderError), f"failure became a score: {i} {data[i]['text']} {r}"
            assert r.kind == expected, (i, r)
            outcomes[r.kind] += 1
    expected_kinds = Counter(str(case(i)[1]) for i in range(N) if isinstance(case(i)[1], str))
    assert {k: v for k, v in outcomes.items() if k != "score"} == expected_kinds
    assert outcomes["timeout"] == N // 200

    stats = judge_server.stats()
    assert stats.peak_in_flight <= PROVIDER_LIMIT
    assert model.peak_in_flight <= PROVIDER_LIMIT
    texts = [case(i)[0] for i in range(N)]
    assert stats.by_outcome["429"] == sum("status=429" in t for t in texts)  # each healed after one retry
    assert stats.by_outcome["reset"] == sum("#oj:reset" in t for t in texts)
    assert stats.by_outcome["500"] == 2 * sum("status=500" in t for t in texts)
    assert elapsed < DEADLINE_S
    assert result.usage["quality"].requests == model.usage.requests >= N
