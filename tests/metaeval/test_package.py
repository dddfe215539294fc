"""The package surface: lazy names, no numpy for the command line, a clear error without numpy."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest

import openjudge.metaeval as metaeval
from openjudge.cli._metaeval import needs_numpy


def test_every_public_name_resolves_to_its_object_not_a_module() -> None:
    assert metaeval.__all__ == sorted(metaeval.__all__)
    for name in metaeval.__all__:
        value = getattr(metaeval, name)
        assert not isinstance(value, types.ModuleType), name
    assert callable(metaeval.collect) and metaeval.collect.__module__ == "openjudge.metaeval._runs"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = metaeval.nope  # type: ignore[attr-defined]  # no such name: mypy knows it too


def test_the_command_line_does_not_import_numpy() -> None:
    code = "import json, sys, openjudge.cli._main; openjudge.cli._main._parser(); print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    )
    assert "numpy" not in loaded and "openjudge.cli._metaeval" in loaded


def test_a_missing_numpy_names_the_extra() -> None:
    missing = ModuleNotFoundError("No module named 'numpy'", name="numpy")
    assert "pip install 'openjudge-graders[metaeval]'" in needs_numpy(missing)
    other = ModuleNotFoundError("No module named 'x'", name="x")
    assert needs_numpy(other) == "No module named 'x'"
