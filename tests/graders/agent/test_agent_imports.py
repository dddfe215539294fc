"""Importing the agent graders stays light: no SDKs, no numeric stacks, OpenJudge's import paths intact."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("openai", "httpx", "litellm", "numpy", "torch", "sklearn", "transformers", "verl")
MODULES = (
    "openjudge.graders.agent.action.action_loop",
    "openjudge.graders.agent.observation.observation_information_gain",
    "openjudge.graders.agent.tool._tool_call_precision_recall_match",
    "openjudge.graders.agent.tool._tool_call_step_sequence_match",
    "openjudge.graders.agent.trajectory._trajectory_step_efficiency",
)


def loaded_after(statement: str) -> set[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


@pytest.mark.parametrize("module", MODULES)
def test_grader_modules_import_nothing_heavy(module: str) -> None:
    loaded = loaded_after(f"import {module}")
    assert module in loaded
    assert not {name for name in loaded if name.split(".")[0] in HEAVY}


def test_packages_import_nothing() -> None:
    loaded = loaded_after("import openjudge.graders.agent.action, openjudge.graders.agent.trajectory")
    assert {name for name in loaded if name.startswith("openjudge.graders.agent")} == {
        "openjudge.graders.agent",
        "openjudge.graders.agent.action",
        "openjudge.graders.agent.trajectory",
    }


def test_openjudge_guide_import_paths() -> None:
    from openjudge.graders.agent.action.action_loop import ActionLoopDetectionGrader
    from openjudge.graders.agent.observation.observation_information_gain import (
        ObservationInformationGainGrader,
    )

    assert ActionLoopDetectionGrader(similarity_threshold=1.0).name == "action_loop_detection"
    assert ObservationInformationGainGrader(similarity_threshold=0.5).name == "observation_information_gain"
