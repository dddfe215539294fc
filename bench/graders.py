"""Per-call cost of the rule graders, and the import cost of an agent grader at OpenJudge's path.

Run: ``python bench/graders.py [--only agent,import,code,math] [--calls N] [--repeats R]``
from the repository root.

Targets:

* per call, averaged over ActionLoopDetectionGrader and ObservationInformationGainGrader on
  three hand-made trajectories (efficient, looping, partial): 4.7 µs, a tenth of OpenJudge 0.2.4's
  ~47 µs measured on the 2-vCPU reference machine;
* ``from openjudge.graders.agent.action.action_loop import ActionLoopDetectionGrader`` in a
  fresh interpreter: under 150 ms (OpenJudge: 3.3–5.0 s).

* code execution, per test case of a trivial solution, with each sandbox backend that
  works here: 50 ms (bounded by starting an interpreter; the figure for a bare
  ``python -I -S`` start is printed beside it, so the cost of isolation can be read off);
* math answer equivalence, per call on ordinary (numeric and string) answers: unchanged
  within 10 % by the bounded symbolic step (run this section with another checkout's
  interpreter to compare: it uses only the grader's public constructor and ``aevaluate``).

Each agent figure is the best of R repeats of N calls of ``await grader.aevaluate(messages=...)``
in one event loop; the best repeat is the one least disturbed by other processes. CPU time
of this process is printed too, as it is less sensitive to a busy machine. A plain
restatement of OpenJudge's algorithm (json.loads, a validated GraderScore, no shortcuts) is
timed the same way, so that the speed-up can be read on whatever machine this runs on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

from openjudge.graders.agent._results import unit_score
from openjudge.graders.agent.action.action_loop import ActionLoopDetectionGrader
from openjudge.graders.agent.observation.observation_information_gain import ObservationInformationGainGrader
from openjudge.graders.base_grader import BaseGrader, grader_boundary
from openjudge.results import GraderError, GraderResult, GraderScore

ROOT = Path(__file__).resolve().parents[1]

TARGET_US = 4.7
OPENJUDGE_US = 47.0
IMPORT_TARGET_MS = 150.0
AGENT_IMPORT = "from openjudge.graders.agent.action.action_loop import ActionLoopDetectionGrader"

Message = dict[str, object]


def _trajectory(steps: Sequence[tuple[str, Mapping[str, object], str]]) -> list[Message]:
    messages: list[Message] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Find the weather in Paris."},
    ]
    for i, (name, args, observation) in enumerate(steps):
        function = {"name": name, "arguments": json.dumps(args)}
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": f"call_{i}", "type": "function", "function": function}],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "name": name, "content": observation})
    return [*messages, {"role": "assistant", "content": "Done."}]


_SUNNY = "Paris weather: sunny, 22C, light wind from the west."
TRAJECTORIES: dict[str, list[Message]] = {
    "efficient": _trajectory(
        [
            (
                "search",
                {"q": "Paris weather today"},
                "Paris weather today: sunny, 22C, light wind from the west.",
            ),
            (
                "get_forecast",
                {"city": "Paris", "days": 3},
                "3-day forecast for Paris: Tue 23C clear, Wed 19C rain, Thu 21C cloudy.",
            ),
            (
                "get_air_quality",
                {"city": "Paris"},
                "Air quality index in Paris is 41 (good); PM2.5 at 9 ug/m3.",
            ),
        ]
    ),
    "looping": _trajectory([("search", {"q": "Paris weather"}, _SUNNY)] * 4),
    "partial": _trajectory(
        [
            ("search", {"q": "Paris weather"}, _SUNNY),
            ("search", {"q": "Paris weather"}, "Paris weather: sunny, 23C, light wind from the north."),
            (
                "get_forecast",
                {"city": "Paris"},
                "Forecast: rain expected tomorrow in Paris, 18C, strong wind.",
            ),
            ("noop", {}, "ok"),
        ]
    ),
}


# --- a plain restatement of OpenJudge 0.2.4's two graders, for the same-machine ratio -------------


def _plain_pairs(messages: Sequence[Mapping[str, object]]) -> list[tuple[Mapping[str, object], str]]:
    pairs: list[tuple[Mapping[str, object], str]] = []
    pending: dict[object, Mapping[str, object]] = {}
    for message in (m.get("message", m) for m in messages):
        assert isinstance(message, Mapping)
        tool_calls = message.get("tool_calls") or []
        assert isinstance(tool_calls, list)
        if message.get("role") == "assistant":
            pending.update((call["id"], call) for call in tool_calls)
        elif message.get("role") in ("tool", "function"):
            pairs.append((pending.pop(message["tool_call_id"]), str(message.get("content") or "")))
    return pairs


def _plain_similarity(a: str, b: str) -> float:
    x, y = set(a.lower().split()), set(b.lower().split())
    return len(x & y) / len(x | y) if x and y else 0.0


class _PlainLoop:
    async def aevaluate(self, *, messages: Sequence[Mapping[str, object]]) -> GraderResult:
        signatures = []
        for action, _ in _plain_pairs(messages):
            function = action["function"]
            assert isinstance(function, dict)
            args = json.loads(function["arguments"])
            signatures.append(
                function["name"] + ": " + ", ".join(f"{k}: {v}" for k, v in sorted(args.items()))
            )
        n = len(signatures)
        similar = sum(
            _plain_similarity(signatures[i], signatures[j]) >= 1.0 for i in range(n) for j in range(i + 1, n)
        )
        total = n * (n - 1) // 2
        metadata: dict[str, object] = {
            "action_count": n,
            "similar_pair_count": similar,
            "signatures": signatures,
        }
        score = 1.0 - similar / total if total else 1.0
        return GraderScore.model_validate(
            {"name": "action_loop_detection", "score": score, "metadata": metadata}
        )


class _PlainGain:
    async def aevaluate(self, *, messages: Sequence[Mapping[str, object]]) -> GraderResult:
        rewards: list[float] = []
        previous: list[str] = []
        for _, observation in _plain_pairs(messages):
            if len(observation.strip()) < 10:
                continue
            top = max((_plain_similarity(observation, p) for p in previous), default=0.0)
            rewards.append((1.0 - top) * math.exp(-2 * max(0.0, top - 0.5)))
            previous.append(observation)
        score = sum(rewards) / len(rewards) if rewards else 0.0
        metadata: dict[str, object] = {"raw_average": score, "each_turn_rewards": rewards}
        return GraderScore.model_validate(
            {"name": "observation_information_gain", "score": score, "metadata": metadata}
        )


class _Floor(BaseGrader):
    """The fixed cost every call pays: the boundary, a coroutine, a reason, metadata, the result."""

    @grader_boundary
    async def aevaluate(self, *, messages: Sequence[Message]) -> GraderScore | GraderError:
        n = len(messages)
        return unit_score(
            self.name, 1.0, f"Loop detection: {n}/{n} pairs (threshold={1.0})", {"action_count": n}
        )


# --- measurement -----------------------------------------------------------------------------------

Evaluate = Callable[..., Awaitable[GraderResult]]


async def _per_call_us(
    evaluate: Evaluate, messages: list[Message], calls: int, repeats: int
) -> tuple[float, float]:
    """Best wall and best CPU microseconds per call over ``repeats`` runs of ``calls`` calls."""
    for _ in range(min(calls, 500)):
        await evaluate(messages=messages)
    best_wall = best_cpu = math.inf
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            await evaluate(messages=messages)
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return best_wall / calls * 1e6, best_cpu / calls * 1e6


async def _bench_graders(calls: int, repeats: int) -> None:
    graders: list[tuple[str, Evaluate, Evaluate]] = [
        ("ActionLoopDetectionGrader", ActionLoopDetectionGrader().aevaluate, _PlainLoop().aevaluate),
        (
            "ObservationInformationGainGrader",
            ObservationInformationGainGrader().aevaluate,
            _PlainGain().aevaluate,
        ),
    ]
    walls_s: list[float] = []
    plains: list[float] = []
    print(f"per call, best of {repeats} x {calls} calls   wall µs   cpu µs   plain-OpenJudge-algorithm µs")
    for label, evaluate, plain in graders:
        for name, messages in TRAJECTORIES.items():
            wall, cpu = await _per_call_us(evaluate, messages, calls, repeats)
            plain_wall, _ = await _per_call_us(plain, messages, calls, repeats)
            walls_s.append(wall)
            plains.append(plain_wall)
            print(f"  {label:<34}{name:<10}{wall:>9.2f}{cpu:>9.2f}{plain_wall:>12.2f}")
    average = sum(walls_s) / len(walls_s)
    plain_average = sum(plains) / len(plains)
    floor, _ = await _per_call_us(_Floor().aevaluate, TRAJECTORIES["partial"], calls, repeats)
    print(f"  floor: a @grader_boundary grader that only builds its result{floor:>20.2f}")
    print(f"average per call: {average:.2f} µs")
    print(
        f"  vs target {TARGET_US} µs: {average / TARGET_US:.2f}x the target ({'met' if average <= TARGET_US else 'not met'})"
    )
    print(
        f"  vs OpenJudge 0.2.4 (~{OPENJUDGE_US:.0f} µs on the reference machine): {OPENJUDGE_US / average:.1f}x faster"
    )
    print(
        f"  vs the plain algorithm on this machine now ({plain_average:.2f} µs): {plain_average / average:.1f}x faster"
    )


def _import_cost(runs: int) -> None:
    bare = min(_timed(["-c", "pass"]) for _ in range(runs))
    agent = min(_timed(["-c", AGENT_IMPORT]) for _ in range(runs))
    code = f"import sys; sys.stderr.write('MARK\\n'); {AGENT_IMPORT}"
    marked = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stderr
    after = marked.split("MARK\n", 1)[1]
    cumulative_us = agent_us = 0
    for line in after.splitlines():
        parts = line.split("|")
        if len(parts) != 3:
            continue
        name = parts[2][1:]
        if not name.startswith(" "):  # a top-level import of the statement
            cumulative_us += int(parts[1])
        if name.strip().startswith("openjudge.graders.agent"):
            agent_us += int(parts[0].split(":")[1])
    delta_ms = (agent - bare) * 1e3
    print(f"import cost of `{AGENT_IMPORT}` (fresh interpreter, best of {runs}):")
    print(f"  wall: {agent * 1e3:.1f} ms - bare interpreter {bare * 1e3:.1f} ms = {delta_ms:.1f} ms")
    print(f"  -X importtime, cumulative over the statement's imports: {cumulative_us / 1e3:.1f} ms")
    print(
        f"    of which openjudge.graders.agent.* modules themselves: {agent_us / 1e3:.1f} ms; "
        f"the rest is the core (pydantic, result models, ChatMessage)"
    )
    verdict = "met" if max(delta_ms, cumulative_us / 1e3) <= IMPORT_TARGET_MS else "not met"
    print(f"  vs target {IMPORT_TARGET_MS:.0f} ms: {verdict}")


def _timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


# --- code execution and math ------------------------------------------------------------------

CODE_TARGET_MS = 50.0
MATH_ORDINARY = [
    ("The answer is #### 72", "72"),
    ("so she has \\boxed{10} apples", "10"),
    ("Total: 1,234.50 dollars", "1234.5"),
    ("\\boxed{\\frac{3}{4}}", "0.75"),
    ("The final answer is 18.", "18"),
    ("<answer>Monday</answer>", "monday"),
    ("\\boxed{(1, 2)}", "(1,2)"),
    ("It is 50\\%.", "0.5"),
]
MATH_SYMBOLIC = [("\\boxed{\\frac{\\sqrt{2}}{2}}", "\\frac{1}{\\sqrt{2}}"), ("\\boxed{(x+1)^2}", "x^2+2x+1")]


async def _bare_start_ms(runs: int) -> float:
    """A bare ``python -I -S`` start and exit through anyio: the floor of any process per test."""
    import anyio

    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await anyio.run_process([sys.executable, "-I", "-S", "-c", "print(int(input()) * 2)"], input=b"21")
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2] * 1e3


async def _bench_code(runs: int) -> None:
    from openjudge.graders.code import CodeExecutionGrader, sandbox_backend
    from openjudge.graders.code._backends import works

    floor = await _bare_start_ms(runs)
    print(f"code execution, median of {runs} sequential test cases (trivial solution, stdin -> stdout):")
    print(f"  bare interpreter start (no sandbox, no harness): {floor:7.1f} ms")
    for name in ("bwrap", "unshare", "process"):
        problem = await works(sandbox_backend(name))
        if problem is not None:
            print(f"  {name:<8} not available here: {problem[:80]}")
            continue
        grader = CodeExecutionGrader(sandbox=name)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            result = await grader.aevaluate(
                response="print(int(input()) * 2)", test_cases=[{"input": "21", "output": "42"}]
            )
            times.append(time.perf_counter() - start)
            assert isinstance(result, GraderScore) and result.score == 1.0, result
        median = sorted(times)[len(times) // 2] * 1e3
        verdict = "met" if median <= CODE_TARGET_MS else "not met"
        print(
            f"  {name:<8} {median:7.1f} ms per case (isolation and harness: +{median - floor:.1f} ms; "
            f"target {CODE_TARGET_MS:.0f} ms: {verdict})"
        )


async def _bench_math(calls: int, repeats: int) -> None:
    from openjudge.graders.math import MathAnswerEquivalenceGrader

    grader = MathAnswerEquivalenceGrader()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            for response, reference in MATH_ORDINARY:
                await grader.aevaluate(response=response, reference=reference)
        best = min(best, time.perf_counter() - start)
    per_call = best / (calls * len(MATH_ORDINARY)) * 1e6
    print(
        f"math answer equivalence, ordinary answers, best of {repeats} x {calls * len(MATH_ORDINARY)} calls:"
    )
    print(f"  {per_call:.2f} µs per call (compare with the same section run on the previous version)")
    for response, reference in MATH_SYMBOLIC:  # first call: the symbolic step starts (a worker, or sympy)
        await grader.aevaluate(response=response, reference=reference)
    times = []
    for _ in range(max(5, calls // 10)):
        for response, reference in MATH_SYMBOLIC:
            start = time.perf_counter()
            result = await grader.aevaluate(response=response, reference=reference)
            times.append(time.perf_counter() - start)
            assert isinstance(result, GraderScore) and result.score == 1.0, result
    print(f"  symbolic answers (sympy): {sorted(times)[len(times) // 2] * 1e3:.2f} ms per call (median)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--only", default="agent,import,code,math", help="comma-separated sections")
    parser.add_argument("--calls", type=int, default=300, help="calls per repeat")
    parser.add_argument("--repeats", type=int, default=60, help="repeats per figure (the best is kept)")
    parser.add_argument("--import-runs", type=int, default=7, help="fresh interpreters per import figure")
    parser.add_argument("--code-runs", type=int, default=40, help="test cases per code-execution figure")
    options = parser.parse_args()
    sections = set(options.only.split(","))
    if "agent" in sections:
        asyncio.run(_bench_graders(options.calls, options.repeats))
    if "import" in sections:
        _import_cost(options.import_runs)
    if "code" in sections:
        asyncio.run(_bench_code(options.code_runs))
    if "math" in sections:
        asyncio.run(_bench_math(max(1, options.calls // 10), max(3, options.repeats // 4)))


if __name__ == "__main__":
    main()
