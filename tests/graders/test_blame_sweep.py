"""The blame sweep (bench/blame_sweep.py) as a test: every grader x hostile responses x every path.

The rule: if a grader scores a short benign response with these dataset fields, no response
text turns the sample into an error, and no exception leaves an adapter. One representative of
each family runs in the fast tier; the rest of the registry runs in the slow tier.
"""

from __future__ import annotations

import pytest

from bench import blame_sweep

pytestmark = pytest.mark.anyio

CASES = blame_sweep.sweep_cases()
FAST = {
    "llm",
    "correctness",
    "trajectory_comprehensive",
    "tool_call_precision_recall_match",
    "action_loop_detection",
    "json_match",
    "pairwise_preference",
    "listwise_ranking",
    "reward_model",
    "openai_grader_score_model",
    "openai_grader_python",
}


def test_every_registered_grader_type_is_swept() -> None:
    from openjudge.graders._registry import BUILTIN_GRADERS

    assert {case.grader_type for case in CASES.values()} == set(BUILTIN_GRADERS)


@pytest.mark.parametrize("path", blame_sweep.PATHS)
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in CASES]
)
async def test_no_response_turns_a_scored_sample_into_an_error(name: str, path: str) -> None:
    cell = await blame_sweep.sweep_case(CASES[name], path, list(blame_sweep.GENERATORS))
    if cell.errors is None:
        assert cell.note == "-", f"{name} on {path}: {cell.note}"  # only paths that cannot carry it
        return
    caused = {generator: n for generator, n in cell.errors.items() if n}
    assert caused == {}, f"{name} on {path}: errors caused by the response {caused} {cell.note}"
