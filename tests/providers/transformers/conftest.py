"""Tiny checkpoints, built once per test session, and a probe on forward passes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from openjudge.providers.transformers import TransformersChatModel
from tests.providers.transformers import tiny
from tests.providers.transformers.helpers import ForwardHook


@pytest.fixture(scope="session")
def judge_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny.wired_judge(tmp_path_factory.mktemp("judge"))


@pytest.fixture(scope="session")
def random_lm_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny.random_causal_lm(tmp_path_factory.mktemp("random-lm"))


@pytest.fixture(scope="session")
def reward_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny.random_reward_model(tmp_path_factory.mktemp("reward"))


@pytest.fixture
def forward_hooks() -> Iterator[ForwardHook]:
    """Run a function before every forward pass of a judge's model (to block or fail it)."""
    handles: list[torch.utils.hooks.RemovableHandle] = []

    def install(model: TransformersChatModel, before: Callable[[], None]) -> None:
        loaded = model.local_model.load()
        handles.append(loaded.model.register_forward_pre_hook(lambda module, args: before()))

    yield install
    for handle in handles:
        handle.remove()
