"""Tiny checkpoints, built once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.providers.transformers import tiny


@pytest.fixture(scope="session")
def judge_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny.wired_judge(tmp_path_factory.mktemp("judge"))


@pytest.fixture(scope="session")
def random_lm_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny.random_causal_lm(tmp_path_factory.mktemp("random-lm"))


@pytest.fixture(scope="session")
def reward_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny.random_reward_model(tmp_path_factory.mktemp("reward"))
