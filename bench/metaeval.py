"""`openjudge meta-eval` overhead per labelled item, beyond the judge calls themselves.

    python -m bench.metaeval [N]

For N labelled pairs (default 2,000) and N scored responses, with an in-process judge
that answers at once (``FunctionChatModel``), it times, best of three:

* grading: the graders over the very samples meta-eval builds, with plain
  ``GradingRunner`` passes (one per grader, as meta-eval runs them): the judge calls;
* meta-eval: ``collect`` + ``summarize`` (1,000 bootstrap resamples) + the text table and
  the HTML report.

overhead per item = (meta-eval - grading) / N. Target: <= 2 ms per labelled item. What
bounds it: building the samples and reading results into arrays (O(judgements)), then the
bootstrap: O(1,000 x N) per rate, O(1,000 x N) per Spearman, and O(1,000 x cells x log L)
per Kendall (cells: distinct (score, label) pairs). The figure is per item, so it falls as
N grows until the bootstrap dominates. On a shared machine figures are noisy: the load
average is printed with them.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Awaitable, Callable, Sequence

import anyio
from pydantic import JsonValue

from openjudge.graders.comparison import PairwiseJudge
from openjudge.graders.comparison.prompts import pairwise_template
from openjudge.graders.llm_grader import LLMGrader
from openjudge.metaeval._console import render_report
from openjudge.metaeval._html import render_html
from openjudge.metaeval._items import LabelledSet, PairItem, PairLabel, PairwiseSet, PointItem, PointwiseSet
from openjudge.metaeval._metrics import summarize
from openjudge.metaeval._runs import collect
from openjudge.models.chat_model import ChatRequest
from openjudge.models.schema.prompt_template import LanguageEnum
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel

TARGET_MS = 2.0
WINNERS: tuple[PairLabel, PairLabel] = ("A", "B")
_ITEM = re.compile(r"item (\d+)")


def pair_reply(request: ChatRequest) -> str:
    k = int(_ITEM.findall(str(request.messages[-1]["content"]))[0])
    return json.dumps({"reason": "ok", "winner": "AB"[k % 2] if k % 7 else "tie"})


def score_reply(request: ChatRequest) -> str:
    k = int(_ITEM.findall(str(request.messages[-1]["content"]))[0])
    return json.dumps({"reason": "ok", "score": 1 + (k * 7) % 5})


def graders() -> dict[str, GraderConfig]:
    pair = PairwiseJudge(
        FunctionChatModel(pair_reply),
        pairwise_template(LanguageEnum.EN, None, with_reference=False),
        name="pair",
    )
    single = LLMGrader(
        FunctionChatModel(score_reply), name="single", template="{query}\n{response}", score_range=(1, 5)
    )
    return {"pair": GraderConfig(pair), "single": GraderConfig(single)}


def pairs(n: int) -> PairwiseSet:
    return PairwiseSet(
        tuple(
            PairItem(
                id=str(k),
                line=k + 1,
                prompt=f"item {k}: which is better?",
                response_a=f"answer {k} " + "word " * (k % 9),
                response_b=f"reply {k} " + "word " * (k % 5),
                label=WINNERS[k % 2] if k % 5 else "tie",
            )
            for k in range(n)
        )
    )


def points(n: int) -> PointwiseSet:
    return PointwiseSet(
        tuple(
            PointItem(
                id=str(k), line=k + 1, prompt=f"item {k}", response=f"answer {k}", label=float(1 + k % 5)
            )
            for k in range(n)
        )
    )


def samples_of(name: str, data: LabelledSet) -> list[dict[str, JsonValue]]:
    """The samples meta-eval builds for a grader (swapped order included for the pair grader)."""
    if isinstance(data, PairwiseSet):
        if name == "pair":
            return [i.pair_sample(swapped=s) for s in (False, True) for i in data.items]
        return [i.single_sample(side) for side in ("A", "B") for i in data.items]
    return [i.single_sample() for i in data.items]


def best_of(runs: int, work: Callable[[], Awaitable[None]]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        anyio.run(work)
        times.append(time.perf_counter() - started)
    return min(times)


def measure(label: str, data: LabelledSet, names: Sequence[str]) -> None:
    configs = {k: v for k, v in graders().items() if k in names}
    n = len(data.items)
    judgements = sum(len(samples_of(name, data)) for name in configs)

    async def grading() -> None:
        for name, config in configs.items():
            await GradingRunner({name: config}, max_concurrency=32, show_progress=False).arun(
                samples_of(name, data)
            )

    async def metaeval() -> None:
        run = await collect(GradingRunner(configs, max_concurrency=32, show_progress=False), data)
        report = summarize(run, bootstrap=1000)
        render_report(report)
        render_html(report)

    anyio.run(grading)  # warm-up: imports, caches
    plain = best_of(3, grading)
    full = best_of(3, metaeval)
    overhead_ms = (full - plain) / n * 1000
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{label}: {n} items, {judgements} judgements: grading {plain:.2f} s, meta-eval {full:.2f} s -> "
        f"overhead {overhead_ms:.3f} ms per item (target <= {TARGET_MS:g} ms) "
        f"{'MET' if overhead_ms <= TARGET_MS else 'NOT MET'}; load average {load}"
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    measure("pairs, a pair grader and a single grader", pairs(n), ["pair", "single"])
    measure("scored responses, a single grader (Spearman, Kendall)", points(n), ["single"])


if __name__ == "__main__":
    main()
