"""Every field of a config, and every parameter of every built-in grader, fed wrong values:
``openjudge validate`` answers with ``file:line: field: message`` lines, never a traceback."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from openjudge.cli import main
from openjudge.graders._registry import BUILTIN_GRADERS

WRONG: list[Any] = [{"x": [1]}, [[1], "a"], "1-5", -1, 1e308, None, True]

BASE: dict[str, Any] = {
    "version": 1,
    "providers": {
        "judge": {
            "kind": "openai",
            "model": "m",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key": "sk-test",
            "timeout_s": 5,
            "max_retries": 1,
            "structured_output": "json_object",
            "limits": {"max_concurrency": 4, "rpm": 60, "tpm": 10000},
            "sampling": {"temperature": 0, "top_p": 1, "max_tokens": 50, "seed": 0},
            "price": {"prompt_per_1k": 1.0, "completion_per_1k": 2.0},
        }
    },
    "graders": {
        "quality": {
            "type": "llm",
            "provider": "judge",
            "params": {"template": "Rate: {answer}", "score_range": [1, 5]},
            "mapper": {"answer": "answer"},
        },
        "exact": {
            "type": "string_match",
            "params": {"match_mode": "exact"},
            "mapper": {"response": "answer", "reference": "expected"},
        },
    },
    "aggregators": [
        {
            "type": "weighted_mean",
            "name": "reward",
            "weights": {"quality": 1, "exact": 1},
            "on_error": "skip",
        },
        {"type": "gate", "name": "gated", "gates": {"exact": 1.0}, "fail_score": 0.0},
    ],
    "runner": {"max_concurrency": 8, "timeout_s": 30, "deadline_s": 600},
    "data": {"path": "data.jsonl", "format": "jsonl", "id_field": "id", "on_error": "skip"},
    "cache": {"enabled": False, "path": "cache.sqlite"},
}


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if path:
        yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*path, i))


def _with(path: tuple[Any, ...], wrong: Any) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(yaml.safe_dump(BASE))
    target = config
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = wrong
    return config


def _validate(folder: Path, config: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    code = main(["validate", str(path)])  # an exception here is the traceback a user would see
    captured = capsys.readouterr()
    return code, captured.err


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "data.jsonl").write_text('{"id": "a", "answer": "4", "expected": "4"}\n', encoding="utf-8")
    return tmp_path


def test_the_base_config_is_valid(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _validate(folder, BASE, capsys) == (0, "")


@pytest.mark.slow  # every field of every section, validated one by one (15 s)
def test_every_field_fed_a_wrong_value_gives_a_located_message(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rejected = 0
    for path in _paths(BASE):
        for wrong in WRONG:
            code, err = _validate(folder, _with(path, wrong), capsys)
            assert code in (0, 1), (path, wrong, code)
            if code == 1:
                rejected += 1
                for line in err.splitlines():
                    assert line.startswith((f"error: {folder}/job.yaml:", f"error: {folder}/data.jsonl")), (
                        path,
                        wrong,
                        line,
                    )
    assert rejected > 300  # nearly every wrong value is caught, each with file and line


def _grader_parameters() -> Iterator[tuple[str, str]]:
    for name, entry in BUILTIN_GRADERS.items():
        for param in inspect.signature(entry.load()).parameters.values():
            if param.name != "model" and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                yield name, param.name


@pytest.mark.parametrize("grader_type", sorted(BUILTIN_GRADERS))
def test_every_grader_parameter_fed_a_wrong_value_gives_a_located_message(
    grader_type: str, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = BUILTIN_GRADERS[grader_type]
    spec: dict[str, Any] = {"type": grader_type}
    if entry.kind == "llm":
        spec["provider"] = "judge"
    base = {"providers": BASE["providers"], "graders": {"g": spec}}
    params = [p for t, p in _grader_parameters() if t == grader_type]
    if grader_type == "llm":
        spec["params"] = {"template": "Rate: {answer}"}
    for param in params:
        for wrong in WRONG:
            config = yaml.safe_load(yaml.safe_dump(base))
            config["graders"]["g"].setdefault("params", {})[param] = wrong
            code, err = _validate(folder, config, capsys)
            assert code in (0, 1), (grader_type, param, wrong)
            for line in err.splitlines():
                assert line.startswith(f"error: {folder}/job.yaml:"), (grader_type, param, wrong, line)
