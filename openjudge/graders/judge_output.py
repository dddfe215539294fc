"""Reading a judge's reply: tolerant JSON extraction and the default verdict model."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["JudgeVerdict", "extract_json_object"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_MAX_SCAN = 64
# strict=False: accept raw control characters (tabs, newlines) inside strings, which
# models often write in a "reason" and which strict JSON forbids.
_DECODER = json.JSONDecoder(strict=False)


class JudgeVerdict(BaseModel):
    """The default judge output: a short reason, then a score."""

    model_config = ConfigDict(extra="ignore")

    reason: str = Field(description="A brief justification of the score.")
    score: float = Field(description="The score.")


def extract_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a judge reply: bare, fenced, or wrapped in prose.

    Raises:
        ValueError: No JSON object could be read (the message says why).
    """
    stripped = text.strip()
    if not stripped:
        raise ValueError("the reply is empty")
    try:
        value = _DECODER.decode(stripped)
    except ValueError:
        pass
    else:
        if isinstance(value, dict):
            return value
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    for block in _FENCE.findall(stripped):
        try:
            value = _DECODER.decode(block)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    start = stripped.find("{")
    scanned = 0
    while start != -1 and scanned < _MAX_SCAN:
        try:
            value, _ = _DECODER.raw_decode(stripped, start)
        except ValueError:
            pass
        else:
            if isinstance(value, dict):
                return value
        scanned += 1
        start = stripped.find("{", start + 1)
    raise ValueError("no JSON object found in the reply")
