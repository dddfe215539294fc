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
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import JsonValue

from openjudge.errors import ConfigError
from openjudge.graders.openai._spec import json_path, parse_grader
from openjudge.models.chat_model import ChatResponse, ModelCapabilities, OutputSpec, Sampling

__all__ = ["FoundGrader", "graders_in", "job_config_yaml", "located_graders"]

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


@dataclass(frozen=True, slots=True)
class FoundGrader:
    """A grader found in a JSON document, with where it is.

    Attributes:
        name: Its ``name`` (its ``type`` when it has none).
        grader: The grader object.
        path: Its JSON path in the document (``method.reinforcement.grader``,
            ``testing_criteria[1]``); "" for the document itself.
    """

    name: str
    grader: dict[str, JsonValue]
    path: str

    @property
    def where(self) -> str:
        """``grader 'name' (at <path>)``, for messages."""
        at = f"at {self.path}" if self.path else "the whole file"
        return f"grader {self.name!r} ({at})"


def located_graders(data: object) -> list[FoundGrader]:
    """Every grader in ``data`` with its JSON path (see the module docstring for the shapes)."""
    found: list[FoundGrader] = []

    def add(grader: Mapping[str, JsonValue], path: Sequence[int | str]) -> None:
        found.append(
            FoundGrader(str(grader.get("name") or grader.get("type")), dict(grader), json_path(path))
        )

    def walk(value: object, path: tuple[int | str, ...]) -> None:
        if isinstance(value, list):
            for index, entry in enumerate(value):
                walk(entry, (*path, index))
            return
        if not isinstance(value, Mapping):
            return
        if _is_grader(value) and value.get("type") not in ("reinforcement", "supervised", "dpo"):
            add(value, path)
            return
        method = value.get("method")
        if isinstance(method, Mapping):
            reinforcement = method.get("reinforcement")
            if isinstance(reinforcement, Mapping) and _is_grader(reinforcement.get("grader")):
                add(reinforcement["grader"], (*path, "method", "reinforcement", "grader"))
                return
        for key in ("grader", "reinforcement"):
            inner = value.get(key)
            if _is_grader(inner):
                add(inner, (*path, key))  # type: ignore[arg-type]  # checked: a grader mapping
                return
            if isinstance(inner, Mapping) and _is_grader(inner.get("grader")):
                add(inner["grader"], (*path, key, "grader"))
                return
        criteria = value.get("testing_criteria")
        if isinstance(criteria, list):
            walk(criteria, (*path, "testing_criteria"))

    walk(data, ())
    return found


def graders_in(data: object) -> list[tuple[str, dict[str, JsonValue]]]:
    """``(name, grader)`` for every grader in ``data`` (see the module docstring for the shapes)."""
    return [(found.name, found.grader) for found in located_graders(data)]


class _StandInJudge:
    """A judge that is never called: it lets a model grader be built to check its JSON."""

    def __init__(self, model: str) -> None:
        self.model_name = model
        self.capabilities = ModelCapabilities()

    async def achat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        output: OutputSpec | None = None,
        sampling: Sampling | None = None,
        top_logprobs: int | None = None,
        cache_tag: str = "",
    ) -> ChatResponse:
        raise RuntimeError("the stand-in judge of import-openai-graders is never called")


def _build_problem(grader: Mapping[str, JsonValue]) -> str:
    """Why ``grader`` cannot be built ("" when it can)."""
    from openjudge.graders.openai._grader import OpenAIGrader

    try:
        spec = parse_grader(grader)
        OpenAIGrader(spec, model=_StandInJudge(str(grader.get("model", ""))), sandbox="process")
    except (ValueError, ImportError) as exc:
        return str(exc)
    return ""


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

    Every grader is built once first (a model grader with a stand-in judge that is never
    called), so what a grader gets wrong is reported now, naming ``source``, the grader
    and the JSON path of the problem.

    Raises:
        ConfigError: Graders that are not valid, one problem each (``source: grader 'name'
            (at <path>): <field>: <message>``).
        ValueError: No grader was found.
    """
    found = located_graders(data)
    if not found:
        raise ValueError(
            f"{source}: no grader found (expected a grader object, a fine-tuning job with "
            "method.reinforcement.grader, a graders run request, or an eval's testing_criteria)"
        )
    graders: dict[str, object] = {}
    taken: set[str] = set()
    models: list[str] = []
    problems: list[str] = []
    for one in found:
        problem = _build_problem(one.grader)
        if problem:
            problems.append(f"{source}: {one.where}: {problem}")
            continue
        entry: dict[str, object] = {"type": "openai_grader"}
        needs = _models(one.grader)
        if needs:
            entry["provider"] = "judge"
            models += needs
        entry["params"] = {"grader": one.grader}
        graders[_key(one.name, taken)] = entry
    if problems:
        raise ConfigError(problems)
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
