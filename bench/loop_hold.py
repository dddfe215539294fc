"""Event-loop holds: how long a hostile response keeps each built-in grader's event loop from running.

Run: ``python bench/loop_hold.py [--sizes 10000,100000] [--only math,code_execution] [-v]``
from the repository root.

Every grader type of the registry (``openjudge graders``) is built (LLM judges and the
reward model over in-process function models, so no network is involved), warmed with a
benign sample (imports, worker start-up), and then fed each hostile generator below at each
size. Where the response goes depends on the grader: the response text, both sides of a
comparison or every member of a group, the assistant turns and tool-call arguments of a
trajectory, the tool calls themselves, a code solution (whose forged reports are also
hostile), the ``score`` field of a provided score.

The hold is measured by a probe task that wakes every millisecond on the same loop: the
longest gap between two of its wake-ups, less the tick, is the longest the loop was held.
It is reported two ways: ``cpu``, the process's CPU time spent in that gap (what the
grader's code cost: insensitive to other work on the machine), and ``wall`` (what a
co-scheduled task saw; inflated when the machine is busy). Worker processes (math, regex,
schema, sandboxes) run outside this process and are not counted: that is the point of them.

Target: the longest ``cpu`` hold of any grader at 100 KB <= 50 ms (:data:`TARGET_S`); what
bounds it is linear work on the response in the loop (reading, escaping, normalising,
hashing), about 10-30 ms per 100 KB for the heaviest graders. ``tests/graders/test_loop_hold.py``
fails when any grader holds the loop past :data:`TEST_LIMIT_S`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from openjudge.graders._registry import BUILTIN_GRADERS  # noqa: E402
from openjudge.graders.base_grader import BaseGrader  # noqa: E402
from openjudge.models.chat_model import ChatRequest  # noqa: E402
from openjudge.models.reward_model import Reward  # noqa: E402
from openjudge.results import GraderError, GraderResult, TokenUsage  # noqa: E402
from openjudge.testing._schema_instance import schema_instance  # noqa: E402
from openjudge.testing.function_model import FunctionChatModel  # noqa: E402

TARGET_S = 0.050
TEST_LIMIT_S = 0.250
SIZES = (10_000, 100_000)
TICK_S = 0.001
_P61 = (1 << 61) - 1  # hash(k * (2**61 - 1)) == 0 for every int k: colliding set members and dict keys

# -- the hostile generators: size in characters -> text ------------------------------------------


def _fill(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


def _nested(opening: str, middle: str, closing: str, size: int) -> str:
    depth = max(1, (size - len(middle)) // (len(opening) + len(closing)))
    return opening * depth + middle + closing * depth


GENERATORS: dict[str, Callable[[int], str]] = {
    "nested_parens": lambda n: _nested("(", "1", ")", n),
    "nested_braces": lambda n: _nested("{", "1", "}", n),
    "nested_json": lambda n: _nested('{"a": ', "1", "}", n),
    "nested_lists": lambda n: _nested("[", "", "]", n),
    "nested_latex": lambda n: _nested(r"\frac{1}{\sqrt{", "2", "}}", n),
    "carets_in_groups": lambda n: _nested("(1", "", ")^x", n),  # (1(1(1...)^x)^x)^x: the tower check
    "caret_chain": lambda n: _fill("2^", n) + "2",
    "boxes": lambda n: _fill(r"\boxed{1} ", n),
    "unbalanced_boxes": lambda n: _fill(r"\boxed{(", n),
    "answers_and_nots": lambda n: _fill("The answer is 5, not 7. ", n),
    "repeated_ngrams": lambda n: _fill("a b c ", n),
    "numbers": lambda n: _fill("1, ", n),
    "huge_number": lambda n: "9" * n,
    "huge_exponent": lambda n: "1e" + "9" * (n - 2),
    "hash_collisions": lambda n: "[" + ", ".join(str(k * _P61) for k in range(1, max(2, n // 22))) + "]",
    "long_line": lambda n: "x" * n,
    "whitespace": lambda n: " \n" * (n // 2) + "1",
    "tags": lambda n: _fill("<think><answer>", n // 2) + _fill("</answer></think>", n // 2),
    "fences": lambda n: _fill("```python\n", n),
    "combining_marks": lambda n: "a" + "\u0301" * (n - 1),
    "regex_bait": lambda n: "a" * (n - 1) + "!",
}


def _forged_report(value: str, lines: str = "[]") -> str:
    """A solution that writes forged call reports to every descriptor, then fails its test.

    ``value`` is a Python expression (evaluated in the sandbox) for call 0's value; ``lines``
    one for more report lines. The program is short; what it writes is as large as the
    hostile generator's size asks (the grader decodes it in its event loop).
    """
    return (
        "import json, os\n"
        f"P = (1 << 61) - 1\n"
        f"_records = [{{'event': 'call', 'index': 0, 'ok': True, 'value': {value}}}] + {lines}\n"
        "_lines = ''.join(json.dumps(r) + '\\n' for r in _records).encode()\n"
        "for _fd in range(3, 64):  # not stdout or stderr, whose limit would end the run first\n    try:\n        os.write(_fd, _lines)\n    except OSError:\n        pass\n"
        "def f(x):\n    return None\n"
    )


CODE_GENERATORS: dict[str, Callable[[int], str]] = {
    # 50,000 set members (or dict keys) whose hashes all collide at 100 KB.
    "forged_set_collisions": lambda n: _forged_report(f"{{'$set': [k * P for k in range(1, {n // 2})]}}"),
    "forged_dict_collisions": lambda n: _forged_report(
        f"{{'$dict': [[k * P, 0] for k in range(1, {n // 2})]}}"
    ),
    "forged_index_collisions": lambda n: _forged_report(
        "1", f"[{{'event': 'call', 'index': k * P, 'ok': True, 'value': 1}} for k in range(1, {n // 10})]"
    ),
}
"""Code-only generators: a solution whose reports the grader decodes (sized by the report's length)."""

# -- the graders: how each is built, and where the hostile text goes ------------------------------


class _Judge:
    """A judge whose reply fits whatever structured output it is asked for (computed once per schema)."""

    def __init__(self) -> None:
        self._replies: dict[str, str] = {}

    def __call__(self, request: ChatRequest) -> str:
        if request.output is None:
            return '{"reason": "ok", "score": 3}'
        reply = self._replies.get(request.output.schema_text)
        if reply is None:
            value = schema_instance(request.output.schema, score=3, clamp=True)
            if isinstance(value, dict) and "ranking" in value:
                value["ranking"] = ["R1", "R2", "R3"]
            reply = self._replies[request.output.schema_text] = json.dumps(value)
        return reply


def _judge() -> FunctionChatModel:
    return FunctionChatModel(_Judge(), model="function-judge")


class _LengthRewardModel:
    """An in-process reward model: the reward is a function of the response (no forward pass)."""

    @property
    def model_name(self) -> str | None:
        return "function-reward-model"

    async def ascore(
        self,
        response: str,
        *,
        prompt: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
    ) -> Reward:
        value = 1.0 / (1.0 + len(response))
        return Reward(value, (value,), "function-reward-model", TokenUsage(len(response) // 4, 0, 1), 0.0)


def _trajectory(text: str) -> list[dict[str, object]]:
    call = {"id": "1", "type": "function", "function": {"name": "search", "arguments": text}}
    return [
        {"role": "user", "content": "Find it."},
        {"role": "assistant", "content": text, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "1", "content": "found"},
        {"role": "assistant", "content": text, "tool_calls": [{**call, "id": "2"}]},
        {"role": "tool", "tool_call_id": "2", "content": "found"},
        {"role": "assistant", "content": text},
    ]


def _group(text: str) -> list[str]:
    return [text, "Paris.", text[::-1]]


@dataclass(frozen=True)
class Case:
    """One configuration of a registered grader type.

    Attributes:
        grader_type: The registry name it exercises.
        build: A fresh grader.
        inputs: The sample for a response text.
        benign: A short ordinary response (for warming up).
        extra: Grader-specific generators (added to :data:`GENERATORS`).
    """

    grader_type: str
    build: Callable[[], BaseGrader]
    inputs: Callable[[str], dict[str, object]]
    benign: str = "The answer is 4."
    extra: Mapping[str, Callable[[int], str]] | None = None


def _cases() -> dict[str, Case]:
    from openjudge.graders.agent.action.action_loop import ActionLoopDetectionGrader
    from openjudge.graders.agent.observation.observation_information_gain import (
        ObservationInformationGainGrader,
    )
    from openjudge.graders.agent.tool._tool_call_precision_recall_match import (
        ToolCallPrecisionRecallMatchGrader,
    )
    from openjudge.graders.agent.tool._tool_call_step_sequence_match import ToolCallStepSequenceMatchGrader
    from openjudge.graders.agent.trajectory._trajectory_step_efficiency import TrajectoryStepEfficiencyGrader
    from openjudge.graders.agent.trajectory.trajectory_comprehensive import TrajectoryComprehensiveGrader
    from openjudge.graders.code import CodeExecutionGrader
    from openjudge.graders.common._correctness import CorrectnessGrader
    from openjudge.graders.common._hallucination import HallucinationGrader
    from openjudge.graders.common._harmfulness import HarmfulnessGrader
    from openjudge.graders.common._instruction_following import InstructionFollowingGrader
    from openjudge.graders.common._relevance import RelevanceGrader
    from openjudge.graders.comparison._anchor import AnchorComparisonGrader
    from openjudge.graders.comparison._group_tournament import GroupTournamentGrader
    from openjudge.graders.comparison._knockout import KnockoutTournamentGrader
    from openjudge.graders.comparison._listwise import ListwiseRankingGrader
    from openjudge.graders.comparison._pairwise import PairwisePreferenceGrader
    from openjudge.graders.format import (
        JsonMatchGrader,
        JsonSchemaGrader,
        JsonValidatorGrader,
        LengthPenaltyGrader,
        NgramRepetitionPenaltyGrader,
        ReasoningFormatGrader,
    )
    from openjudge.graders.llm_grader import LLMGrader
    from openjudge.graders.math import MathAnswerEquivalenceGrader
    from openjudge.graders.openai._grader import from_openai_grader
    from openjudge.graders.provided_score import ProvidedScoreGrader
    from openjudge.graders.reward_model import RewardModelGrader
    from openjudge.graders.text import NumberAccuracyGrader, SimilarityGrader, StringMatchGrader

    def response(**fields: object) -> Callable[[str], dict[str, object]]:
        return lambda text: {"response": text, **fields}

    def tools(text: str) -> dict[str, object]:
        return {
            "reference_tool_calls": [{"name": "search", "arguments": {"q": "x"}}],
            "tool_calls": [
                {"name": "search", "arguments": text},
                {"name": text[:200], "arguments": {"q": text}},
            ],
        }

    def messages(text: str) -> dict[str, object]:
        return {"messages": _trajectory(text)}

    def call(name: str) -> dict[str, object]:
        return {"call": {"function": name, "args": [1], "expected": 2}}

    string_check = {
        "type": "string_check",
        "name": "eq",
        "input": "{{ sample.output_text }}",
        "reference": "{{ item.answer }}",
        "operation": "ilike",
    }
    score_model = {
        "type": "score_model",
        "name": "s",
        "model": "gpt-4o",
        "range": [0, 1],
        "input": [
            {"role": "user", "content": "Reference: {{ item.answer }}\nAnswer: {{ sample.output_text }}"}
        ],
    }
    python = {
        "type": "python",
        "name": "py",
        "source": "def grade(sample, item):\n    return float(len(sample['output_text']) % 2)\n",
    }
    similar = {
        "type": "text_similarity",
        "name": "sim",
        "input": "{{ sample.output_text }}",
        "reference": "{{ item.answer }}",
        "evaluation_metric": "rouge_l",
    }
    math_inputs = response(reference=r"\frac{1}{2}")
    return {
        "llm": Case(
            "llm",
            lambda: LLMGrader(_judge(), template="Q: {q}\nA: {answer}", score_range=(0, 5)),
            lambda t: {"q": "2 + 2?", "answer": t},
        ),
        "trajectory_comprehensive": Case(
            "trajectory_comprehensive", lambda: TrajectoryComprehensiveGrader(_judge()), messages
        ),
        "correctness": Case(
            "correctness", lambda: CorrectnessGrader(_judge()), response(query="2 + 2?", reference="4")
        ),
        "relevance": Case("relevance", lambda: RelevanceGrader(_judge()), response(query="2 + 2?")),
        "hallucination": Case(
            "hallucination",
            lambda: HallucinationGrader(_judge()),
            response(query="2 + 2?", context="2 + 2 = 4"),
        ),
        "harmfulness": Case("harmfulness", lambda: HarmfulnessGrader(_judge()), response(query="2 + 2?")),
        "instruction_following": Case(
            "instruction_following",
            lambda: InstructionFollowingGrader(_judge()),
            response(instructions="Answer in one word."),
        ),
        "action_loop_detection": Case("action_loop_detection", ActionLoopDetectionGrader, messages),
        "observation_information_gain": Case(
            "observation_information_gain", ObservationInformationGainGrader, messages
        ),
        "tool_call_precision_recall_match": Case(
            "tool_call_precision_recall_match",
            lambda: ToolCallPrecisionRecallMatchGrader(match_arguments=True),
            tools,
        ),
        "tool_call_step_sequence_match": Case(
            "tool_call_step_sequence_match",
            lambda: ToolCallStepSequenceMatchGrader(match_arguments=True),
            tools,
        ),
        "trajectory_step_efficiency": Case(
            "trajectory_step_efficiency", TrajectoryStepEfficiencyGrader, messages
        ),
        "string_match": Case(
            "string_match", lambda: StringMatchGrader("normalized"), response(reference="four")
        ),
        "string_match_regex": Case(
            "string_match", lambda: StringMatchGrader("regex"), response(reference=r"(a+)+$")
        ),
        "number_accuracy": Case("number_accuracy", NumberAccuracyGrader, response(reference="4 and 2.5")),
        "similarity_bleu": Case(
            "similarity", lambda: SimilarityGrader("bleu"), response(reference="The answer is four.")
        ),
        "similarity_rouge_l": Case(
            "similarity", lambda: SimilarityGrader("rouge_l"), response(reference="The answer is four.")
        ),
        "similarity_edit": Case(
            "similarity", lambda: SimilarityGrader("edit_distance"), response(reference="four")
        ),
        "json_validator": Case("json_validator", JsonValidatorGrader, response()),
        "json_match": Case(
            "json_match", lambda: JsonMatchGrader(strict_order=False), response(reference=[1, 2])
        ),
        "json_schema": Case(
            "json_schema",
            lambda: JsonSchemaGrader(
                {"type": "array", "items": {"type": "string", "pattern": "^(a+)+$"}, "uniqueItems": True}
            ),
            response(),
        ),
        "length_penalty": Case("length_penalty", LengthPenaltyGrader, response()),
        "reasoning_format": Case("reasoning_format", ReasoningFormatGrader, response()),
        "math_answer_equivalence": Case(
            "math_answer_equivalence", lambda: MathAnswerEquivalenceGrader(sympy_timeout_s=1.0), math_inputs
        ),
        "math_answer_equivalence_strict": Case(
            "math_answer_equivalence",
            lambda: MathAnswerEquivalenceGrader(sympy_timeout_s=1.0, extraction="strict"),
            math_inputs,
        ),
        "code_execution": Case(
            "code_execution",
            lambda: CodeExecutionGrader(timeout_s=2.0),
            lambda t: {"response": t, "test_cases": [call("f")]},
            benign="def f(x):\n    return x + 1\n",
            extra=CODE_GENERATORS,
        ),
        "ngram_repetition_penalty": Case(
            "ngram_repetition_penalty", NgramRepetitionPenaltyGrader, response()
        ),
        "provided_score": Case(
            "provided_score",
            lambda: ProvidedScoreGrader(score_range=(0, 1)),
            lambda t: {"score": t},
            benign="0.5",
        ),
        "pairwise_preference": Case(
            "pairwise_preference",
            lambda: PairwisePreferenceGrader(_judge()),
            lambda t: {"query": "2 + 2?", "response_a": t, "response_b": "4"},
        ),
        "listwise_ranking": Case(
            "listwise_ranking",
            lambda: ListwiseRankingGrader(_judge()),
            lambda t: {"query": "2 + 2?", "responses": _group(t)},
        ),
        "reward_model": Case(
            "reward_model", lambda: RewardModelGrader(_LengthRewardModel()), response(prompt="2 + 2?")
        ),
        "group_tournament": Case(
            "group_tournament",
            lambda: GroupTournamentGrader(_judge()),
            lambda t: {"query": "2 + 2?", "responses": _group(t)},
        ),
        "knockout_tournament": Case(
            "knockout_tournament",
            lambda: KnockoutTournamentGrader(_judge()),
            lambda t: {"query": "2 + 2?", "responses": _group(t)},
        ),
        "openai_grader": Case(
            "openai_grader", lambda: from_openai_grader(string_check), response(answer="four")
        ),
        "openai_grader_similarity": Case(
            "openai_grader", lambda: from_openai_grader(similar), response(answer="four")
        ),
        "openai_grader_score_model": Case(
            "openai_grader", lambda: from_openai_grader(score_model, model=_judge()), response(answer="four")
        ),
        "openai_grader_python": Case(
            "openai_grader", lambda: from_openai_grader(python), response(answer="four")
        ),
        "anchor_comparison": Case(
            "anchor_comparison",
            lambda: AnchorComparisonGrader(_judge()),
            lambda t: {"query": "2 + 2?", "anchor": "4", "responses": _group(t)},
        ),
    }


def cases() -> dict[str, Case]:
    """Every configuration measured, by name; every registered grader type has at least one."""
    built = _cases()
    missing = set(BUILTIN_GRADERS) - {case.grader_type for case in built.values()}
    if missing:
        raise RuntimeError(f"loop_hold has no case for grader types {sorted(missing)}")
    return built


def generators(case: Case) -> dict[str, Callable[[int], str]]:
    return {**GENERATORS, **(case.extra or {})}


# -- the probe ----------------------------------------------------------------------------------


@dataclass
class Hold:
    """The longest the loop was held while a body ran: CPU seconds of this process, and wall seconds."""

    cpu: float = 0.0
    wall_s: float = 0.0


@asynccontextmanager
async def probe(tick_s: float = TICK_S) -> AsyncIterator[Hold]:
    """Measure the longest gap between wake-ups of a task ticking every ``tick_s`` (see the docstring)."""
    hold = Hold()

    async def tick() -> None:
        wall_s, cpu = time.perf_counter(), time.process_time()
        while True:
            await asyncio.sleep(tick_s)
            now_wall, now_cpu = time.perf_counter(), time.process_time()
            hold.wall_s = max(hold.wall_s, now_wall - wall_s - tick_s)
            hold.cpu = max(hold.cpu, now_cpu - cpu)
            wall_s, cpu = now_wall, now_cpu

    task = asyncio.get_running_loop().create_task(tick())
    await asyncio.sleep(tick_s * 2)  # the probe is running before the body starts
    try:
        yield hold
        await asyncio.sleep(tick_s * 3)  # let the probe see the body's last step
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task


async def measure(grader: BaseGrader, inputs: Mapping[str, object]) -> tuple[Hold, GraderResult]:
    """One evaluation under the probe."""
    async with probe() as hold:
        result = await grader.aevaluate(**inputs)
    return hold, result


def describe(result: GraderResult) -> str:
    if isinstance(result, GraderError):
        return f"error:{result.kind}"
    cause = result.metadata.get("cause") if hasattr(result, "metadata") else None
    score = getattr(result, "score", None)
    return f"{score}" + (f" ({cause})" if cause else "")


async def run_case(
    case: Case, sizes: Sequence[int], only: Sequence[str] | None = None
) -> dict[int, dict[str, tuple[Hold, str]]]:
    """The hold of every generator at every size, for one case (warmed up first)."""
    grader = case.build()
    try:
        await grader.aevaluate(**case.inputs(case.benign))
        await grader.aevaluate(**case.inputs(case.benign))
        out: dict[int, dict[str, tuple[Hold, str]]] = {}
        for size in sizes:
            out[size] = {}
            for name, generate in generators(case).items():
                if only and name not in only:
                    continue
                text = generate(size)
                hold, result = await measure(grader, case.inputs(text))
                out[size][name] = (hold, describe(result))
        return out
    finally:
        _close(grader)


def _close(grader: BaseGrader) -> None:
    for value in vars(grader).values():
        close = getattr(value, "close", None)
        if callable(close) and type(value).__name__ == "WorkerPool":
            close()


def _worst(row: Mapping[str, tuple[Hold, str]]) -> tuple[str, Hold]:
    name = max(row, key=lambda n: row[n][0].cpu)
    return name, row[name][0]


async def main_async(sizes: Sequence[int], only: Sequence[str], verbose: bool) -> bool:
    print(
        f"loop holds per grader (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
        f"{len(GENERATORS)} generators, +{len(CODE_GENERATORS)} for code)"
    )
    header = "".join(f"{f'{s // 1000} KB cpu ms':>14}{'wall ms':>9}  worst generator        " for s in sizes)
    print(f"  {'grader':<34}{header}")
    ok = True
    for name, case in cases().items():
        if only and name not in only and case.grader_type not in only:
            continue
        rows = await run_case(case, sizes)
        line = f"  {name:<34}"
        for size in sizes:
            worst, hold = _worst(rows[size])
            line += f"{hold.cpu * 1e3:>14.1f}{hold.wall_s * 1e3:>9.1f}  {worst:<23}"
            if size == max(sizes) and hold.cpu > TARGET_S:
                ok = False
        print(line, flush=True)
        if verbose:
            for size in sizes:
                for gen, (hold, outcome) in rows[size].items():
                    print(
                        f"      {size // 1000:>4} KB {gen:<26} cpu {hold.cpu * 1e3:8.1f} ms  "
                        f"wall {hold.wall_s * 1e3:8.1f} ms  -> {outcome}"
                    )
    print(
        f"target: every grader's longest cpu hold at {max(sizes) // 1000} KB <= {TARGET_S * 1e3:.0f} ms"
        f"  -> {'met' if ok else 'NOT met'}"
    )
    print("bounded by: linear work on the response in the loop (reading, escaping, normalising, hashing)")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES), help="input sizes in characters")
    parser.add_argument("--only", default="", help="comma-separated case names or grader types")
    parser.add_argument("-v", "--verbose", action="store_true", help="every generator's hold and outcome")
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",") if s]
    only = [s for s in options.only.split(",") if s]
    ok = asyncio.run(main_async(sizes, only, options.verbose))
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()


__all__ = [
    "CODE_GENERATORS",
    "GENERATORS",
    "Case",
    "Hold",
    "cases",
    "generators",
    "measure",
    "probe",
    "run_case",
]
