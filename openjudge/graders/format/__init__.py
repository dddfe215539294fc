"""Rule graders for the shape of a response: JSON, length, repetition, reasoning tags.

* :class:`JsonValidatorGrader`: the response is valid JSON (0/1).
* :class:`JsonMatchGrader`: the response's JSON equals a reference value (0/1).
* :class:`JsonSchemaGrader`: the response's JSON satisfies a JSON Schema (0/1).
* :class:`LengthPenaltyGrader`: penalty in [-1, 0] outside a length range.
* :class:`NgramRepetitionPenaltyGrader`: penalty in [-1, 0] for repeated n-grams.
* :class:`ReasoningFormatGrader`: ``<think>…</think><answer>…</answer>`` format (0/1).

Each loads its module on first use (the JSON Schema grader brings in ``jsonschema``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports
from openjudge.errors import SchemaError as SchemaError

if TYPE_CHECKING or not lazy_exports(globals()):
    from openjudge.graders.format._json_match import JsonMatchGrader as JsonMatchGrader
    from openjudge.graders.format._json_schema import JsonSchemaGrader as JsonSchemaGrader
    from openjudge.graders.format._json_validator import JsonValidatorGrader as JsonValidatorGrader
    from openjudge.graders.format._length_penalty import LengthPenaltyGrader as LengthPenaltyGrader
    from openjudge.graders.format._ngram_repetition import (
        NgramRepetitionPenaltyGrader as NgramRepetitionPenaltyGrader,
    )
    from openjudge.graders.format.reasoning_format import ReasoningFormatGrader as ReasoningFormatGrader

__all__ = [
    "JsonMatchGrader",
    "JsonSchemaGrader",
    "JsonValidatorGrader",
    "LengthPenaltyGrader",
    "NgramRepetitionPenaltyGrader",
    "ReasoningFormatGrader",
    "SchemaError",
]
