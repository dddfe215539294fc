"""Test helpers: the frozen local judge of SkyRL's llm_as_a_judge_local example as a graders YAML (a vLLM provider entry)."""

from __future__ import annotations

import itertools
from pathlib import Path

SYSTEM = "You grade math answers. Compare the predicted solution with the gold solution."

GRADERS_YAML = """\
version: 1
providers:
  reward_model:                        # the frozen judge: a vLLM server (here, the test judge server)
    kind: vllm
    model: openjudge-test-judge
    base_url: {base_url}
    timeout_s: 5
    max_retries: 0
    limits: {{max_concurrency: {limit}}}
graders:
  correct:
    type: string_match
    params: {{match_mode: contains}}
    mapper: {{response: response, reference: ground_truth}}
  judge:
    type: llm
    provider: reward_model
    params:
      template:
        - {{role: system, content: "{system}"}}
        - {{role: user, content: "GOLD SOLUTION:\\n{{gold}}\\n\\nPREDICTED SOLUTION:\\n{{predicted}}\\n\\nScore 1 to 5."}}
      score_range: [1, 5]
    mapper: {{gold: ground_truth, predicted: response}}
aggregators:
  - type: weighted_mean
    name: reward
    weights: {{correct: 2, judge: 1}}
cache: {{enabled: false}}
"""

_ids = itertools.count()


def write_graders_yaml(directory: Path, base_url: str, *, limit: int = 64) -> Path:
    """``correct`` (ground truth in the action), ``judge`` (1 to 5 from the vLLM judge), and
    ``reward`` = (2 x correct + judge) / 3 on normalised scores."""
    path = directory / "graders.yaml"
    path.write_text(GRADERS_YAML.format(base_url=base_url, limit=limit, system=SYSTEM), encoding="utf-8")
    return path


def fresh_env_id() -> str:
    """A new env_class name (SkyRL-Gym's registry is process-wide)."""
    return f"openjudge-test-{next(_ids)}"
