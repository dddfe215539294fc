"""``openjudge import-openai-graders FILE``: a job config (YAML) from OpenAI grader JSON.

Accepted JSON (the shapes OpenAI's API takes or returns):

* a grader object (``{"type": "string_check", ...}``, ``multi`` included);
* a fine-tuning job or its create request: ``method.reinforcement.grader``;
* a graders run / validate request: ``{"grader": {...}, ...}``;
* an eval or its create request: ``testing_criteria: [...]`` (one grader each);
* a JSON list of any of these.

The YAML has one ``openai_grader`` per grader with the JSON inline, a provider stub
when a model grader needs a judge (its model named after the JSON's, key from
``${OPENAI_API_KEY}``: edit ``kind``/``base_url``/``model`` to use another server),
and a mean aggregator named ``reward`` when there is more than one grader.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

import yaml
from pydantic import JsonValue

from openjudge.graders.openai._spec import MultiSpec, parse_grader

__all__ = ["graders_in", "job_config_yaml"]

_MODEL_TYPES = frozenset({"score_model", "label_model"})


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (python sources, prompts) as literal blocks, readable and editable."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _is_grader(value: object) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("type"), str)
        and ("name" in value or value.get("type") == "multi")
    )


def graders_in(data: object) -> list[tuple[str, dict[str, JsonValue]]]:
    """``(name, grader)`` for every grader in ``data`` (see the module docstring for the shapes)."""
    found: list[tuple[str, dict[str, JsonValue]]] = []

    def add(grader: Mapping[str, JsonValue]) -> None:
        found.append((str(grader.get("name") or grader.get("type")), dict(grader)))

    def walk(value: object) -> None:
        if isinstance(value, list):
            for entry in value:
                walk(entry)
            return
        if not isinstance(value, Mapping):
            return
        if _is_grader(value) and value.get("type") not in ("reinforcement", "supervised", "dpo"):
            add(value)
            return
        method = value.get("method")
        if isinstance(method, Mapping):
            reinforcement = method.get("reinforcement")
            if isinstance(reinforcement, Mapping) and _is_grader(reinforcement.get("grader")):
                add(reinforcement["grader"])
                return
        for key in ("grader", "reinforcement"):
            inner = value.get(key)
            if _is_grader(inner):
                add(inner)  # type: ignore[arg-type]  # checked: a grader mapping
                return
            if isinstance(inner, Mapping) and _is_grader(inner.get("grader")):
                add(inner["grader"])
                return
        criteria = value.get("testing_criteria")
        if isinstance(criteria, list):
            walk(criteria)

    walk(data)
    return found


def _key(name: str, taken: set[str]) -> str:
    key = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_").lower() or "grader"
    base, n = key, 2
    while key in taken or key == "reward":
        key, n = f"{base}_{n}", n + 1
    taken.add(key)
    return key


def _models(grader: Mapping[str, JsonValue]) -> list[str]:
    if grader.get("type") in _MODEL_TYPES:
        return [str(grader.get("model", ""))]
    subs = grader.get("graders")
    if grader.get("type") == "multi" and isinstance(subs, Mapping):
        return [m for sub in subs.values() if isinstance(sub, Mapping) for m in _models(sub)]
    return []


def job_config_yaml(data: object, *, source: str = "the JSON", data_path: str | None = None) -> str:
    """A job config for every grader in ``data``, as YAML text.

    Raises:
        ValueError: No grader was found, or one is not valid (the message names it and the field).
    """
    found = graders_in(data)
    if not found:
        raise ValueError(
            f"{source}: no grader found (expected a grader object, a fine-tuning job with "
            "method.reinforcement.grader, a graders run request, or an eval's testing_criteria)"
        )
    graders: dict[str, object] = {}
    taken: set[str] = set()
    models: list[str] = []
    for name, grader in found:
        try:
            spec = parse_grader(grader)
        except ValueError as exc:
            raise ValueError(f"{source}: grader {name!r}: {exc}") from None
        entry: dict[str, object] = {"type": "openai_grader"}
        needs = _models(grader)
        if needs:
            entry["provider"] = "judge"
            models += needs
        entry["params"] = {"grader": grader}
        if isinstance(spec, MultiSpec) and not spec.graders:
            continue
        graders[_key(name, taken)] = entry
    config: dict[str, object] = {"version": 1}
    if models:
        distinct = sorted(set(models))
        config["providers"] = {
            "judge": {
                "kind": "openai",
                "model": distinct[0],
                "api_key": "${OPENAI_API_KEY}",
                "limits": {"max_concurrency": 16},
            }
        }
    config["graders"] = graders
    if len(graders) > 1:
        config["aggregators"] = [{"type": "weighted_mean", "name": "reward"}]
    if data_path is not None:
        config["data"] = {"path": data_path}
    header = [
        f"# openjudge job config written by `openjudge import-openai-graders` from {source}.",
        "# Each grader runs the OpenAI grader JSON unchanged (docs/openai-graders.md).",
        "# Inputs: 'response' is the model output; the sample's other fields are the item",
        "# ({{ item.<field> }}). Map other names with mapper: {response: <field>, item: <field>}.",
    ]
    if models:
        header.append(
            f"# Model graders ({', '.join(sorted(set(models)))}) use provider 'judge': point it at any "
            "server (kind: vllm / litellm / ...)."
        )
    text = yaml.dump(config, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return "\n".join(header) + "\n" + text


def load_json(text: str, source: str) -> JsonValue:
    """JSON text, with a message naming ``source`` and the line on failure."""
    try:
        value: JsonValue = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source}:{exc.lineno}: not JSON: {exc.msg}") from None
    return value


def describe(found: Sequence[tuple[str, Mapping[str, JsonValue]]]) -> str:
    """One line per grader: name and type."""
    return "\n".join(f"  {name}: {grader.get('type')}" for name, grader in found)
