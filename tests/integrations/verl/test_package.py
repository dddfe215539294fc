"""The package surface: lazy imports, the ImportError that names the extra, the pinned ``__all__``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import openjudge.integrations.verl

pytestmark = pytest.mark.slow  # fresh interpreters importing VERL (seconds each)


def run_python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout


def test_all_is_pinned() -> None:
    assert sorted(openjudge.integrations.verl.__all__) == [
        "BaseOpenJudgeRewardFunction",
        "ExtraValue",
        "OpenJudgeLegacyRewardManager",
        "OpenJudgeRewardManager",
        "OpenJudgeVerlSettings",
        "RewardResult",
        "RewardSample",
        "SettingsError",
        "compute_score",
    ]


def test_importing_the_package_does_not_import_verl_or_torch() -> None:
    code = "import json, sys; import openjudge, openjudge.integrations.verl; print(json.dumps(sorted(sys.modules)))"
    loaded = {name.split(".")[0] for name in json.loads(run_python(code))}
    assert loaded.isdisjoint({"verl", "torch", "ray", "transformers", "numpy", "openai"})


def test_missing_verl_raises_an_import_error_naming_the_extra() -> None:
    code = (
        "import sys; sys.modules['verl'] = None\n"
        "try:\n    from openjudge.integrations.verl import OpenJudgeRewardManager\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    message = run_python(code)
    assert "pip install 'openjudge-graders[verl]'" in message
    assert "torch==2.13.0" in message
    assert "BEFORE verl" in message


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        openjudge.integrations.verl.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018  # no such name: mypy knows it too
