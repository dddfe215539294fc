"""Shared data and helpers for the agent grader tests.

* :data:`TRAJECTORIES`: three hand-made trajectories (efficient, looping, partial), the ones
  OpenJudge 0.2.4's rule graders were first measured on.
* :func:`grade`: run one ``aevaluate`` call to completion (anyio, asyncio backend).
* ``reference_*``: a plain, unoptimised restatement of OpenJudge 0.2.4's algorithms
  (its ``action_loop.py`` and ``observation_information_gain.py``) on well-formed input, used as an oracle by the property tests.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

import anyio

from openjudge.results import GraderError, GraderResult, GraderScore

T = TypeVar("T")
JsonDict = dict[str, object]


def grade(evaluate: Callable[[], Awaitable[T]]) -> T:
    """Run ``evaluate()`` in a fresh event loop and return its result."""
    return anyio.run(evaluate, backend="asyncio")


def as_score(result: GraderResult) -> GraderScore:
    assert isinstance(result, GraderScore), f"expected a GraderScore, got {result!r}"
    return result


def as_error(result: GraderResult) -> GraderError:
    assert isinstance(result, GraderError), f"expected a GraderError, got {result!r}"
    return result


def call(call_id: str | None, name: str, arguments: object = None, **args: object) -> JsonDict:
    """An OpenAI tool call; ``arguments`` defaults to ``json.dumps(args)``."""
    out: JsonDict = {
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args) if arguments is None else arguments},
    }
    if call_id is not None:
        out["id"] = call_id
    return out


def traj(steps: Sequence[tuple[str, Mapping[str, object], str]], final: str = "Done.") -> list[JsonDict]:
    """The trajectory builder of OpenJudge's rule-grader demo: one assistant call and one tool answer per step."""
    msgs: list[JsonDict] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Find the weather in Paris."},
    ]
    for i, (name, args, obs) in enumerate(steps):
        msgs.append({"role": "assistant", "content": "", "tool_calls": [call(f"call_{i}", name, **args)]})
        msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "name": name, "content": obs})
    return [*msgs, {"role": "assistant", "content": final}]


TRAJECTORIES: dict[str, list[JsonDict]] = {
    "efficient": traj(
        [
            (
                "search",
                {"q": "Paris weather today"},
                "Paris weather today: sunny, 22C, light wind from the west.",
            ),
            (
                "get_forecast",
                {"city": "Paris", "days": 3},
                "3-day forecast for Paris: Tue 23C clear, Wed 19C rain, Thu 21C cloudy.",
            ),
            (
                "get_air_quality",
                {"city": "Paris"},
                "Air quality index in Paris is 41 (good); PM2.5 at 9 ug/m3.",
            ),
        ]
    ),
    "looping": traj(
        [("search", {"q": "Paris weather"}, "Paris weather: sunny, 22C, light wind from the west.")] * 4
    ),
    "partial": traj(
        [
            ("search", {"q": "Paris weather"}, "Paris weather: sunny, 22C, light wind from the west."),
            ("search", {"q": "Paris weather"}, "Paris weather: sunny, 23C, light wind from the north."),
            (
                "get_forecast",
                {"city": "Paris"},
                "Forecast: rain expected tomorrow in Paris, 18C, strong wind.",
            ),
            ("noop", {}, "ok"),  # < 10 chars: skipped by information gain
        ]
    ),
}


# --- OpenJudge 0.2.4, restated plainly (well-formed input only) -------------------------------


def reference_pairs(messages: Sequence[Mapping[str, object]]) -> list[tuple[Mapping[str, object], str]]:
    pairs: list[tuple[Mapping[str, object], str]] = []
    pending: dict[object, Mapping[str, object]] = {}
    pending_no_id: list[Mapping[str, object]] = []
    for wrapped in messages:
        message = wrapped.get("message", wrapped)
        assert isinstance(message, Mapping)
        role = message.get("role", "")
        tool_calls = message.get("tool_calls", [])
        if role == "assistant" and tool_calls:
            assert isinstance(tool_calls, list)
            for tool_call in tool_calls:
                tool_call = tool_call.get("tool_call", tool_call)
                if tool_call.get("id"):
                    pending[tool_call["id"]] = tool_call
                else:
                    pending_no_id.append(tool_call)
        elif role in ("function", "tool"):
            call_id = message.get("tool_call_id")
            # OpenJudge raises on an unknown id, and on an empty FIFO.
            action = pending.pop(call_id) if call_id else pending_no_id.pop(0)
            content = message.get("content")
            pairs.append((action, str(content or "")))
    return pairs


def reference_similarity(text1: str, text2: str) -> float:
    if not text1 or not text2:
        return 0.0
    words1, words2 = set(text1.lower().split()), set(text2.lower().split())
    if not words1 or not words2:
        return 0.0
    return len(words1 & words2) / len(words1 | words2)


def reference_signature(action: Mapping[str, object]) -> str:
    function = action.get("function", {})
    assert isinstance(function, dict)
    signature = str(function.get("name", ""))
    raw = function.get("arguments", "")
    try:
        args = json.loads(raw)
        signature += ": " + ", ".join(f"{k}: {v}" for k, v in sorted(args.items()))
    except (json.JSONDecodeError, AttributeError):
        if raw:
            signature += ": " + str(raw)
    return signature


def reference_action_loop(
    messages: Sequence[Mapping[str, object]], threshold: float
) -> tuple[float, int, int]:
    """(score, similar pairs, total pairs)."""
    signatures = [reference_signature(action) for action, _ in reference_pairs(messages)]
    n = len(signatures)
    if n < 2:
        return 1.0, 0, 0
    similar = total = 0
    for i in range(n):
        for j in range(i + 1, n):
            total += 1
            if reference_similarity(signatures[i], signatures[j]) >= threshold:
                similar += 1
    return 1.0 - similar / total, similar, total


def reference_info_gain(
    messages: Sequence[Mapping[str, object]], threshold: float
) -> tuple[float, list[float], list[float]]:
    """(score, per-step rewards, per-step max similarities)."""
    rewards: list[float] = []
    similarities: list[float] = []
    previous: list[str] = []
    for _, observation in reference_pairs(messages):
        if not observation or len(observation.strip()) < 10:
            continue
        max_sim = max((reference_similarity(observation, p) for p in previous), default=0.0)
        similarities.append(max_sim)
        rewards.append((1.0 - max_sim) * math.exp(-2 * max(0, max_sim - threshold)))
        previous.append(observation)
    average = sum(rewards) / len(rewards) if rewards else 0.0
    return max(0.0, min(1.0, average)), rewards, similarities
