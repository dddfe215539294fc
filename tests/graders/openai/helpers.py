"""Shared by the OpenAI-grader tests: grade synchronously, and the guide's own examples."""

from __future__ import annotations

from pathlib import Path

import anyio
from pydantic import JsonValue

from openjudge.graders.openai import OpenAIGrader
from openjudge.results import GraderError, GraderResult, GraderScore

DATA = Path(__file__).with_name("data")


def grade(grader: OpenAIGrader, **inputs: object) -> GraderResult:
    async def go() -> GraderResult:
        return await grader.aevaluate(**inputs)

    return anyio.run(go)


def score_of(result: GraderResult) -> float:
    return scored(result).score


def scored(result: GraderResult) -> GraderScore:
    assert isinstance(result, GraderScore), result
    return result


def error_of(result: GraderResult) -> GraderError:
    assert isinstance(result, GraderError), result
    return result


def blamed(result: GraderResult, cause: str) -> GraderScore:
    """A response-caused failure: a score, with blame and cause in metadata."""
    assert isinstance(result, GraderScore), result
    assert result.metadata.get("blame") == "response", result.metadata
    assert result.metadata.get("cause") == cause, result.metadata
    return result


def string_check(operation: str, *, input: str = "{{ sample.output_text }}") -> dict[str, JsonValue]:
    return {
        "type": "string_check",
        "name": "check",
        "input": input,
        "reference": "{{ item.reference_answer }}",
        "operation": operation,
    }


# The graders guide's multigrader example: a tool call's name and arguments, half each.
GUIDE_MULTI: dict[str, JsonValue] = {
    "type": "multi",
    "graders": {
        "name": {
            "name": "name_grader",
            "type": "string_check",
            "input": "{{sample.output_tools[0].function.name}}",
            "reference": "{{item.name}}",
            "operation": "eq",
        },
        "arguments": {
            "name": "arguments_grader",
            "type": "string_check",
            "input": "{{sample.output_tools[0].function.arguments}}",
            "reference": "{{item.arguments}}",
            "operation": "eq",
        },
    },
    "calculate_output": "0.5 * name + 0.5 * arguments",
}

# The guide's score-model example (its sampling_params spell max_tokens).
GUIDE_SCORE_MODEL: dict[str, JsonValue] = {
    "type": "score_model",
    "name": "my_score_model",
    "input": [
        {
            "role": "system",
            "content": "You are an expert grader. If the reference and model answer are exact matches, output a "
            "score of 1. If they are somewhat similar in meaning, output a score in 0.5. Otherwise, give a score of 0.",
        },
        {
            "role": "user",
            "content": "Reference: {{ item.reference_answer }}. Model answer: {{ sample.output_text }}",
        },
    ],
    "pass_threshold": 0.5,
    "model": "o4-mini-2025-04-16",
    "range": [0, 1],
    "sampling_params": {"max_tokens": 32768, "top_p": 1, "reasoning_effort": "medium"},
}

# The guide's python-grader example (rapidfuzz's WRatio).
GUIDE_PYTHON_SOURCE = """from rapidfuzz import fuzz, utils

def grade(sample, item) -> float:
    output_text = sample["output_text"]
    reference_answer = item["reference_answer"]
    return fuzz.WRatio(output_text, reference_answer, processor=utils.default_process) / 100.0
"""
