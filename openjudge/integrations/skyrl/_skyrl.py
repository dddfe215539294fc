"""The one place that imports ``skyrl_gym`` (it ships no type information)."""

from __future__ import annotations

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv  # type: ignore[import-untyped]  # no py.typed
    from skyrl_gym.envs.registration import register, registry  # type: ignore[import-untyped]  # no py.typed
except ImportError as exc:  # pragma: no cover - exercised by a subprocess test
    raise ImportError(
        "openjudge.integrations.skyrl.OpenJudgeEnv needs SkyRL's environment package: "
        "pip install 'openjudge-graders[skyrl]' (skyrl-gym)"
    ) from exc

__all__ = ["BaseTextEnv", "register", "registry"]
