"""The real judge's figures for ``bench/transformers_local.py`` (see its docstring, "The real judge").

SmolLM2-135M-Instruct in process (JSON and logprobs modes) against transformers' own batched
``generate`` of the same prompts and token budget, and behind llama.cpp's server, interleaved
round by round so that the machine's load weighs on every side alike.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import torch

from openjudge.graders.llm_grader import LLMGrader
from openjudge.models.policy import ProviderPolicy, RetryPolicy
from openjudge.providers.openai import OpenAIChatModel
from openjudge.providers.transformers import TransformersChatModel
from openjudge.results import GraderResult, GraderScore
from tests import real_model

MAX_NEW_TOKENS = 96
TARGET = 1.5
PATIENT = ProviderPolicy(timeout_s=3600.0, retry=RetryPolicy(max_attempts=1))
"""One attempt, no timeout that a loaded machine could trip: the bench measures, it does not retry."""


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f}"


def scored(results: Sequence[GraderResult]) -> int:
    return sum(isinstance(r, GraderScore) for r in results)


def on_thread(fn: Callable[[], object]) -> float:
    """Wall time of ``fn`` on a fresh thread under inference mode, as the provider runs its batches."""
    elapsed: list[float] = []

    def run() -> None:
        started = time.perf_counter()
        with torch.inference_mode():
            fn()
        elapsed.append(time.perf_counter() - started)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return elapsed[0]


def timed_async(work: Callable[[], Awaitable[list[GraderResult]]]) -> tuple[float, list[GraderResult]]:
    async def run() -> tuple[float, list[GraderResult]]:
        started = time.perf_counter()
        results = await work()
        return time.perf_counter() - started, results

    return asyncio.run(run())


def real_figures(rounds: int, threads: int, *, server: bool = True) -> None:
    """Print every run of every side, then each judge's wall over the anchor's, per round and median."""
    gguf = real_model.smollm2_gguf()
    judge = TransformersChatModel(
        str(gguf), device="cpu", max_batch_size=16, max_new_tokens=MAX_NEW_TOKENS, policy=PATIENT
    )
    started = time.perf_counter()
    loaded = judge.local_model.load()  # converts the GGUF on this machine's first run
    print(f"real judge: {gguf.name}, loaded in {time.perf_counter() - started:.1f}s; {threads} torch threads")
    graders = {
        "in-process JSON": LLMGrader(judge, template=real_model.TEMPLATE, score_range=(1, 5)),
        "in-process logprobs": LLMGrader(
            judge, template=real_model.TEMPLATE, score_range=(1, 5), score_mode="logprobs"
        ),
    }
    inputs = [{"question": q, "answer": a} for q, a, _ in real_model.PAIRS]
    conversations = [graders["in-process JSON"].build_messages(x) for x in inputs]
    prompts = [  # exactly what the provider encodes
        loaded.chat_ids(c, add_generation_prompt=True, what="messages", without_template="")
        for c in conversations
    ]
    generate = cast("Callable[..., torch.Tensor]", loaded.model.generate)
    generated: list[int] = []

    def baseline() -> None:
        width = max(map(len, prompts))
        pad = loaded.pad_token_id
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        out = generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=MAX_NEW_TOKENS,
            do_sample=False,
            pad_token_id=pad,
            eos_token_id=list(loaded.eos_token_ids),
        )
        generated.append(out.shape[1] - width)

    sides: dict[str, Callable[[], tuple[float, str]]] = {}

    def anchor() -> tuple[float, str]:
        wall = on_thread(baseline)
        return wall, f"{generated[-1]} steps"

    sides["batched generate (anchor)"] = anchor
    for label, grader in graders.items():

        def through(g: LLMGrader = grader) -> tuple[float, str]:
            wall, results = timed_async(lambda: _gather(g, inputs))
            return wall, f"scored {scored(results)}/10"

        sides[label] = through
    server_context = real_model.llama_server(gguf, threads=threads) if server else None
    base_url = server_context.__enter__() if server_context is not None else None
    try:
        if base_url is not None:
            remote = OpenAIChatModel(
                "smollm2",
                api_key="none",
                base_url=base_url,
                temperature=0.0,
                max_tokens=MAX_NEW_TOKENS,
                structured_output="json_object",  # llama.cpp answers json_schema with HTTP 500
                policy=PATIENT,
            )
            served = LLMGrader(remote, template=real_model.TEMPLATE, score_range=(1, 5))

            def behind_server() -> tuple[float, str]:
                wall, results = timed_async(lambda: _gather(served, inputs))
                return wall, f"scored {scored(results)}/10"

            sides["llama.cpp server, json_object"] = behind_server
        _rounds(sides, rounds)
    finally:
        if server_context is not None:
            server_context.__exit__(None, None, None)
        judge.close()


async def _gather(grader: LLMGrader, inputs: Sequence[dict[str, Any]]) -> list[GraderResult]:
    return list(await asyncio.gather(*(grader.aevaluate(**x) for x in inputs)))


def _rounds(sides: dict[str, Callable[[], tuple[float, str]]], rounds: int) -> None:
    """Run every side once per round, rotating who goes first; print each run, then the ratios.

    CPU seconds are this process's (all its threads): the in-process sides' work, which
    other processes' load inflates far less than wall time (llama.cpp's server runs in its
    own process: its CPU time is not seen here).
    """
    names = list(sides)
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    for round_ in range(rounds):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            cpu = time.process_time()
            wall, note = sides[name]()
            cpus[name].append(time.process_time() - cpu)
            walls[name].append(wall)
            print(
                f"  round {round_ + 1} {name:<32} {wall:7.1f}s wall {cpus[name][-1]:7.1f}s CPU  {note:<14} {load()}",
                flush=True,
            )
    print(f"over the anchor in the same round (target <= {TARGET}x wall for the in-process judge):")
    for name in names[1:]:
        for label, series in (("wall", walls), ("CPU", cpus)):
            if label == "CPU" and name.startswith("llama.cpp"):
                continue
            ratios = [w / a for w, a in zip(series[name], series[names[0]], strict=True)]
            listed = ", ".join(f"{r:.2f}" for r in ratios)
            print(f"  {name:<32} {label:<4} median {statistics.median(ratios):.2f}x  (rounds: {listed})")
