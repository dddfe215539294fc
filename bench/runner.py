"""Runner and chat-core benchmarks: per-call CPU, wall time against the physical limit, memory.

    python -m bench.runner            # all
    python -m bench.runner ratios     # one of: overhead, census, keeping, layers, ratios, sdk, scale, waves,
                                      # memory, instructions, bytecodes

Each line prints the measured figure, its target and what bounds it. "ideal" is the
physical limit for a judge of fixed latency L at concurrency C: ceil(N / C) * L.
Client CPU is the CPU time of this process only (the judge server runs in a child
process). Figures are noisy on a shared machine: print ``uptime`` beside them.

``ratios`` holds the speed goals: absolute figures differ ~3x between machines of the
same kind, so each goal is a ratio to raw aiohttp measured in the same run (see
:func:`bench_ratios` and the comment above :class:`RawClient` for what each side does).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any, NamedTuple, TypeVar

import aiohttp
import openai
import orjson

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.chat_model import ChatRequest, OutputSpec
from openjudge.models.policy import ProviderLimits, ProviderPolicy
from openjudge.providers.openai import OpenAIChatModel
from openjudge.runner import batch_collector
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel
from openjudge.testing.judge_server import JudgeServerProcess

ProbeT = TypeVar("ProbeT")

VERDICT = json.dumps({"reason": "fine", "score": 4})
TEMPLATE = "Question: {query}\nAnswer: {response}"
LATENCY_S = 0.2


def reply(request: ChatRequest) -> str:
    return VERDICT


def report(
    label: str,
    value: float,
    unit: str,
    target: float,
    *,
    openjudge: float | None = None,
    lower_is_better: bool = True,
    bound: str = "",
) -> None:
    """Print a figure, its target (met or not), OpenJudge's figure if known, and what bounds it."""
    met = value <= target if lower_is_better else value >= target
    oj = f"; OpenJudge {openjudge:g}{unit}" if openjudge is not None else ""
    print(
        f"{label}: {value:.3g}{unit} (target {'<=' if lower_is_better else '>='} {target:g}{unit}{oj}) "
        f"{'MET' if met else 'NOT MET'}"
    )
    if bound:
        print(f"    bounded by: {bound}")


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def samples(n: int) -> list[dict[str, str]]:
    return [{"query": f"What is {i} + {i}?", "response": f"It is {2 * i}."} for i in range(n)]


def judge_runner(
    model: OpenAIChatModel | FunctionChatModel, n_graders: int, concurrency: int
) -> GradingRunner:
    configs = {
        f"judge{i}": GraderConfig(
            LLMGrader(model, name=f"judge{i}", template=TEMPLATE, score_range=(1, 5)),
            {"query": "query", "response": "response"},
        )
        for i in range(n_graders)
    }
    return GradingRunner(configs, max_concurrency=concurrency, show_progress=False)


def bench_overhead(n: int = 20_000) -> None:
    """CPU per grading call with an in-process judge: everything but the network."""
    report(
        "framework CPU per LLM-grader call (function judge, best of 3)",
        min(framework_cpu(n) for _ in range(3)) * 1e6,
        " us",
        30,
        openjudge=195,
        bound="the runner's pool, the LLM grader (prompt, verdict validation) and the engine (limits, usage)",
    )


# -- openjudge over HTTP against raw aiohttp doing the same work -------------------------
#
# Both sides send byte-identical bodies (checked before timing) to the same local judge
# server, hold at most C requests in flight with C worker tasks, and keep one result per
# sample. What each side does per call:
#
# * raw aiohttp (the floor): fill the prompt with an f-string, encode the body with orjson,
#   POST it with the same headers (bearer key, JSON content type) and a 60 s total timeout,
#   check the status, read the body, decode it (orjson), take the first choice's content,
#   decode the verdict JSON and check its score is a number in the range.
# * openjudge: GradingRunner + LLMGrader + OpenAIChatModel, as a user writes them. On top of
#   the above: field mapping, input checks, prompt rendering with delimited inputs, a
#   per-pair timeout, the provider's concurrency and rate bookkeeping, retry policy, usage
#   and latency accounting, a strict read of the reply and pydantic validation of the
#   verdict into a GraderScore. Its per-request timeout (the policy's, 60 s here as well)
#   is a section of the worker task's lazy timer rather than aiohttp's timer per request.

SHORT_TEMPLATE = TEMPLATE
LONG_TEMPLATE = (
    "You are grading an answer to a customer-support question for a software product.\n\n"
    "Rubric:\n"
    "5 - The answer is correct, complete and directly usable: it names the exact setting, command "
    "or version involved, explains why the problem happens, and warns about side effects.\n"
    "4 - The answer is correct and usable but misses one useful detail (a caveat, a version "
    "number, an alternative for older releases) that an expert would add.\n"
    "3 - The answer is mostly correct but vague: the user must search further, or one step is "
    "ambiguous enough that a careful reader could get it wrong.\n"
    "2 - The answer contains a substantive error, or it solves a different problem than the "
    "one asked, or it recommends something unsafe without saying so.\n"
    "1 - The answer is wrong, empty, off-topic or refuses without reason.\n\n"
    "Judge only the answer's content against the reference; ignore tone and formatting unless "
    "they hide the content. Do not reward length. If the reference and the answer disagree, "
    "prefer the reference unless the answer shows clearly that the reference is outdated.\n\n"
    "Question: {query}\n\nReference answer: {reference}\n\nAnswer to grade: {response}"
)
_PARAGRAPH = (
    "To change the connection pool size, set pool.max_connections in the configuration file and "
    "restart the service; on releases before 2.4 the key was called pool.size. A pool that is too "
    "small makes requests queue under load, which shows up as rising latency rather than errors. "
)


def long_samples(n: int) -> list[dict[str, str]]:
    return [
        {
            "query": f"Ticket {i}: our service slows down at peak hours and requests queue. How do we "
            "raise the number of concurrent connections, and what should we watch out for?",
            "reference": _PARAGRAPH * 2,
            "response": f"(answer {i}) " + _PARAGRAPH * 5,
        }
        for i in range(n)
    ]


CASES = {
    "short": (SHORT_TEMPLATE, samples),
    "long": (LONG_TEMPLATE, long_samples),
}


def case_runner(
    model: OpenAIChatModel | FunctionChatModel, case: str, concurrency: int, *, tune_collector: bool = True
) -> GradingRunner:
    template, make = CASES[case]
    fields = list(make(1)[0])
    grader = LLMGrader(model, name="judge0", template=template, score_range=(1, 5))
    return GradingRunner(
        {"judge0": GraderConfig(grader, {f: f for f in fields})},
        max_concurrency=concurrency,
        show_progress=False,
        tune_collector=tune_collector,
    )


class Record:
    """What a raw client might keep per sample instead of a bare float (see ``RawClient``'s ``keep``)."""

    __slots__ = ("reason", "score")

    def __init__(self, score: float, reason: str) -> None:
        self.score = score
        self.reason = reason


class RawClient:
    """What a user writes with aiohttp alone to get the same verdicts (see the comment above).

    With ``keep`` it also keeps ``keep(score, reason)`` per sample (a :class:`Record`, as openjudge
    keeps a GraderScore): a diagnostic, not the floor. Objects kept while calls are in flight make
    the collector run often enough to scan every call's in-flight objects; the floor keeps floats.
    """

    def __init__(
        self,
        base_url: str,
        case: str,
        concurrency: int,
        *,
        keep: Callable[[float, str], object] | None = None,
    ) -> None:
        template, _ = CASES[case]
        self.keep = keep
        self.kept: list[object] = []
        self.url = f"{base_url}/chat/completions"
        self.concurrency = concurrency
        self.headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "authorization": "Bearer sk-bench",
        }
        # The user's own prompt text: the same instructions and schema openjudge sends.
        probe = LLMGrader(FunctionChatModel(reply), template=template, score_range=(1, 5))
        self.system = probe.build_messages(dict.fromkeys(probe.input_spec().required, ""))[0]["content"]
        self.user = template.replace("{query}", "<query>\n{query}\n</query>")
        for field in ("reference", "response"):
            self.user = self.user.replace("{" + field + "}", f"<{field}>\n{{{field}}}\n</{field}>")
        self.response_format: dict[str, Any] = {
            "type": "json_schema",
            "json_schema": {
                "name": "JudgeVerdict",
                "schema": {
                    "description": "The default judge output: a short reason, then a score.",
                    "properties": {
                        "reason": {"description": "A brief justification of the score.", "type": "string"},
                        "score": {"description": "The score.", "type": "number"},
                    },
                    "required": ["reason", "score"],
                    "type": "object",
                    "additionalProperties": False,
                },
                "strict": True,
            },
        }

    def body(self, sample: dict[str, str]) -> bytes:
        messages = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user.format(**sample)},
        ]
        return orjson.dumps({"model": "judge", "messages": messages, "response_format": self.response_format})

    async def run(self, session: aiohttp.ClientSession, data: list[dict[str, str]]) -> list[float]:
        scores = [math.nan] * len(data)
        self.kept = [None] * len(data)
        keep = self.keep
        jobs = iter(enumerate(data))
        timeout = aiohttp.ClientTimeout(total=60)

        async def worker() -> None:
            for i, sample in jobs:
                async with session.post(
                    self.url, data=self.body(sample), headers=self.headers, timeout=timeout
                ) as response:
                    if response.status != 200:
                        raise RuntimeError(f"HTTP {response.status}")
                    reply = orjson.loads(await response.read())
                verdict = orjson.loads(reply["choices"][0]["message"]["content"])
                score = verdict["score"]
                if not isinstance(score, int | float) or not 1 <= score <= 5:
                    raise ValueError(f"bad score {score!r}")
                scores[i] = float(score)
                if keep is not None:
                    self.kept[i] = keep(float(score), verdict["reason"])

        async with asyncio.TaskGroup() as tg:
            for _ in range(min(self.concurrency, len(data))):
                tg.create_task(worker())
        return scores


def _check_same_bodies(raw: RawClient, case: str) -> None:
    """The floor must send exactly what openjudge sends."""
    model = OpenAIChatModel("judge", api_key="sk-bench", base_url="http://127.0.0.1:9/v1")
    grader = case_runner(model, case, 1).grader_configs["judge0"].grader
    assert isinstance(grader, LLMGrader)
    output = OutputSpec.for_model(grader.structured_model)
    for sample in CASES[case][1](3):
        ours = model.transport.wire_body(ChatRequest(grader.build_messages(sample), output, model.sampling))
        if ours != raw.body(sample):
            raise AssertionError(f"raw body differs from openjudge's:\n{raw.body(sample)!r}\n{ours!r}")


class Timing(NamedTuple):
    """One timed run: wall and process CPU seconds, and the CPU seconds the collector took in it."""

    wall: float
    cpu: float
    gc: float


class _GcClock:
    """CPU time spent in the garbage collector while :attr:`on`, from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.on = False
        self.total = 0.0
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if not self.on:
            return
        if phase == "start":
            self._started = time.process_time()
        else:
            self.total += time.process_time() - self._started


_GC = _GcClock()


async def _timed(run: Callable[[], Awaitable[object]]) -> Timing:
    """Wall, process CPU and collector CPU of one awaited run, after a full collection."""
    gc.collect()
    _GC.total, _GC.on = 0.0, True
    cpu0, wall0 = time.process_time(), time.perf_counter()
    try:
        await run()
        return Timing(time.perf_counter() - wall0, time.process_time() - cpu0, _GC.total)
    finally:
        _GC.on = False


async def _pool(calls: Callable[[int], Awaitable[object]], n: int, concurrency: int) -> list[object]:
    """``calls(0..n-1)`` through ``concurrency`` workers, keeping each call's value."""
    jobs = iter(range(n))
    kept: list[object] = [None] * n

    async def worker() -> None:
        for i in jobs:
            kept[i] = await calls(i)

    async with asyncio.TaskGroup() as tg:
        for _ in range(concurrency):
            tg.create_task(worker())
    return kept


def measure_raw(
    base_url: str,
    case: str,
    n: int,
    concurrency: int,
    *,
    keep: Callable[[float, str], object] | None = None,
    tune_collector: bool = False,
) -> Timing:
    """Wall, CPU and collector CPU of n calls through raw aiohttp, after a warm-up round that opens the connections.

    With ``tune_collector`` the timed run has the collector's young threshold a grading run sets
    (:func:`openjudge.runner.batch_collector`): the floor under openjudge's setting.
    """
    client = RawClient(base_url, case, concurrency, keep=keep)
    _check_same_bodies(client, case)
    data = CASES[case][1](n)

    async def go() -> Timing:
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:
            await client.run(session, data[:concurrency])

            async def run() -> None:
                with batch_collector() if tune_collector else contextlib.nullcontext():
                    assert all(s == 3.0 for s in await client.run(session, data))

            return await _timed(run)

    return asyncio.run(go())


def measure_openjudge(
    base_url: str, case: str, n: int, concurrency: int, *, tune_collector: bool = True
) -> Timing:
    """Wall, CPU and collector CPU of n calls through openjudge over HTTP, after the same warm-up round."""
    model = OpenAIChatModel("judge", api_key="sk-bench", base_url=base_url, max_concurrency=concurrency)
    runner = case_runner(model, case, concurrency, tune_collector=tune_collector)
    data = CASES[case][1](n)

    async def go() -> Timing:
        await runner.arun(data[:concurrency])

        async def run() -> None:
            result = await runner.arun(data)
            assert sum(1 for r in result["judge0"] if getattr(r, "score", None) == 3.0) == n

        figures = await _timed(run)
        await model.aclose()
        return figures

    return asyncio.run(go())


FRAMEWORK_CALLS = 20_000
FRAMEWORK_RUNS_PER_ROUND = 5


def framework_runner() -> GradingRunner:
    """One LLM grader on an in-process judge: the framework measured without the network."""
    model = FunctionChatModel(reply, policy=ProviderPolicy(limits=ProviderLimits(max_concurrency=32)))
    return judge_runner(model, 1, 32)


def framework_timing(n: int = FRAMEWORK_CALLS) -> Timing:
    """n grading calls with an in-process judge: everything but the network."""
    runner = framework_runner()
    data = samples(n)

    async def main() -> Timing:
        await runner.arun(data[:500])  # warm caches
        return await _timed(lambda: runner.arun(data))

    return asyncio.run(main())


def framework_cpu(n: int = FRAMEWORK_CALLS) -> float:
    """CPU seconds per grading call with an in-process judge."""
    return framework_timing(n).cpu / n


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


UNTUNED = "openjudge with tune_collector=False"
RAISED = "raw under openjudge's young threshold"


def bench_ratios(n: int = 10_000, concurrency: int = 256, rounds: int = 5) -> None:
    """The speed goals as ratios to raw aiohttp, all measured in this one run.

    Absolute figures differ ~3x between machines of the same kind; ratios to the floor
    measured beside them do not. Each round measures raw and openjudge back to back (which
    goes first alternates between rounds); a goal is the median over rounds of each round's
    ratio. This machine's speed drifts by up to ~1.7x over tens of seconds, and a ratio of
    runs seconds apart follows that drift much less than a ratio of medians taken over minutes.
    """
    ideal = math.ceil(n / concurrency) * LATENCY_S
    cpu: dict[tuple[str, str], list[float]] = {}
    wall: dict[tuple[str, str], list[float]] = {}
    collector: dict[tuple[str, str], list[float]] = {}
    framework: list[float] = []
    framework_gc: list[float] = []

    def record(case: str, side: str, timing: Timing) -> None:
        cpu.setdefault((case, side), []).append(timing.cpu / n)
        wall.setdefault((case, side), []).append(timing.wall / ideal)
        collector.setdefault((case, side), []).append(timing.gc / n)

    def outside(case: str, side: str) -> float:
        """Median CPU per call with the collector's time taken out."""
        runs = zip(cpu[case, side], collector[case, side], strict=True)
        return _median([total - in_collector for total, in_collector in runs])

    def paired(case: str, side: str, floor: str = "raw") -> float:
        """The median over rounds of ``side``'s CPU per call over the floor's in the same round."""
        return _median([a / b for a, b in zip(cpu[case, side], cpu[case, floor], strict=True)])

    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        for round_ in range(rounds):
            # Several runs per round: one run lasts under a second, and this machine's speed
            # drifts by up to ~1.7x over seconds; a raw run spans ~8 s and averages that drift.
            runs = [framework_timing(FRAMEWORK_CALLS) for _ in range(FRAMEWORK_RUNS_PER_ROUND)]
            calls = FRAMEWORK_CALLS * FRAMEWORK_RUNS_PER_ROUND
            framework.append(sum(run.cpu for run in runs) / calls)
            framework_gc.append(sum(run.gc for run in runs) / calls)
            for case in CASES:
                sides = (("raw", measure_raw), ("openjudge", measure_openjudge))
                for side, measure in sides if round_ % 2 == 0 else sides[::-1]:
                    record(case, side, measure(server.base_url, case, n, concurrency))
            # Diagnostics on the short prompt: each side under the other's collector setting.
            untuned = measure_openjudge(server.base_url, "short", n, concurrency, tune_collector=False)
            record("short", UNTUNED, untuned)
            record(
                "short", RAISED, measure_raw(server.base_url, "short", n, concurrency, tune_collector=True)
            )
            kept = measure_raw(server.base_url, "short", n, concurrency, keep=Record)
            record("short", "raw keeping a record per result", kept)
    print(f"  {n:,} calls per run at C={concurrency}, 200 ms judge, {rounds} rounds, medians ({load()}):")
    for (case, side), values in cpu.items():
        body = "~1.2 kB" if case == "short" else "~3.5 kB"
        print(
            f"    {case} prompt ({body} body, json_schema) {side}: {_median(values) * 1e6:.0f} us CPU per call "
            f"(runs {', '.join(f'{v * 1e6:.0f}' for v in values)}; of it in the garbage collector "
            f"{_median(collector[case, side]) * 1e6:.0f} us), wall/ideal {_median(wall[case, side]):.2f}"
        )
    print(
        f"    framework, in-process judge: {_median(framework) * 1e6:.1f} us CPU per call "
        f"(runs {', '.join(f'{v * 1e6:.1f}' for v in framework)}; of it in the garbage collector "
        f"{_median(framework_gc) * 1e6:.1f} us; each round {FRAMEWORK_RUNS_PER_ROUND} runs of "
        f"{FRAMEWORK_CALLS:,} calls, each run keeping its results)"
    )
    report(
        "framework CPU per call / raw aiohttp's per request (short prompt)",
        _median([a / b for a, b in zip(framework, cpu["short", "raw"], strict=True)]),
        "x",
        0.10,
        bound="the runner's pool, the LLM grader (prompt rendering, verdict validation into a "
        "GraderScore) and the engine (limits, policy, usage)",
    )
    bounds = {
        "short": "aiohttp's own per-request CPU (the floor) plus the framework's work above. The run "
        "raises the collector's young threshold (tune_collector): results kept while calls are in "
        "flight would otherwise make it scan every call's in-flight objects every hundred calls or "
        "so, as the diagnostic lines below show",
        "long": "as the short prompt, plus rendering and escaping 3 kB of inputs (escape_tags scans "
        "ASCII text without a position map; non-ASCII text is folded character by character)",
    }
    for case in CASES:
        report(
            f"openjudge over HTTP / raw aiohttp, CPU per call, C={concurrency}, {case} prompt + json_schema",
            paired(case, "openjudge"),
            "x",
            1.25,
            bound=bounds[case],
        )
        # A diagnostic, not the goal: the same ratio with each side's collector time taken out.
        # Pausing the collector for the timed run removes about that time (measured: openjudge
        # 548 -> 497, 533 -> 480, 582 -> 522 us), so the split is additive, not a guess.
        ours, floor_outside = outside(case, "openjudge"), outside(case, "raw")
        print(
            f"    {case} prompt outside the garbage collector (diagnostic): openjudge {ours * 1e6:.0f} us, "
            f"raw {floor_outside * 1e6:.0f} us, {ours / floor_outside:.2f}x"
        )
        if case == "short":
            # Diagnostics: the ratio with the collector's default threshold, and the floor
            # under the threshold openjudge's run sets (raw aiohttp keeps floats: it barely moves).
            print(
                f"    short prompt, openjudge with tune_collector=False (diagnostic): "
                f"{paired('short', UNTUNED):.2f}x raw aiohttp\n"
                f"    short prompt, openjudge / raw aiohttp under openjudge's young threshold (diagnostic): "
                f"{paired('short', 'openjudge', RAISED):.2f}x\n"
                f"    short prompt, ratio of the medians over rounds (diagnostic): "
                f"{_median(cpu['short', 'openjudge']) / _median(cpu['short', 'raw']):.2f}x"
            )


def bench_sdk(n: int = 2_000, concurrency: int = 256) -> None:
    """The openai SDK's typed ``create()`` against openjudge, same messages (fewer calls: the SDK is slow)."""
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        client = RawClient(server.base_url, "short", concurrency)
        data = samples(n)
        sdk = openai.AsyncOpenAI(api_key="sk-bench", base_url=server.base_url, max_retries=0)

        async def one(sample: dict[str, str]) -> None:
            completion = await sdk.chat.completions.create(  # type: ignore[call-overload]  # wire dicts
                model="judge",
                messages=[
                    {"role": "system", "content": client.system},
                    {"role": "user", "content": client.user.format(**sample)},
                ],
                response_format=client.response_format,
            )
            assert json.loads(completion.choices[0].message.content or "")["score"] == 3

        async def go() -> Timing:
            await _pool(lambda i: one(data[i]), concurrency, concurrency)
            figures = await _timed(lambda: _pool(lambda i: one(data[i]), n, concurrency))
            await sdk.close()
            return figures

        sdk_cpu = asyncio.run(go()).cpu
        oj_cpu = measure_openjudge(server.base_url, "short", n, concurrency).cpu
    print(
        f"  {n:,} calls at C={concurrency} ({load()}): openai SDK {sdk_cpu / n * 1e6:.0f} us CPU per call, "
        f"openjudge {oj_cpu / n * 1e6:.0f} us"
    )
    report(
        "openjudge CPU per call / openai SDK's",
        oj_cpu / sdk_cpu,
        "",
        1 / 8,
        bound="the SDK's typed request and response models and httpx's pool dominate its figure",
    )


def bench_scale(n: int = 10_000, concurrency: int = 1024) -> None:
    """10,000 judge calls at C=1024, with raw aiohttp beside: at 5,000 requests/s the cores bound the wall."""
    ideal = math.ceil(n / concurrency) * LATENCY_S
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        floor_wall, floor_cpu, _ = measure_raw(server.base_url, "short", n, concurrency)
        wall, cpu, _ = measure_openjudge(server.base_url, "short", n, concurrency)
        peak = server.stats().peak_in_flight
    print(f"  {n:,} calls at C={concurrency}, ideal {ideal:.2f} s ({load()}):")
    print(
        f"    raw aiohttp ClientSession: {floor_cpu / n * 1e6:.0f} us CPU per call, wall/ideal {floor_wall / ideal:.2f}"
    )
    print(
        f"    openjudge: {cpu / n * 1e6:.0f} us CPU per call, wall/ideal {wall / ideal:.2f}; server peak {peak}"
    )
    report(
        f"{n:,} calls, C={concurrency}: wall / ideal",
        wall / ideal,
        "",
        2.5,
        bound="5,000 requests/s at ideal: client and server CPU per request on two shared cores "
        "(raw aiohttp's ratio above is the floor)",
    )


def bench_waves(concurrency: int = 32) -> None:
    """3 LLM graders x 64 samples at C=32 against a 200 ms server (the VERL guide's case)."""
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        model = OpenAIChatModel(
            "judge", api_key="sk-bench", base_url=server.base_url, max_concurrency=concurrency
        )
        runner = judge_runner(model, 3, concurrency)
        data = samples(64)
        ideal = math.ceil(3 * 64 / concurrency) * LATENCY_S

        async def main() -> list[float]:
            await runner.arun(data[:8])  # open connections
            walls = []
            for _ in range(3):
                started = time.perf_counter()
                result = await runner.arun(data)
                walls.append(time.perf_counter() - started)
                assert all(getattr(r, "score", None) == 3.0 for col in result.values() for r in col)
            await model.aclose()
            return walls

        walls = asyncio.run(main())
        peak = server.stats().peak_in_flight
    print(f"  walls {[round(w, 3) for w in walls]} s, ideal {ideal:.2f} s, server peak {peak} ({load()})")
    report(
        "3 graders x 64 samples, C=32, 200 ms judge: wall / ideal (median of 3)",
        sorted(walls)[1] / ideal,
        "",
        1.15,
        openjudge=1.55,
        bound="six 200 ms waves; the excess is the per-wave client and server CPU",
    )


def _rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _memory_child(n: int) -> None:
    model = FunctionChatModel(reply, policy=ProviderPolicy(limits=ProviderLimits(max_concurrency=256)))
    runner = judge_runner(model, 1, 256)
    data = samples(n)  # all 100,000 queued up front

    peak = [0.0]

    async def main(items: list[dict[str, str]]) -> int:
        count = 0
        async with runner.astream(items) as stream:
            async for _ in stream:
                count += 1
                if count % 500 == 0:
                    peak[0] = max(peak[0], _rss_mib())
        return count

    asyncio.run(main(data[:1000]))  # warm up: first-use caches, pydantic validators
    gc.collect()
    before = _rss_mib()
    peak[0] = before
    assert asyncio.run(main(data)) == n
    print(f"{before:.1f} {peak[0]:.1f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}")
    print(peak[0] - before)


def bench_memory(n: int = 100_000) -> None:
    """RSS growth of a process that streams 100,000 queued samples through the runner."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.runner", "_memory_child", str(n)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    before, peak, lifetime_peak = out.strip().splitlines()[-2].split()
    print(
        f"  RSS {before} MiB before the run (samples queued), {peak} MiB at most during it; process peak {lifetime_peak} MiB"
    )
    report(
        f"RSS growth while {n:,} queued samples stream through (astream, function judge)",
        float(out.strip().splitlines()[-1]),
        " MiB",
        50,
        bound="O(concurrency) work in flight; results are handed out, not kept",
    )


def _tracked_by_type() -> Counter[str]:
    gc.collect()
    return Counter(type(o).__name__ for o in gc.get_objects())


def _probe_each_side(
    base_url: str,
    data: list[dict[str, str]],
    concurrency: int,
    probe: Callable[[Callable[[], Awaitable[object]]], Awaitable[ProbeT]],
) -> tuple[ProbeT, ProbeT]:
    """``probe(run)`` around one run of ``data`` through raw aiohttp, then through openjudge.

    Each side first grades ``data[:concurrency]`` once, so its connections are open and its
    caches warm when the probed run starts.
    """

    async def raw() -> ProbeT:
        client = RawClient(base_url, "short", concurrency)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
            await client.run(session, data[:concurrency])
            return await probe(lambda: client.run(session, data))

    async def ours() -> ProbeT:
        model = OpenAIChatModel("judge", api_key="sk-bench", base_url=base_url, max_concurrency=concurrency)
        runner = case_runner(model, "short", concurrency)
        await runner.arun(data[:concurrency])
        found = await probe(lambda: runner.arun(data))
        await model.aclose()
        return found

    return asyncio.run(raw()), asyncio.run(ours())


async def _census_in_flight(start: Callable[[], Awaitable[object]]) -> Counter[str]:
    """Objects the collector tracks while the calls ``start`` sends wait on the judge, by type."""
    before = _tracked_by_type()
    task = asyncio.ensure_future(start())
    await asyncio.sleep(0.5)  # every call is sent and waiting (the judge answers after 1 s)
    during = _tracked_by_type()
    await task
    return during - before


def bench_census(concurrency: int = 256) -> None:
    """Objects the collector tracks per call in flight, openjudge against raw aiohttp.

    Deterministic where CPU figures are noisy, and what the collector's share follows: once
    results are kept, collections come often enough to scan each in-flight object about once
    or twice (bench_ratios' collector figures). Workers' own objects count too (one per call).
    """
    with JudgeServerProcess(latency_s=1.0) as server:
        floor, openjudge = _probe_each_side(
            server.base_url, samples(concurrency), concurrency, _census_in_flight
        )
    per_call = {name: sum(c.values()) / concurrency for name, c in (("raw", floor), ("openjudge", openjudge))}
    extra = openjudge - floor
    print(
        f"  tracked objects per call in flight at C={concurrency}: raw aiohttp {per_call['raw']:.1f}, "
        f"openjudge {per_call['openjudge']:.1f}; openjudge's extra, by type: "
        + ", ".join(f"{name} {count / concurrency:.1f}" for name, count in extra.most_common(12))
    )
    # A diagnostic with no target of its own: the CPU ratios in bench_ratios are the goals.
    print(
        f"tracked objects per call in flight, openjudge / raw aiohttp: "
        f"{per_call['openjudge'] / per_call['raw']:.2f}x\n"
        "    made of: coroutine frames of the call path (runner, grader, judge rounds, chat client, "
        "engine, transport, HTTP client), the prepared call and request, and each runner worker's "
        "task state (anyio's, and two timers: the runner's per pair, the HTTP client's per request)"
    )


def _score_and_reason(score: float, reason: str) -> object:
    return {"score": score, "reason": reason}  # only atoms: the collector never tracks this dict


def _reason(score: float, reason: str) -> object:
    return reason


KEEPS: dict[str, Callable[[float, str], object] | None] = {
    "a float (the floor)": None,
    "the reason, a str (not an object the collector counts)": _reason,
    "a dict of score and reason (counted, never tracked)": _score_and_reason,
    "a Record (one tracked object)": Record,
}


def bench_keeping(n: int = 6_000, concurrency: int = 256, rounds: int = 3) -> None:
    """What keeping one object per result costs raw aiohttp itself, against openjudge in the same run.

    CPython's collector runs its youngest generation when objects the collector counts
    (containers, tracked or not) outnumber the ones freed by 700, and scans what was allocated
    since and still lives: mostly the calls in flight. Counted from ``gc.callbacks`` over 6,000
    calls at C=256, raw aiohttp keeping floats ran it 33 times over ~1.6k objects each; keeping a
    Record per result, 45 times over ~5.7k. Kept results make each collection scan many more
    calls in flight. So this is the floor for any client that returns result objects, as
    openjudge must; openjudge is measured here under the same default threshold
    (``tune_collector=False``). A diagnostic with no target of its own: the goals are in bench_ratios.
    """
    cpu: dict[str, list[float]] = {}
    collector: dict[str, list[float]] = {}
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        for _ in range(rounds):
            for label in (*KEEPS, UNTUNED):
                if label in KEEPS:
                    timing = measure_raw(server.base_url, "short", n, concurrency, keep=KEEPS[label])
                else:  # under the same collector threshold as the raw lines
                    timing = measure_openjudge(server.base_url, "short", n, concurrency, tune_collector=False)
                cpu.setdefault(label, []).append(timing.cpu / n)
                collector.setdefault(label, []).append(timing.gc / n)
    print(f"  {n:,} calls per run at C={concurrency}, 200 ms judge, {rounds} rounds, medians ({load()}):")
    floor = _median(cpu["a float (the floor)"])
    for label, values in cpu.items():
        side = label if label == UNTUNED else f"raw aiohttp keeping {label}"
        print(
            f"    {side}: {_median(values) * 1e6:.0f} us CPU per call ({_median(values) / floor:.2f}x the floor; "
            f"of it in the garbage collector {_median(collector[label]) * 1e6:.0f} us)"
        )
    print(
        "    bounded by: how often the collector's youngest generation runs (once any counted object "
        "is kept per result) times the objects of the calls in flight it then scans"
    )


def measure_layer(base_url: str, layer: str, n: int, concurrency: int) -> Timing:
    """n calls over HTTP through openjudge's stack cut at ``layer`` (see :func:`bench_layers`)."""
    model = OpenAIChatModel("judge", api_key="sk-bench", base_url=base_url, max_concurrency=concurrency)
    runner = case_runner(model, "short", concurrency, tune_collector=layer == RUNNER_TUNED)
    grader = runner.grader_configs["judge0"].grader
    assert isinstance(grader, LLMGrader)
    output = OutputSpec.for_model(grader.structured_model)
    data = samples(n)
    messages = [grader.build_messages(sample) for sample in data]  # the prompt is the grader's work

    async def transport(i: int) -> object:
        return (await model.transport.attempt(ChatRequest(messages[i], output, model.sampling), 60.0)).content

    async def chat(i: int) -> object:
        return (await model.achat(messages[i], output=output)).content

    async def grade_and_drop(i: int) -> object:
        await grader.aevaluate(**data[i])
        return None

    async def grade(i: int) -> object:
        return await grader.aevaluate(**data[i])

    layers: dict[str, Callable[[int], Awaitable[object]]] = {
        "transport": transport,
        "chat client": chat,
        "grader, results dropped": grade_and_drop,
        "grader, results kept": grade,
    }

    async def go() -> Timing:
        await runner.arun(data[:concurrency])  # open the connections
        if layer.startswith("runner"):
            figures = await _timed(lambda: runner.arun(data))
        else:
            figures = await _timed(lambda: _pool(layers[layer], n, concurrency))
        await model.aclose()
        return figures

    return asyncio.run(go())


RUNNER_TUNED = "runner, young threshold raised (as users run it)"
LAYERS = (
    "transport",
    "chat client",
    "grader, results dropped",
    "grader, results kept",
    "runner, tune_collector=False",
    RUNNER_TUNED,
)


def bench_layers(n: int = 6_000, concurrency: int = 256, rounds: int = 3) -> None:
    """Where openjudge's CPU over HTTP goes, layer by layer, against raw aiohttp in the same run.

    Each layer adds one part of the stack over the one above it: the transport alone (one
    attempt), the chat client (engine: limits, policy, usage), the LLM grader (prompt, verdict,
    score) with its results dropped and then kept, and the runner, first under the collector's
    default threshold as every layer above, then as users run it. With 256 calls interleaved
    every call's data is cache-cold, so a layer costs several times its in-process figure.
    """
    cpu: dict[str, list[float]] = {}
    collector: dict[str, list[float]] = {}
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        for _ in range(rounds):
            for layer in ("raw aiohttp", *LAYERS):
                if layer == "raw aiohttp":
                    timing = measure_raw(server.base_url, "short", n, concurrency)
                else:
                    timing = measure_layer(server.base_url, layer, n, concurrency)
                cpu.setdefault(layer, []).append(timing.cpu / n)
                collector.setdefault(layer, []).append(timing.gc / n)
    print(f"  {n:,} calls per run at C={concurrency}, 200 ms judge, {rounds} rounds, medians ({load()}):")
    floor = _median(cpu["raw aiohttp"])
    for layer, values in cpu.items():
        print(
            f"    {layer}: {_median(values) * 1e6:.0f} us CPU per call ({_median(values) / floor:.2f}x raw; "
            f"of it in the garbage collector {_median(collector[layer]) * 1e6:.0f} us)"
        )


def _instructions_child(n: int) -> None:
    """n grading calls with an in-process judge after a warm-up (run under callgrind)."""
    runner = framework_runner()
    data = samples(n)

    async def grade() -> None:
        await runner.arun(samples(300))
        await runner.arun(data)

    asyncio.run(grade())


def _instructions(n: int) -> int:
    """Instructions callgrind counts for a whole :func:`_instructions_child` process."""
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    command += [sys.executable, "-m", "bench.runner", "_instructions_child", str(n)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    collected = [line for line in done.stderr.splitlines() if "Collected :" in line]
    return int(collected[-1].rsplit(":", 1)[1])


def bench_instructions(small: int = 1_000, large: int = 3_000) -> None:
    """Instructions per in-process judge call: the difference of two runs, so start-up cancels out.

    CPU time on a shared machine drifts by up to ~1.7x over seconds; instruction counts do
    not, so this is the figure to compare two versions of the call path by. Needs valgrind.
    """
    if shutil.which("valgrind") is None:
        print("instructions per in-process judge call: skipped (valgrind is not installed)")
        return
    per_call = (_instructions(large) - _instructions(small)) / (large - small)
    print(
        f"instructions per in-process judge call (callgrind, runner + LLM grader + function judge, "
        f"{large:,} minus {small:,} calls): {per_call / 1e3:.0f}k"
    )
    print(
        "    bounded by: the Python calls on the path (runner pair, mapper, prompt rendering, chat "
        "client, engine, verdict parsing, the score) and the objects each builds; 177k at 85179c8"
    )


# -- bytecodes per call over HTTP: the deterministic figure under the HTTP ratios ------------

_LAYERS = (
    ("openjudge/runner/", "runner"),
    ("openjudge/graders/", "grader"),
    ("openjudge/models/schema/", "grader"),  # prompt templates: rendered by the grader
    ("openjudge/models/", "chat client and engine"),
    ("openjudge/providers/", "transport"),
    ("openjudge/results.py", "results"),
)


def _layer(filename: str) -> str | None:
    """Which openjudge layer a code object belongs to (``None``: aiohttp, asyncio, the bench)."""
    where = filename.replace(os.sep, "/")
    for part, layer in _LAYERS:
        if part in where:
            return layer
    return None


async def _bytecodes(run: Callable[[], Awaitable[object]]) -> Counter[tuple[str, str]]:
    """Bytecodes each Python function runs while ``run()`` is awaited, by (file, qualified name).

    ``sys.settrace`` with opcode events: exact and repeatable, unlike CPU time. It sees only
    frames started after it is set, which is every frame of the calls ``run`` makes.
    """
    counts: Counter[tuple[str, str]] = Counter()

    def trace(frame: FrameType, event: str, arg: object) -> Any:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        key = (frame.f_code.co_filename, frame.f_code.co_qualname)

        def step(frame: FrameType, event: str, arg: object) -> Any:
            if event == "opcode":
                counts[key] += 1
            return step

        return step

    sys.settrace(trace)
    try:
        await run()
    finally:
        sys.settrace(None)
    return counts


def bench_bytecodes(n: int = 2_000, concurrency: int = 256) -> None:
    """Python bytecodes run per call over HTTP, openjudge against raw aiohttp, and where openjudge's go.

    The HTTP ratios in bench_ratios move by a few percent between runs on a shared machine;
    this count does not move at all, so it is the figure to compare two versions of the HTTP
    path by. It tracks CPU: callgrind counted ~95 machine instructions per bytecode on both
    sides (at C=64 on 19bb992, raw aiohttp 473k instructions for 4,832 bytecodes per call,
    openjudge 625k for 6,483), since the C work (dicts, allocation, frames) follows the
    Python code that asks for it. A diagnostic with no target of its own: the goals are in
    bench_ratios.
    """
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        floor, openjudge = _probe_each_side(server.base_url, samples(n), concurrency, _bytecodes)
    per_call = {name: sum(c.values()) / n for name, c in (("raw", floor), ("openjudge", openjudge))}
    layers: Counter[str] = Counter()
    for (filename, _), count in openjudge.items():
        layers[_layer(filename) or "aiohttp, asyncio and anyio"] += count
    top = [(name, count) for (filename, name), count in openjudge.most_common() if _layer(filename)][:8]
    print(
        f"Python bytecodes per call over HTTP (C={concurrency}, {n:,} calls, short prompt): "
        f"raw aiohttp {per_call['raw']:,.0f}, openjudge {per_call['openjudge']:,.0f}: "
        f"{per_call['openjudge'] / per_call['raw']:.3f}x"
    )
    print(
        "    openjudge's, by layer: "
        + ", ".join(f"{layer} {count / n:,.0f}" for layer, count in layers.most_common())
    )
    print("    openjudge's busiest functions: " + ", ".join(f"{name} {count / n:.0f}" for name, count in top))


BENCHES = {
    "overhead": bench_overhead,
    "census": bench_census,
    "keeping": bench_keeping,
    "layers": bench_layers,
    "ratios": bench_ratios,
    "sdk": bench_sdk,
    "scale": bench_scale,
    "waves": bench_waves,
    "memory": bench_memory,
    "instructions": bench_instructions,
    "bytecodes": bench_bytecodes,
}


def main() -> None:
    if sys.argv[1:2] == ["_memory_child"]:
        _memory_child(int(sys.argv[2]))
        return
    if sys.argv[1:2] == ["_instructions_child"]:
        _instructions_child(int(sys.argv[2]))
        return
    for name in sys.argv[1:] or list(BENCHES):
        BENCHES[name]()


if __name__ == "__main__":
    main()
