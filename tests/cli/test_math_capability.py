"""Math equivalence from a plain install, and a results file that records what graded it.

The command in a subprocess, on real files, as a user runs it.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

from tests.cli._support import openjudge, results

pytestmark = pytest.mark.slow  # the command in a subprocess, with a math worker process

SAMPLES = [
    {"id": "expanded", "response": r"so \boxed{(x+1)^2}", "reference": "x^2+2x+1"},
    {"id": "word", "response": "Paris", "reference": "Paris"},
    {"id": "wrong", "response": r"\boxed{x^2+1}", "reference": "(x+1)^2"},
]


def _method(entry: dict[str, object]) -> object:
    metadata = entry["metadata"]
    assert isinstance(metadata, dict)
    return metadata["method"]


def _header_capability(path: Path, capability: dict[str, str]) -> None:
    """Rewrite the file's header as a run under other library versions would have written it."""
    first, rest = path.read_text(encoding="utf-8").split("\n", 1)
    header = json.loads(first)
    header["openjudge"]["job"]["graders"]["math"]["capability"] = capability
    path.write_text(json.dumps(header) + "\n" + rest, encoding="utf-8")


def test_math_is_equivalence_from_a_plain_install_and_a_new_capability_is_re_graded(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "graders:\n  math: {type: math_answer_equivalence}\n", encoding="utf-8"
    )
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(s) + "\n" for s in SAMPLES), encoding="utf-8")
    first = openjudge("run", "job.yaml", "--data", "data.jsonl", "--no-progress", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    rows = results(tmp_path / "results.jsonl")
    got = {i: (r["math"]["score"], _method(r["math"])) for i, r in rows.items()}
    assert got == {"expanded": (1.0, "symbolic"), "word": (1.0, "string"), "wrong": (0.0, "symbolic")}

    installed = {name: importlib.metadata.version(name) for name in ("math-verify", "sympy")}
    _header_capability(tmp_path / "results.jsonl", {**installed, "math-verify": "0.8.0"})
    refused = openjudge("run", "job.yaml", "--data", "data.jsonl", "--no-progress", cwd=tmp_path)
    assert refused.returncode == 1
    assert f"graders.math: capability.math-verify: '0.8.0' -> '{installed['math-verify']}'" in refused.stderr
    assert "--regrade to re-grade math on its 3 samples" in refused.stderr

    regraded = openjudge(
        "run", "job.yaml", "--data", "data.jsonl", "--regrade", "--no-progress", cwd=tmp_path
    )
    assert regraded.returncode == 0, regraded.stderr
    assert "re-graded math (changed) on 3 samples" in regraded.stdout
    assert results(tmp_path / "results.jsonl") == rows  # the same verdicts, now under the versions installed
    header = json.loads((tmp_path / "results.jsonl").read_text(encoding="utf-8").split("\n", 1)[0])
    assert header["openjudge"]["job"]["graders"]["math"]["capability"] == installed
