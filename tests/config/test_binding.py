"""A grader type's provider binding is data: the config reads it, never the type's name."""

from __future__ import annotations

from pathlib import Path

import pytest

from openjudge.config._build import build_job
from openjudge.config._loader import ConfigError, parse_config
from openjudge.graders._binding import JUDGE, NO_PROVIDER, OPTIONAL_JUDGE, REWARD_MODEL, ProviderBinding
from openjudge.graders._registry import BUILTIN_GRADERS, GraderType
from openjudge.graders.base_grader import BaseGrader
from openjudge.models.chat_model import ChatModel
from openjudge.providers.vllm_reward import VLLMRewardModel
from openjudge.results import GraderScore


class SometimesJudged(BaseGrader):
    """Judged when its config names a provider; takes a file of notes."""

    def __init__(self, notes: str, model: ChatModel | None = None, name: str = "sometimes") -> None:
        super().__init__(name=name, score_range=(0, 1))
        self.notes = notes
        self.model = model

    async def aevaluate(self, response: str) -> GraderScore:
        return GraderScore(name=self.name, score=1.0, score_range=self.score_range)


NEW_TYPES = (
    # A second reward-model type and an optionally judged one, under names the config code never saw.
    GraderType("scalar_reward", "openjudge.graders.reward_model:RewardModelGrader", REWARD_MODEL, "A reward"),
    GraderType(
        "sometimes_judged",
        f"{__name__}:SometimesJudged",
        OPTIONAL_JUDGE,
        "Judged if a provider is named",
        names_results_after_key=True,
        file_params=("notes",),
    ),
)

PROVIDERS = (
    "providers:\n"
    "  rm: {kind: vllm, model: skywork-rm, base_url: 'http://127.0.0.1:9/v1', api_key: none}\n"
    "  judge: {kind: openai, model: j, base_url: 'http://127.0.0.1:9/v1', api_key: none}\n"
)


@pytest.fixture(autouse=True)
def new_types(monkeypatch: pytest.MonkeyPatch) -> None:
    for entry in NEW_TYPES:
        monkeypatch.setitem(BUILTIN_GRADERS, entry.name, entry)


def test_the_builtin_types_declare_their_bindings() -> None:
    bindings = {name: entry.binding for name, entry in BUILTIN_GRADERS.items()}
    assert bindings["llm"] is JUDGE and bindings["correctness"] is JUDGE
    assert bindings["reward_model"] is REWARD_MODEL and bindings["openai_grader"] is OPTIONAL_JUDGE
    assert bindings["string_match"] is NO_PROVIDER
    assert (REWARD_MODEL.parameter, REWARD_MODEL.serves, REWARD_MODEL.kind) == (
        "reward_model",
        "reward_model",
        "llm",
    )
    assert (OPTIONAL_JUDGE.kind, NO_PROVIDER.takes_provider) == ("rule", False)


def test_a_class_of_ones_own_is_a_judge_when_it_takes_model() -> None:
    assert ProviderBinding.of_class(SometimesJudged) is JUDGE
    assert ProviderBinding.of_class(GraderScore) is NO_PROVIDER
    entry = GraderType.of_class("m:SometimesJudged", SometimesJudged)
    assert (entry.binding, entry.names_results_after_key, entry.summary) == (
        JUDGE,
        True,
        "Judged when its config names a provider; takes a file of notes.",
    )


def test_a_new_reward_model_type_gets_its_providers_reward_model_and_its_messages() -> None:
    job = build_job(
        parse_config(PROVIDERS + "graders:\n  r: {type: scalar_reward, provider: rm}\n"), use_cache=False
    )
    grader = job.runner.grader_configs["r"].grader
    assert isinstance(grader.reward_model, VLLMRewardModel)  # type: ignore[attr-defined]  # a RewardModelGrader
    assert job.grader_providers == {"r": "rm"}
    with pytest.raises(ConfigError) as missing:
        parse_config(PROVIDERS + "graders:\n  r: {type: scalar_reward}\n", source="job.yaml")
    assert missing.value.problems == [
        "job.yaml:5: graders.r: grader type 'scalar_reward' scores with a reward model and needs "
        "'provider: <name>' (a provider of kind 'transformers' (in process) or 'vllm' (its /classify endpoint))"
    ]
    with pytest.raises(ConfigError) as wrong:
        parse_config(PROVIDERS + "graders:\n  r: {type: scalar_reward, provider: judge}\n", source="job.yaml")
    assert wrong.value.problems == [
        "job.yaml:5: graders.r.provider: scalar_reward graders need a provider of kind 'transformers' "
        "(in process) or 'vllm' (its /classify endpoint); 'judge' is of kind 'openai'"
    ]


def test_an_optional_judge_takes_a_provider_or_none_its_key_as_name_and_files_beside_the_config(
    tmp_path: Path,
) -> None:
    text = PROVIDERS + "graders:\n  with: {type: sometimes_judged, provider: judge, params: {notes: n.txt}}\n"
    text += "  without: {type: sometimes_judged, params: {notes: /abs/n.txt}}\n"
    job = build_job(parse_config(text), use_cache=False, base_dir=tmp_path)
    judged = job.runner.grader_configs["with"].grader
    alone = job.runner.grader_configs["without"].grader
    assert isinstance(judged, SometimesJudged) and isinstance(alone, SometimesJudged)
    assert judged.model is job.providers["judge"] and alone.model is None
    assert (judged.name, alone.name) == ("with", "without")
    assert (judged.notes, alone.notes) == (str(tmp_path / "n.txt"), "/abs/n.txt")
    assert job.grader_providers == {"with": "judge"}


def test_a_rule_type_refuses_a_provider_whatever_its_name() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(PROVIDERS + "graders:\n  s: {type: string_match, provider: judge}\n", source="job.yaml")
    assert refused.value.problems == [
        "job.yaml:5: graders.s.provider: grader type 'string_match' is rule-based and takes no provider"
    ]
