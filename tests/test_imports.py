"""Import discipline: the core never drags in provider SDKs or heavy frameworks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = [
    "openai",
    "litellm",
    "torch",
    "verl",
    "transformers",
    "ray",
    "numpy",
    "httpx",
    "openjudge.providers",
    "openjudge.integrations",
    "openjudge.config",
    "openjudge.jobs",
]

CORE_MODULES = [
    "openjudge",
    "openjudge.graders.base_grader",
    "openjudge.graders.llm_grader",
    "openjudge.graders.function_grader",
    "openjudge.runner.grading_runner",
    "openjudge.runner.aggregators",
    "openjudge.models.schema.prompt_template",
    "openjudge.models.schema.oai.message",
    "openjudge.models.chat_client",
    "openjudge.models.engine",
    "openjudge.models.cache",
]


def loaded_after(module: str) -> set[str]:
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    names: list[str] = json.loads(out)
    # Each module under its top-level name, and openjudge's layers under their own.
    return {name.split(".")[0] for name in names} | {
        ".".join(name.split(".")[:2]) for name in names if name.startswith("openjudge.")
    }


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_imports_no_provider_sdk_or_framework(module: str) -> None:
    assert loaded_after(module).isdisjoint(HEAVY), module


def test_the_openjudge_guide_path_loads_the_openai_provider_on_first_use() -> None:
    assert "openjudge.providers" not in loaded_after("openjudge.models.openai_chat_model")
    code = "import json, sys; from openjudge.models.openai_chat_model import OpenAIChatModel; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    loaded = set(json.loads(out))
    assert {"openjudge.providers.openai", "aiohttp"} <= loaded
    assert not {"openai", "litellm", "torch", "verl"} & {name.split(".")[0] for name in loaded}  # posts bytes


def test_without_the_litellm_extra_the_providers_work_and_litellm_names_its_extra(tmp_path: Path) -> None:
    # openai and litellm come with the litellm extra: the core and the HTTP providers need neither.
    code = """if True:
        import sys
        sys.modules["openai"] = sys.modules["litellm"] = None  # as if not installed
        from openjudge.cli import main
        from openjudge.providers import AzureChatModel, LiteLLMChatModel, OpenAIChatModel, VLLMChatModel
        judge = OpenAIChatModel("m", api_key="k", base_url="http://127.0.0.1:9/v1")
        print(type(judge).__name__, VLLMChatModel.__name__, AzureChatModel.__name__)
        try:
            LiteLLMChatModel("hosted_vllm/m", base_url="http://127.0.0.1:9/v1")
        except ImportError as exc:
            print(exc)
        main(["validate", "job.yaml"])
    """
    (tmp_path / "job.yaml").write_text(
        "providers:\n"
        "  judge: {kind: litellm, model: hosted_vllm/m, base_url: 'http://127.0.0.1:9/v1'}\n"
        "graders:\n"
        "  q: {type: llm, provider: judge, params: {template: 'Rate {response}'}}\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}  # this checkout
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, check=False, capture_output=True, text=True
    )
    hint = "the litellm provider needs litellm: pip install 'openjudge-graders[litellm]'"
    assert done.stdout.splitlines() == ["OpenAIChatModel VLLMChatModel AzureChatModel", hint]
    assert done.stderr.strip() == f"error: job.yaml:2: providers.judge: {hint}"
