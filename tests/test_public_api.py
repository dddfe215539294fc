"""The public surface: what `openjudge` and its documented subpackages export, pinned.

And the private-module convention (docs/architecture.md): a module whose dotted name has a
part starting with ``_`` is internal; every other module is a package ``__init__`` or is
listed in :data:`PUBLIC_MODULES` with the reason it is public.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import openjudge
from openjudge.graders._registry import BUILTIN_GRADERS

ROOT = Path(__file__).resolve().parents[1]

PUBLIC = {
    "openjudge": [
        "BaseGrader",
        "ChatMessage",
        "ErrorKind",
        "FunctionGrader",
        "GateAggregator",
        "GraderConfig",
        "GraderError",
        "GraderMode",
        "GraderRank",
        "GraderResult",
        "GraderScore",
        "GradingRunner",
        "InvalidInputError",
        "LLMGrader",
        "MinAggregator",
        "NotApplicable",
        "OpenAIChatModel",
        "PromptTemplate",
        "ResponseFailure",
        "RowResult",
        "ScoreRange",
        "TokenUsage",
        "WeightedMeanAggregator",
        "__version__",
    ],
    "openjudge.runner": [
        "Aggregator",
        "GateAggregator",
        "GraderConfig",
        "GradingRunner",
        "MinAggregator",
        "RoutedAggregator",
        "WeightedMeanAggregator",
        "batch_collector",
    ],
    "openjudge.providers": [
        "AzureChatModel",
        "LiteLLMChatModel",
        "OpenAIChatModel",
        "StructuredOutputChoice",
        "TransformersChatModel",
        "TransformersRewardModel",
        "VLLMChatModel",
        "VLLMRewardModel",
        "forget_structured_output",
        "resolve_model",
        "structured_output_choice",
    ],
    "openjudge.testing": ["FunctionChatModel", "JudgeServer"],
    # The exception tree (openjudge/errors.py), under OpenJudgeError.
    "openjudge.errors": [
        "ChatModelError",
        "ConfigError",
        "DatasetError",
        "ErrorKind",
        "FailureRateExceeded",
        "GroupJudgingError",
        "InferenceError",
        "InvalidInputError",
        "LabelledDataError",
        "OpenJudgeError",
        "ResponseFailure",
        "ResultsFileError",
        "SampleFailed",
        "SandboxError",
        "SchemaError",
        "SettingsError",
    ],
    # The application layer: what a program (not the command line) needs.
    "openjudge.config": [
        "BuiltJob",
        "ConfigError",
        "GraderSpec",
        "JobConfig",
        "ProviderSpec",
        "build_job",
        "config_json_schema",
        "load_config",
        "parse_config",
    ],
    "openjudge.jobs": [
        "DatasetError",
        "GradingBackend",
        "JobMismatchError",
        "LocalBackend",
        "ResultsFileError",
        "ResultsHeader",
        "RunStats",
        "read_header",
        "read_results",
        "run_job",
        "write_report",
    ],
    "openjudge.distributed": ["RayBackend", "WorkerPlan", "grade_on_ray", "plan_workers"],
    "openjudge.metaeval": [
        "ComparisonReport",
        "LabelledDataError",
        "MetaEvalReport",
        "MetaEvalRun",
        "PairItem",
        "PairwiseSet",
        "PointItem",
        "PointwiseSet",
        "collect",
        "collect_config",
        "compare_runs",
        "load_labelled",
        "load_recorded",
        "merge_runs",
        "read_judgements",
        "render_comparison",
        "render_html",
        "render_report",
        "summarize",
        "write_html",
        "write_judgements",
    ],
    "openjudge.cli": ["main"],
    "openjudge.models": [
        "ChatClient",
        "ChatMessage",
        "ChatModel",
        "ChatModelError",
        "ChatRequest",
        "ChatResponse",
        "ChatTransport",
        "JudgeCache",
        "LanguageEnum",
        "ModelCapabilities",
        "PromptTemplate",
        "ProviderLimits",
        "ProviderPolicy",
        "RetryPolicy",
        "Reward",
        "RewardModel",
        "Sampling",
        "TokenLogprob",
    ],
    # Grader families, each exported lazily (OpenJudge's module paths, kept for its VERL guide, import these packages).
    "openjudge.graders.agent": [
        "ActionLoopDetectionGrader",
        "ObservationInformationGainGrader",
        "ToolCallPrecisionRecallMatchGrader",
        "ToolCallStepSequenceMatchGrader",
        "TrajectoryComprehensiveGrader",
        "TrajectoryStepEfficiencyGrader",
    ],
    "openjudge.graders.common": [
        "CorrectnessGrader",
        "HallucinationGrader",
        "HarmfulnessGrader",
        "InstructionFollowingGrader",
        "RelevanceGrader",
    ],
}


PUBLIC_MODULES = {
    # The import paths of OpenJudge's VERL guide (docs/openjudge-compat.md): they must keep working.
    "openjudge.graders.base_grader": "OpenJudge guide path",
    "openjudge.graders.llm_grader": "OpenJudge guide path",
    "openjudge.graders.agent.action.action_loop": "OpenJudge guide path",
    "openjudge.graders.agent.observation.observation_information_gain": "OpenJudge guide path",
    "openjudge.graders.agent.trajectory.trajectory_comprehensive": "OpenJudge guide path",
    "openjudge.models.openai_chat_model": "OpenJudge guide path (a lazy face of openjudge.providers.openai)",
    "openjudge.models.schema.prompt_template": "OpenJudge guide path",
    "openjudge.models.schema.oai.message": "OpenJudge guide path",
    "openjudge.runner.grading_runner": "OpenJudge guide path",
    # The base of LLM graders whose calls carry their own context (docs/graders.md).
    "openjudge.graders.judge_grader": "documented base class path (JudgeGrader, PreparedCall)",
    # The result vocabulary is a module of its own at the top.
    "openjudge.results": "the result vocabulary, imported by every layer",
    "openjudge.errors": "the exception tree, under the result vocabulary (the floor of the layers)",
    # Run by name.
    "openjudge.graders.catalogue": "python -m openjudge.graders.catalogue",
    "openjudge.testing.judge_server": "python -m openjudge.testing.judge_server",
    "openjudge.integrations.verl.plugin": "the verl.plugins entry point (pyproject.toml)",
    "openjudge.integrations.verl.agent_loop": "VERL agent-loop configs name its class by path",
    # Imported by path in docs/ today; each may go private once its page imports from the package.
    "openjudge.graders.blame": "documented import path (docs/graders.md)",
    "openjudge.graders.code.suites": "documented import path (docs/graders.md)",
    "openjudge.graders.comparison.prompts": "documented import path (docs/meta-eval.md)",
    "openjudge.graders.format.reasoning_format": "documented import path",
    "openjudge.graders.function_grader": "documented import path",
    "openjudge.graders.provided_score": "documented import path",
    "openjudge.graders.reward_model": "documented import path",
    "openjudge.graders.text.string_match": "documented import path",
    "openjudge.integrations.verl.group.judges": "documented import path (docs/verl.md)",
    "openjudge.integrations.verl.group.members": "documented import path (docs/verl.md)",
    "openjudge.integrations.verl.legacy": "documented import path (docs/verl.md)",
    "openjudge.integrations.verl.lifecycle": "documented import path (docs/verl.md)",
    "openjudge.integrations.verl.sampler": "documented import path (docs/verl.md)",
    "openjudge.integrations.verl.samples": "documented import path (docs/verl.md)",
    "openjudge.models.cache": "documented import path",
    "openjudge.models.chat_client": "documented import path",
    "openjudge.models.chat_model": "documented import path",
    "openjudge.models.engine": "documented import path",
    "openjudge.models.policy": "documented import path",
    "openjudge.models.reward_model": "documented import path",
    "openjudge.models.transport": "documented import path",
    "openjudge.providers.openai": "documented import path",
    "openjudge.providers.vllm": "documented import path",
    "openjudge.providers.vllm_reward": "documented import path",
    "openjudge.runner.aggregators": "documented import path",
    "openjudge.testing.function_model": "documented import path",
}
"""Modules public without an underscore, each with why; anything else is private or a package."""


RUN_ELSEWHERE = {
    "openjudge.graders.code.harness": "runs inside the code sandbox as a top-level package named "
    "'harness' (mounted or shipped by folder name); not an import path for users",
}
"""Packages whose code runs outside the library under a name of its own: left as they are."""


def _modules() -> list[str]:
    return sorted(
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in (ROOT / "openjudge").rglob("*.py")
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    )


def _is_private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_all_is_pinned_and_every_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(PUBLIC[package])
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_every_builtin_grader_class_is_importable_from_openjudge_graders() -> None:
    graders = importlib.import_module("openjudge.graders")
    classes = {entry.target.partition(":")[2]: entry.load() for entry in BUILTIN_GRADERS.values()}
    extra = {
        "BaseGrader",
        "FunctionGrader",
        "JudgeGrader",
        "PreparedCall",
        "from_openai_grader",
        "grader_boundary",
        "set_response_failure_score",
    }
    assert set(classes) | extra == set(graders.__all__)
    for name, cls in classes.items():
        assert getattr(graders, name) is cls


def test_the_top_level_names_are_the_ones_the_openjudge_guide_paths_give() -> None:
    from openjudge.graders.base_grader import BaseGrader, GraderScore
    from openjudge.models.openai_chat_model import OpenAIChatModel
    from openjudge.runner.grading_runner import GraderConfig, GradingRunner

    assert openjudge.BaseGrader is BaseGrader
    assert openjudge.GraderScore is GraderScore
    assert openjudge.OpenAIChatModel is OpenAIChatModel
    assert (openjudge.GradingRunner, openjudge.GraderConfig) == (GradingRunner, GraderConfig)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        _ = openjudge.Nope  # type: ignore[attr-defined]  # no such name: mypy knows it too


def test_every_module_is_private_a_package_or_listed_public() -> None:
    unlisted = [
        module
        for module in _modules()
        if not _is_private(module)
        and module not in PUBLIC_MODULES
        and not any(module.startswith(f"{package}.") for package in RUN_ELSEWHERE)
    ]
    assert unlisted == [], (
        "name these modules _module.py and re-export their public names from the package "
        "(or, if users import them by path, list them in PUBLIC_MODULES with the reason)"
    )


def test_public_modules_exist() -> None:
    assert sorted(set(PUBLIC_MODULES) - set(_modules())) == []


_IMPORT = re.compile(r"^\s*(?:from|import)\s+(openjudge[\w.]*)", re.MULTILINE)


def test_docs_import_no_private_module() -> None:
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL):
            found += [f"{page.name}: {m}" for m in _IMPORT.findall(block) if _is_private(m)]
    assert found == [], "docs import from the package that exports the name"


def test_package_docstrings_name_no_private_module() -> None:
    for package in ("openjudge.jobs", "openjudge.config", "openjudge.distributed", "openjudge.metaeval"):
        init = ROOT.joinpath(*package.split("."), "__init__.py")
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert not re.search(r"openjudge(\.\w+)*\._\w+", doc), package


def _public_packages() -> list[str]:
    packages = [
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "openjudge").rglob("__init__.py")
        if "__pycache__" not in init.parts
    ]
    return sorted(
        [p for p in packages if not _is_private(p) and not any(p.startswith(r) for r in RUN_ELSEWHERE)]
        + ["openjudge.errors", "openjudge.results"]
    )


def test_every_name_the_docs_import_is_exported_by_a_public_package() -> None:
    exported: set[str] = set()
    for package in _public_packages():
        exported |= set(getattr(importlib.import_module(package), "__all__", ()))
    missing = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL):
            for node in ast.walk(ast.parse(block)):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("openjudge"):
                    missing += [f"{page.name}: {a.name}" for a in node.names if a.name not in exported]
    assert missing == [], "export these from the package a user would look in"
