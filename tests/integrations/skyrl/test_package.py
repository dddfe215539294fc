"""The package surface: the pinned ``__all__``, lazy ``skyrl_gym``, the ImportError naming the extra."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import openjudge.integrations.skyrl

pytestmark = pytest.mark.slow  # fresh interpreters importing skyrl-gym (seconds each)


def run_python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout


def test_all_is_pinned() -> None:
    assert sorted(openjudge.integrations.skyrl.__all__) == [
        "EnvScorer",
        "OpenJudgeEnv",
        "OpenJudgeSkyRLSettings",
        "SettingsError",
        "StepScore",
        "register_env",
    ]


def test_importing_the_package_does_not_import_skyrl_gym() -> None:
    code = "import json, sys; import openjudge, openjudge.integrations.skyrl; print(json.dumps(sorted(sys.modules)))"
    loaded = {name.split(".")[0] for name in json.loads(run_python(code))}
    assert loaded.isdisjoint({"skyrl_gym", "trl", "torch", "transformers", "openai", "numpy"})


def test_the_env_loads_skyrl_gym_on_first_use() -> None:
    code = "import sys; from openjudge.integrations.skyrl import OpenJudgeEnv as E; print(E.__module__, 'skyrl_gym' in sys.modules)"
    assert run_python(code).split() == ["openjudge.integrations.skyrl._env", "True"]


def test_missing_skyrl_gym_raises_an_import_error_naming_the_extra() -> None:
    code = (
        "import sys; sys.modules['skyrl_gym'] = None\n"
        "try:\n    from openjudge.integrations.skyrl import OpenJudgeEnv\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    assert "pip install 'openjudge-graders[skyrl]'" in run_python(code)


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        openjudge.integrations.skyrl.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018  # no such name: mypy knows it too
