"""Graders YAMLs for the server's tests: rule graders only, or a rule grader and the local test judge."""

from __future__ import annotations

import asyncio
from pathlib import Path

from openjudge.integrations.serve import RewardServer

RULES_YAML = """\
version: 1
graders:
  correct:
    type: math_answer_equivalence
    mapper: {response: response, reference: label}
  format:
    type: reasoning_format
aggregators:
  - type: weighted_mean
    name: reward
    weights: {correct: 3, format: 1}
"""
"""``reward`` = (3 x correct + format) / 4: 1.0 right and formatted, 0.75 right only, 0.25 formatted only."""

JUDGE_YAML = """\
version: 1
providers:
  judge: {{kind: openai, model: m, base_url: '{base_url}', api_key: k, timeout_s: 5, max_retries: 0}}
graders:
  quality:
    type: llm
    provider: judge
    params: {{template: "Answer: {{answer}}. Score 1 to 5.", score_range: [1, 5]}}
    mapper: {{answer: response}}
cache: {{enabled: false}}
"""
"""One LLM judge, ``quality`` (1 to 5); a response containing ``#oj:`` directives steers the test judge."""

RIGHT = "<think>1+1 is 2</think><answer>\\boxed{2}</answer>"
WRONG = "<think>guess</think><answer>\\boxed{3}</answer>"
DOWN = "#oj:status=503"
"""In a response, makes the test judge answer 503 (a provider error: the system's failure, not the response's)."""


def write_yaml(directory: Path, text: str) -> str:
    path = directory / "graders.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


async def until_pending(server: RewardServer, n: int, *, timeout_s: float = 10.0) -> None:
    """Wait until ``n`` samples are admitted (polled: the server has no event for it)."""
    for _ in range(int(timeout_s / 0.01)):
        if server.pending >= n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{server.pending} samples pending after {timeout_s} s, expected {n}")
