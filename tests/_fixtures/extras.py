"""Skips for tests of an optional extra that is not installed, each saying how to install it."""

from __future__ import annotations

import os
from types import ModuleType

import pytest

__all__ = ["need_litellm"]


def need_litellm() -> ModuleType:
    """litellm as the provider loads it, or a skip naming the extra (call it where litellm is first needed)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map fetch at import
    pytest.importorskip("litellm", reason="needs the litellm extra: pip install -e '.[litellm]'")
    from openjudge.providers._litellm import load_litellm

    return load_litellm()
