"""The config schema gives each grader ``type`` its own ``params``, and agrees with the loader."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import jsonschema
import pytest
import yaml

from openjudge.config import config_json_schema
from openjudge.config._locations import Located
from openjudge.config._params import grader_arguments
from openjudge.graders._parameters import grader_parameters
from openjudge.graders._registry import BUILTIN_GRADERS

ROOT = Path(__file__).resolve().parents[2]
_ENV = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


@functools.cache
def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(config_json_schema())


def problems(config: dict[str, Any]) -> list[str]:
    """Every error, with those inside the oneOf branches (what an editor shows for the matching type)."""

    def walk(errors: Iterable[jsonschema.ValidationError]) -> Iterator[str]:
        for error in errors:
            yield f"{error.json_path}: {error.message}"
            yield from walk(error.context or [])

    return list(walk(validator().iter_errors(config)))


def one_grader(entry: dict[str, Any]) -> dict[str, Any]:
    return {"graders": {"g": entry}}


def test_graders_are_a_union_discriminated_on_type() -> None:
    defs = cast(dict[str, Any], config_json_schema()["$defs"])
    union = defs["GraderSpec"]
    assert union["discriminator"] == {
        "propertyName": "type",
        "mapping": {name: f"#/$defs/grader.{name}" for name in sorted(BUILTIN_GRADERS)},
    }
    assert len(union["oneOf"]) == len(BUILTIN_GRADERS) + 1  # and a class of your own
    branch = defs["grader.string_match"]
    assert branch["properties"]["type"]["const"] == "string_match"
    assert branch["properties"]["params"] == {"$ref": "#/$defs/params.string_match"}


def test_params_are_checked_per_type() -> None:
    assert problems(one_grader({"type": "string_match", "params": {"match_mode": "contains"}})) == []
    wrong = problems(one_grader({"type": "string_match", "params": {"match_mode": "fuzzy"}}))
    assert any("'fuzzy' is not one of ['exact', 'normalized', 'contains', 'regex']" in p for p in wrong), (
        wrong
    )
    unknown = problems(one_grader({"type": "string_match", "params": {"mode": "exact"}}))
    assert any("'mode' was unexpected" in p for p in unknown), unknown
    assert (
        problems(one_grader({"type": "string_match", "params": {"mode": "exact"}, "when": {"task": "x"}}))
        != []
    )
    assert problems(one_grader({"type": "my_graders:Strict", "params": {"anything": [1, 2]}})) == []
    assert problems(one_grader({"type": "no_such_grader"})) != []
    assert problems(one_grader({"type": "llm", "provider": "judge", "params": {"model": "x"}})) != []


def test_an_openai_graders_inline_json_is_checked_too() -> None:
    grader = {"type": "string_check", "name": "x", "input": "a", "reference": "b", "operation": "eq"}
    entry = {"type": "openai_grader", "params": {"grader": grader, "score_model_non_numeric": "error"}}
    assert problems(one_grader(entry)) == []
    assert problems(one_grader({**entry, "params": {"grader": "rft_job.json"}})) == []
    bad = {**entry, "params": {"grader": {**grader, "operation": "neq"}}}
    assert problems(one_grader(bad)) != []
    assert (
        problems(one_grader({**entry, "params": {"grader": grader, "score_model_non_numeric": "nan"}})) != []
    )


def _documented_configs() -> list[tuple[str, dict[str, Any]]]:
    found = [
        (str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))
        for p in sorted(ROOT.glob("examples/*/config.yaml"))
    ]
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        blocks = re.findall(
            r"^```yaml\n(.*?)^```", page.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE
        )
        # An abridged example ({type: string_check, ...}) is not a config.
        found += [(f"{page.name}[{i}]", block) for i, block in enumerate(blocks) if "..." not in block]
    configs = []
    for where, text in found:
        data = yaml.safe_load(_ENV.sub("http://127.0.0.1:8000/v1", text))  # ${VAR}: as the loader expands it
        if isinstance(data, dict) and "graders" in data:
            configs.append((where, data))
    return configs


def test_the_documented_configs_validate() -> None:
    configs = _documented_configs()
    assert len(configs) >= 5
    for where, config in configs:
        assert problems(config) == [], where


REQUIRED: dict[str, dict[str, Any]] = {
    "openai_grader": {
        "grader": {"type": "string_check", "name": "x", "input": "a", "reference": "b", "operation": "eq"}
    }
}
"""Values for the params a type requires."""


@pytest.mark.parametrize("name", sorted(BUILTIN_GRADERS))
def test_the_schema_and_the_loader_agree_on_every_default(name: str) -> None:
    """Every param a config can write, at its default: the schema takes it, and so does the loader."""
    info = BUILTIN_GRADERS[name]
    cls = info.load()
    parameters = grader_parameters(info)
    required = REQUIRED.get(name, {})
    assert sorted(required) == sorted(p.name for p in parameters if p.required)
    for p in parameters:
        if p.required or not p.config_settable:
            continue
        params = {**required, p.name: p.default}
        assert problems(one_grader({"type": name, "params": params})) == [], (name, p.name)
        _, found = grader_arguments(cls, params, Located("<test>"), ("graders", "g", "params"))
        assert found == [], (name, p.name, found)
