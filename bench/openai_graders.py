"""Per-call cost of OpenAI graders run as openjudge graders, and the import cost of their metric libraries.

Run: ``python bench/openai_graders.py [--calls N] [--repeats R]`` from the repository root.

Targets (per call, best of R repeats of N sequential calls in one event loop):

* ``string_check``: under 50 µs, bounded by parsing the response as JSON once, filling the
  templates and validating a ``GraderScore`` (openjudge's own ``string_match`` is timed
  beside it); the guide's tool-call ``multi``: under 100 µs (sub-graders that only
  compute run one after another, without a task group);
* ``text_similarity``: the library's own time for the metric plus the same overhead; the
  metric alone is timed beside it, so the overhead can be read off;
* ``python``: one sandboxed interpreter start per call (50-100 ms on the backend ``auto``
  picks); a bare ``python -I -S -c pass`` start is printed beside it, since that bounds it;
* import of each metric library in a fresh interpreter: the figures docs/openai-graders.md
  quotes (rapidfuzz ~0.1 s, NLTK's translate modules 0.7-0.9 s, rouge-score ~1.0 s).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import subprocess
import sys
import time
from collections.abc import Callable

from openjudge.graders.openai import OpenAIGrader, from_openai_grader
from openjudge.graders.openai._similarity import metric_for
from openjudge.graders.openai._spec import SimilarityMetric
from openjudge.graders.text.string_match import StringMatchGrader

TARGET_RULE_US = 50.0
TARGET_PYTHON_MS = 100.0

MULTI: dict[str, object] = {
    "type": "multi",
    "graders": {
        "name": {"name": "n", "type": "string_check", "operation": "eq",
                 "input": "{{sample.output_tools[0].function.name}}", "reference": "{{item.name}}"},
        "arguments": {"name": "a", "type": "string_check", "operation": "eq",
                      "input": "{{sample.output_tools[0].function.arguments}}", "reference": "{{item.arguments}}"},
    },
    "calculate_output": "0.5 * name + 0.5 * arguments",
}  # fmt: skip
CALL = {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
TEXT = "the quick brown fox jumps over the lazy dog near the river bank today"
REFERENCE = "a quick brown fox jumped over a lazy dog by the river bank"


def similarity(metric: SimilarityMetric) -> dict[str, object]:
    return {
        "type": "text_similarity",
        "name": metric,
        "input": "{{ sample.output_text }}",
        "reference": "{{ item.reference }}",
        "evaluation_metric": metric,
    }


async def per_call_us(grader: OpenAIGrader, calls: int, repeats: int, **inputs: object) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            await grader.aevaluate(**inputs)
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def metric_alone_us(fn: Callable[[], object], calls: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def bare_start_ms(times: int) -> float:
    """A bare interpreter start: what a sandboxed call cannot go below."""
    start = time.perf_counter()
    for _ in range(times):
        subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
    return (time.perf_counter() - start) / times * 1000


def fresh_import_s(statement: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], check=True)
        best = min(best, time.perf_counter() - start)
    return best


async def main(calls: int, repeats: int) -> None:
    print(f"per call, best of {repeats} x {calls} calls")
    exact = from_openai_grader(
        {"type": "string_check", "name": "e", "input": "{{ sample.output_text }}",
         "reference": "{{ item.reference }}", "operation": "eq"}
    )  # fmt: skip
    us = await per_call_us(exact, calls, repeats, response=TEXT, reference=REFERENCE)
    native = StringMatchGrader("exact")
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            await native.aevaluate(response=TEXT, reference=REFERENCE)
        best = min(best, (time.perf_counter() - start) / calls)
    print(
        f"  string_check          {us:8.1f} µs   target {TARGET_RULE_US:.0f} µs (templates + one GraderScore); "
        f"openjudge's own string_match: {best * 1e6:.1f} µs"
    )
    multi = from_openai_grader(MULTI)
    us = await per_call_us(
        multi, calls, repeats, response="", tool_calls=[CALL], item={"name": "get_weather", "arguments": "{}"}
    )
    print(
        f"  multi (2 string_check){us:8.1f} µs   target {2 * TARGET_RULE_US:.0f} µs (3 GraderScores, no task group)"
    )
    metrics: tuple[SimilarityMetric, ...] = ("fuzzy_match", "bleu", "gleu", "meteor", "rouge_1", "rouge_l")
    for metric in metrics:
        grader = from_openai_grader(similarity(metric))
        us = await per_call_us(grader, calls, repeats, response=TEXT, reference=REFERENCE)
        alone = metric_alone_us(functools.partial(metric_for(metric).score, TEXT, REFERENCE), calls, repeats)
        print(f"  {metric:<22}{us:8.1f} µs   the library's metric alone {alone:8.1f} µs")
    python = from_openai_grader(
        {"type": "python", "name": "p", "source": "def grade(sample, item):\n    return 1.0\n"}
    )
    sandbox_calls = max(3, calls // 100)
    ms = await per_call_us(python, sandbox_calls, 1, response=TEXT) / 1000
    bare = bare_start_ms(sandbox_calls)
    print(
        f"  python (sandboxed)    {ms:8.1f} ms   target {TARGET_PYTHON_MS:.0f} ms; "
        f"a bare `python -I -S` start takes {bare:.1f} ms here"
    )
    print("import in a fresh interpreter (best of 3; the interpreter's own start included)")
    for label, statement in (
        ("python -c pass", "pass"),
        ("openjudge.graders.openai", "import openjudge.graders.openai"),
        ("rapidfuzz", "import rapidfuzz.fuzz"),
        ("nltk bleu/gleu/meteor", "import nltk.translate.bleu_score, nltk.translate.meteor_score"),
        ("rouge-score", "import rouge_score.rouge_scorer"),
    ):
        print(f"  {label:<26}{fresh_import_s(statement):6.2f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.repeats))
