"""SkyRL integration: a SkyRL-Gym environment rewarded by openjudge graders.

Importing this package does not import ``skyrl_gym``; :class:`OpenJudgeEnv` and
:func:`register_env` load it on first use (``pip install 'openjudge-graders[skyrl]'``).

- :class:`OpenJudgeEnv`: a ``BaseTextEnv`` whose ``step`` grades the action through a
  process-wide scorer (one persistent event loop, shared provider limits).
- :func:`register_env`: register it with SkyRL-Gym under an ``env_class`` name.
- :class:`EnvScorer`, :class:`StepScore`: the scorer and its result.
- :class:`OpenJudgeSkyRLSettings`: the options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openjudge._lazy import lazy_exports
from openjudge.errors import SettingsError as SettingsError
from openjudge.integrations.skyrl._scorer import EnvScorer as EnvScorer
from openjudge.integrations.skyrl._scorer import StepScore as StepScore
from openjudge.integrations.skyrl._settings import OpenJudgeSkyRLSettings as OpenJudgeSkyRLSettings

if TYPE_CHECKING or not lazy_exports(globals()):
    from openjudge.integrations.skyrl._env import OpenJudgeEnv as OpenJudgeEnv
    from openjudge.integrations.skyrl._env import register_env as register_env

__all__ = [
    "EnvScorer",
    "OpenJudgeEnv",
    "OpenJudgeSkyRLSettings",
    "SettingsError",
    "StepScore",
    "register_env",
]
