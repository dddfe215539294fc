"""The floor every HTTP goal is a ratio to: raw aiohttp doing openjudge's work, measured beside it.

``measure_raw`` and ``measure_openjudge`` time the same calls through each side against
one judge server; ``probe_each_side`` runs any probe (object census, bytecode count)
around one run of each.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
import orjson

from bench.common import TEMPLATE, Timing, reply, samples, timed
from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.chat_model import ChatRequest, OutputSpec
from openjudge.providers import _json
from openjudge.providers.openai import OpenAIChatModel
from openjudge.runner import batch_collector
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel

ProbeT = TypeVar("ProbeT")
UNTUNED = "openjudge with tune_collector=False"


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
        request = ChatRequest(grader.build_messages(sample), output, model.sampling)
        # What goes on the wire once the mode is found (the test judge takes json_schema); wire_body
        # is the judge cache's key, which marks a mode found per server and is never sent.
        ours = _json.dumps(model.transport.params(request, "json_schema"))
        if ours != raw.body(sample):
            raise AssertionError(f"raw body differs from openjudge's:\n{raw.body(sample)!r}\n{ours!r}")


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

            return await timed(run)

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

        figures = await timed(run)
        await model.aclose()
        return figures

    return asyncio.run(go())


def probe_each_side(
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
