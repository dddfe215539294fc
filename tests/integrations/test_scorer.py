"""One scorer behind VERL, TRL and SkyRL: the same failure scenarios through each adapter's public entry.

Each adapter is driven as its trainer drives it (VERL's ``naive`` manager awaiting
``compute_score``; TRL awaiting a reward function; SkyRL stepping an environment made by
``skyrl_gym.make``), one sample per call, against a local judge server. The failure
policy, the breaker and the failure rate are options of the shared
:class:`~openjudge.integrations.scoring.RewardScorer`, so each scenario gives the same
outcome on all three.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import skyrl_gym  # type: ignore[import-untyped]  # skyrl-gym ships no types

from openjudge.integrations.scoring import FailureRateExceeded, SampleFailed
from openjudge.integrations.skyrl import register_env
from openjudge.integrations.trl import OpenJudgeRewards, OpenJudgeTRLSettings
from openjudge.integrations.verl import compute_score
from openjudge.integrations.verl._ledger import reset_run_ledgers
from openjudge.testing.judge_server import JudgeServerProcess

GRADERS = """\
providers:
  judge: {{kind: openai, model: m, base_url: '{base_url}', api_key: k, timeout_s: 5, max_retries: 0}}
graders:
  quality:
    type: llm
    provider: judge
    params: {{template: "Answer: {{answer}}. Score 1 to 5.", score_range: [1, 5]}}
    mapper: {{answer: response}}
cache: {cache}
"""

pytestmark = pytest.mark.anyio

DOWN = "#oj:status=503"  # the test judge answers 503 to any request containing it


@dataclass(frozen=True)
class Outcome:
    reward: float | None  # None: left out of training (TRL's None)
    failed: bool
    kind: str  # the judge grader's error kind ("" when it scored)


Adapter = Callable[[Path, dict[str, object]], Callable[[str], Awaitable[Outcome]]]
_env_ids = itertools.count()


def verl(graders: Path, options: dict[str, object]) -> Callable[[str], Awaitable[Outcome]]:
    """VERL's ``naive`` reward manager awaiting ``compute_score`` for one row."""

    async def score(response: str) -> Outcome:
        out = await compute_score("src", response, None, {}, openjudge={"config": str(graders), **options})
        kind = out["openjudge/quality/error_kind"]
        assert isinstance(out["score"], float) and isinstance(kind, str)
        return Outcome(out["score"], out["openjudge/failed"] == 1.0, kind)

    return score


def trl(graders: Path, options: dict[str, object]) -> Callable[[str], Awaitable[Outcome]]:
    """TRL's ``GRPOTrainer`` awaiting the aggregate reward function for one completion."""
    settings = OpenJudgeTRLSettings.model_validate({"config": str(graders), **options})
    reward = OpenJudgeRewards.from_settings(settings).aggregate()

    async def score(response: str) -> Outcome:
        logged: dict[str, list[object]] = {}
        (value,) = await reward(
            prompts=["q"], completions=[response], log_extra=lambda k, v: logged.setdefault(k, v)
        )
        (kind,) = logged["openjudge/quality/error"]
        assert isinstance(kind, str)
        return Outcome(value, kind != "", kind)

    return score


def skyrl(graders: Path, options: dict[str, object]) -> Callable[[str], Awaitable[Outcome]]:
    """SkyRL's generator stepping a fresh environment for one trajectory (options from SkyRL's config)."""
    env_id = f"openjudge-scorer-test-{next(_env_ids)}"
    register_env(env_id, config=str(graders))

    async def score(response: str) -> Outcome:
        env = skyrl_gym.make(env_id, env_config=options, extras={})
        env.init([{"role": "user", "content": "q"}])
        out = env.step(response)
        info = out["metadata"]["openjudge"]
        return Outcome(out["reward"], info["failed"], info["errors"].get("quality", ""))

    return score


ADAPTERS: dict[str, Adapter] = {"verl": verl, "trl": trl, "skyrl": skyrl}


@pytest.fixture
def graders(tmp_path: Path, judge_server: JudgeServerProcess) -> Iterator[Path]:
    reset_run_ledgers()  # VERL's ledger outside Ray is the process's: a new run per test
    path = tmp_path / "graders.yaml"
    path.write_text(
        GRADERS.format(base_url=judge_server.base_url, cache="{enabled: false}"), encoding="utf-8"
    )
    yield path
    reset_run_ledgers()


@pytest.mark.parametrize("adapter", ADAPTERS)
async def test_one_failed_sample_gets_the_policy_on_every_adapter(adapter: str, graders: Path) -> None:
    score = ADAPTERS[adapter](graders, {"on_failure": "fallback", "fallback_score": -1.0})
    outcomes = [await score(r) for r in ["fine", f"fine {DOWN}", "fine"]]
    assert outcomes == [
        Outcome(0.5, False, ""),  # the test judge's default 3 on 1..5
        Outcome(-1.0, True, "provider_error"),  # fallback_score, flagged: never a judgement
        Outcome(0.5, False, ""),
    ]


@pytest.mark.parametrize("adapter", ADAPTERS)
async def test_a_judge_that_is_down_trips_the_breaker_on_every_adapter(
    adapter: str, graders: Path, judge_server: JudgeServerProcess
) -> None:
    options: dict[str, object] = {
        "on_failure": "fallback",
        "fallback_score": 0.0,
        "breaker_failures": 2,
        "breaker_cooldown_s": 60,
    }
    score = ADAPTERS[adapter](graders, options)
    before = judge_server.stats().chat_requests
    kinds = [(await score(f"x {DOWN}")).kind for _ in range(4)]
    assert kinds == ["provider_error", "provider_error", "circuit_open", "circuit_open"]
    assert judge_server.stats().chat_requests - before == 2  # an open breaker makes no call


@pytest.mark.parametrize("adapter", ADAPTERS)
async def test_a_failure_rate_above_the_ceiling_stops_every_adapter(adapter: str, graders: Path) -> None:
    options: dict[str, object] = {
        "on_failure": "fallback",
        "fallback_score": 0.0,
        "breaker_failures": 0,
        "failure_window": 4,
        "max_failure_rate": 0.5,
    }
    score = ADAPTERS[adapter](graders, options)
    for response in ["fine", f"x {DOWN}", f"x {DOWN}"]:
        await score(response)
    with pytest.raises(FailureRateExceeded, match=r"3 of the last 4 samples failed"):
        await score(f"x {DOWN}")


@pytest.mark.parametrize(
    ("adapter", "expected"),
    [("trl", Outcome(None, True, "provider_error")), ("skyrl", Outcome(0.0, True, "provider_error"))],
)
async def test_drop_in_each_trainers_way(adapter: str, expected: Outcome, graders: Path) -> None:
    """``drop`` is said in each trainer's way: TRL gets ``None`` (left out of the reward
    sum); SkyRL must have a number and a step knows no group, so it is neutral: 0.0, flagged."""
    score = ADAPTERS[adapter](graders, {"on_failure": "drop"})
    assert await score(f"x {DOWN}") == expected


async def test_neutral_under_trl_drops_a_failure_whose_group_has_none_scored_in_the_batch(
    graders: Path,
) -> None:
    """TRL shards a prompt's generations over processes: with no sibling scored in this batch,
    0.0 could be an invented reward (the others may be scored elsewhere), so it is left out."""
    settings = OpenJudgeTRLSettings.model_validate({"config": str(graders), "on_failure": "neutral"})
    reward = OpenJudgeRewards.from_settings(settings).aggregate()
    values = await reward(prompts=["a", "a", "b"], completions=["x", f"x {DOWN}", f"y {DOWN}"])
    assert values[0] is not None and values[1] == values[0]  # its group's mean: zero advantage
    assert values[2] is None


async def test_drop_under_verl_fails_the_session(graders: Path) -> None:
    with pytest.raises(SampleFailed, match="on_failure=drop"):
        await verl(graders, {"on_failure": "drop"})(f"x {DOWN}")


@pytest.mark.parametrize("adapter", ADAPTERS)
async def test_relative_paths_in_the_yaml_resolve_against_its_folder_on_every_adapter(
    adapter: str, tmp_path: Path, judge_server: JudgeServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, elsewhere = tmp_path / "configs", tmp_path / "cwd"
    folder.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # a Ray worker's working directory is not the YAML's
    path = folder / "graders.yaml"
    path.write_text(GRADERS.format(base_url=judge_server.base_url, cache="{path: judge-cache.sqlite}"))
    score = ADAPTERS[adapter](path, {"judge_cache": True})
    assert await score("fine") == Outcome(0.5, False, "")
    assert (folder / "judge-cache.sqlite").exists() and not (elsewhere / "judge-cache.sqlite").exists()
