"""``+reward.openjudge.*`` options: validation and the messages users see."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from integrations.verl.settings import CONFIG_ENV, OpenJudgeVerlSettings, SettingsError, read_settings


def test_reads_an_omegaconf_node_as_hydra_gives_it() -> None:
    node = OmegaConf.create({"config": "/abs/graders.yaml", "fallback_score": -1, "flag_failures": False})
    settings = read_settings(node)
    assert settings == OpenJudgeVerlSettings(
        config="/abs/graders.yaml", fallback_score=-1.0, flag_failures=False
    )
    assert settings.aggregate is None and settings.timeout_s is None


def test_missing_config_says_what_to_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    with pytest.raises(SettingsError, match=r"\+reward\.openjudge\.config=/abs/path/graders\.yaml"):
        read_settings(None)


def test_config_from_the_environment_when_no_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONFIG_ENV, "/from/env.yaml")
    assert read_settings(None).config == "/from/env.yaml"
    assert read_settings({"config": "/explicit.yaml"}).config == "/explicit.yaml"


def test_an_unknown_or_invalid_option_is_named() -> None:
    with pytest.raises(SettingsError, match=r"reward\.openjudge\.fallback"):
        read_settings({"config": "x.yaml", "fallback": 0})
    with pytest.raises(SettingsError, match=r"reward\.openjudge\.fallback_score: .*finite"):
        read_settings({"config": "x.yaml", "fallback_score": float("nan")})
    with pytest.raises(SettingsError, match=r"reward\.openjudge\.timeout_s"):
        read_settings({"config": "x.yaml", "timeout_s": 0})
    with pytest.raises(SettingsError, match="must be a mapping"):
        read_settings("x.yaml")
