"""The package surface: the pinned ``__all__``, and no TRL, torch or SDK import on import."""

from __future__ import annotations

import json
import subprocess
import sys

import openjudge.integrations.trl


def test_all_is_pinned() -> None:
    assert sorted(openjudge.integrations.trl.__all__) == [
        "OpenJudgeReward",
        "OpenJudgeRewards",
        "OpenJudgeTRLSettings",
        "samples_from_batch",
    ]


def test_importing_the_package_imports_no_framework() -> None:
    code = "import json, sys; import openjudge, openjudge.integrations.trl; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    loaded = {name.split(".")[0] for name in json.loads(out)}
    assert loaded.isdisjoint({"trl", "torch", "transformers", "datasets", "skyrl_gym", "openai", "numpy"})
