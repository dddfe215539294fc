"""``+reward.openjudge.*`` options: validation and the messages users see."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from openjudge.integrations.verl._settings import (
    CONFIG_ENV,
    FailurePolicy,
    OpenJudgeVerlSettings,
    SettingsError,
    read_settings,
)


def test_reads_an_omegaconf_node_as_hydra_gives_it() -> None:
    node = OmegaConf.create(
        {"config": "/abs/graders.yaml", "on_failure": "fallback", "fallback_score": -1, "breaker_failures": 3}
    )
    settings = read_settings(node)
    assert settings == OpenJudgeVerlSettings(
        config="/abs/graders.yaml", on_failure="fallback", fallback_score=-1.0, breaker_failures=3
    )
    assert settings.aggregate is None and settings.timeout_s is None and settings.judge_cache is False


def test_defaults_drop_failures_and_stop_above_half_failed() -> None:
    policy = read_settings({"config": "x.yaml"}).failure_policy()
    assert policy == FailurePolicy(
        on_failure="drop",
        fallback_score=None,
        breaker_failures=5,
        breaker_cooldown_s=30.0,
        max_failure_rate=0.5,
        failure_window=100,
    )


def test_a_fallback_value_is_explicit() -> None:
    with pytest.raises(SettingsError) as needs:
        read_settings({"config": "x.yaml", "on_failure": "fallback"})
    assert str(needs.value) == (  # every option by its full name: no "reward.openjudge.: ..."
        "reward.openjudge.on_failure=fallback needs an explicit reward.openjudge.fallback_score "
        "(e.g. reward.openjudge.fallback_score=0.0)"
    )
    with pytest.raises(
        SettingsError,
        match=r"reward\.openjudge\.fallback_score is used only with reward\.openjudge\.on_failure=fallback",
    ):
        read_settings({"config": "x.yaml", "fallback_score": 0})
    with pytest.raises(SettingsError, match=r"reward\.openjudge\.on_failure"):
        read_settings({"config": "x.yaml", "on_failure": "zero"})


def test_missing_config_says_what_to_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    with pytest.raises(SettingsError, match=r"\+reward\.openjudge\.config=/abs/path/graders\.yaml"):
        read_settings(None)


def test_config_from_the_environment_when_no_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONFIG_ENV, "/from/env.yaml")
    assert read_settings(None).config == "/from/env.yaml"
    assert read_settings({"config": "/explicit.yaml"}).config == "/explicit.yaml"


def test_a_misspelt_option_gets_a_did_you_mean() -> None:
    with pytest.raises(SettingsError) as typo:
        read_settings({"config": "x.yaml", "timout_s": 10})
    assert str(typo.value).startswith(
        "reward.openjudge.timout_s: unknown option; did you mean +reward.openjudge.timeout_s? (options: aggregate,"
    )
    with pytest.raises(SettingsError) as unsuffixed:  # every duration in seconds ends in _s
        read_settings({"config": "x.yaml", "timeout": 10})
    assert "did you mean +reward.openjudge.timeout_s?" in str(unsuffixed.value)


def test_an_unknown_or_invalid_option_is_named() -> None:
    with pytest.raises(SettingsError, match=r"reward\.openjudge\.fallback"):
        read_settings({"config": "x.yaml", "fallback": 0})
    with pytest.raises(SettingsError, match=r"finite"):
        read_settings({"config": "x.yaml", "on_failure": "fallback", "fallback_score": float("nan")})
    with pytest.raises(SettingsError, match=r"reward\.openjudge\.timeout_s"):
        read_settings({"config": "x.yaml", "timeout_s": 0})
    with pytest.raises(SettingsError, match=r"reward\.openjudge\.max_failure_rate"):
        read_settings({"config": "x.yaml", "max_failure_rate": 1.5})
    with pytest.raises(SettingsError, match="must be a mapping"):
        read_settings("x.yaml")
