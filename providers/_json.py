"""JSON for request and reply bodies: compact, UTF-8, deterministic for a given input.

Bodies double as cache keys, so encoding must be stable: keys keep insertion order
(the request builders add them in a fixed order) and no whitespace is emitted.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps", "loads"]

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: object) -> bytes:
    """Compact UTF-8 JSON."""
    return _ENCODER.encode(value).encode("utf-8")


def loads(data: bytes) -> Any:
    """Decode a JSON body.

    Raises:
        ValueError: Not JSON.
    """
    return json.loads(data)
