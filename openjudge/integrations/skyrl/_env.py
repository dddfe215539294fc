"""A SkyRL-Gym text environment whose reward comes from openjudge graders.

SkyRL's generator makes one environment per trajectory with
``skyrl_gym.make(env_class, env_config=..., extras=row_extras)``, calls ``init(prompt)``
and then ``step(action)`` on a thread pool (``environment.skyrl_gym.max_env_workers``).
:meth:`OpenJudgeEnv.step` grades the action with the graders of a YAML config through a
process-wide :class:`~openjudge.integrations.skyrl._scorer.EnvScorer`: one persistent event loop,
one set of providers, so one concurrency limit for every step in the process. The
episode is single-turn: the first step is final (``done=True``), as in SkyRL's LLM-judge
examples.

Each step becomes one sample with these fields, for mappers to pick from:

================  ====================================================================
``prompt``        the text of the last user message of the prompt given to ``init``
``response``      the action (the model's output)
``messages``      the prompt messages followed by ``{"role": "assistant", "content": action}``
``ground_truth``  ``extras["reward_spec"]["ground_truth"]``, when present
``<key>``         every other key of the row's ``extras`` (``reward_spec``, ``extra_info``,
                  ``data_source``, ...), by name
================  ====================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, TypedDict

from pydantic import JsonValue

from openjudge.integrations._shared import plain
from openjudge.integrations.skyrl._scorer import EnvScorer, StepScore, shared_scorer
from openjudge.integrations.skyrl._settings import OpenJudgeSkyRLSettings, read_settings
from openjudge.integrations.skyrl._skyrl import BaseTextEnv, register, registry

__all__ = ["DEFAULT_ENV_ID", "OpenJudgeEnv", "StepOutput", "register_env"]

DEFAULT_ENV_ID = "openjudge"
_ENTRY_POINT = "openjudge.integrations.skyrl._env:OpenJudgeEnv"
_DERIVED = frozenset({"prompt", "response", "messages"})


class StepOutput(TypedDict):
    """What ``step`` returns: SkyRL's ``BaseTextEnvStepOutput``."""

    observations: list[dict[str, str]]
    reward: float
    done: bool
    metadata: dict[str, JsonValue]


def _text(message: Mapping[str, JsonValue]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text")) if isinstance(p, dict) and isinstance(p.get("text"), str) else ""
            for p in content
        )
    return "" if content is None else str(content)


class OpenJudgeEnv(BaseTextEnv):  # type: ignore[misc]  # skyrl_gym ships no types: its base class is Any
    """A single-turn text environment rewarded by openjudge graders.

    Args:
        env_config: Options from SkyRL's config (``environment.skyrl_gym.<env_class>``), a
            mapping or OmegaConf node: ``config`` (the graders YAML), ``aggregate``,
            ``fallback_score``, ``include_reasons``, ``timeout_s``. See
            :class:`~openjudge.integrations.skyrl._settings.OpenJudgeSkyRLSettings`.
        extras: The dataset row's extras (``reward_spec``, ``extra_info``, ``max_turns``...).
        openjudge: Options bound at registration (:func:`register_env`); ``env_config``
            entries override them. Without any ``config``, ``OPENJUDGE_SKYRL_CONFIG`` is used.

    Class attributes:
        scorer: Set it on a subclass to grade with graders built in code instead of a YAML
            (``class MyEnv(OpenJudgeEnv): scorer = EnvScorer(runner)``).
    """

    scorer: ClassVar[EnvScorer | None] = None

    def __init__(
        self,
        env_config: object = None,
        extras: Mapping[str, object] | None = None,
        *,
        openjudge: Mapping[str, object] | OpenJudgeSkyRLSettings | None = None,
    ) -> None:
        super().__init__()
        preset = type(self).scorer
        self.settings: OpenJudgeSkyRLSettings | None = None
        if preset is None:
            self.settings = read_settings(openjudge, env_config)
            preset = shared_scorer(self.settings)
        self.judge: EnvScorer = preset
        row = plain(extras or {})
        self.extras: dict[str, JsonValue] = row if isinstance(row, dict) else {}
        max_turns = self.extras.get("max_turns")
        self.max_turns = max_turns if isinstance(max_turns, int) and max_turns > 0 else 1
        self.prompt: list[dict[str, JsonValue]] = []
        self.last_score: StepScore | None = None

    def init(self, prompt: object) -> tuple[object, dict[str, JsonValue]]:
        """Remember the prompt (a list of chat messages) and return it unchanged."""
        messages = plain(prompt)
        if isinstance(messages, str):
            self.prompt = [{"role": "user", "content": messages}]
        elif isinstance(messages, list):
            self.prompt = [m for m in messages if isinstance(m, dict)]
        return prompt, {}

    def sample(self, action: str) -> dict[str, JsonValue]:
        """The sample the graders see for ``action`` (override to add fields)."""
        sample: dict[str, JsonValue] = {k: v for k, v in self.extras.items() if k not in _DERIVED}
        spec = self.extras.get("reward_spec")
        if isinstance(spec, dict) and "ground_truth" in spec and "ground_truth" not in sample:
            sample["ground_truth"] = spec["ground_truth"]
        users = [m for m in self.prompt if m.get("role") == "user"]
        sample["prompt"] = _text(users[-1]) if users else ""
        sample["response"] = action
        sample["messages"] = [*self.prompt, {"role": "assistant", "content": action}]
        return sample

    def step(self, action: str) -> StepOutput:
        """Grade the action; the episode ends here."""
        self.turns += 1
        score = self.judge.score(self.sample(action))
        self.last_score = score
        return {"observations": [], "reward": score.reward, "done": True, "metadata": score.metadata()}

    def get_metrics(self) -> dict[str, float]:
        """The episode's metrics: ``openjudge/failed``, and per grader its score and ``/error``."""
        return self.last_score.metrics() if self.last_score is not None else {}


def register_env(
    env_id: str = DEFAULT_ENV_ID,
    *,
    config: str | None = None,
    entry_point: str = _ENTRY_POINT,
    **options: object,
) -> None:
    """Register the environment with SkyRL-Gym (idempotent), optionally binding its options.

    Call it where SkyRL registers custom environments: in the Ray entrypoint task, before
    the trainer starts. Datasets then select it with ``env_class: <env_id>``.

    Args:
        env_id: The ``env_class`` name.
        config: The graders YAML, bound to every instance (absolute path recommended).
        entry_point: ``"module:Class"``: a subclass of :class:`OpenJudgeEnv`, if you have one.
        **options: Other options (``aggregate``, ``fallback_score``, ...), bound likewise.

    Raises:
        ValueError: ``env_id`` is already registered with another entry point or options.
    """
    bound: dict[str, object] = dict(options)
    if config is not None:
        bound["config"] = config
    kwargs: dict[str, object] = {"openjudge": bound} if bound else {}
    existing = registry.get(env_id)
    if existing is not None:
        if existing.entry_point == entry_point and dict(existing.kwargs) == kwargs:
            return
        raise ValueError(
            f"SkyRL env {env_id!r} is already registered (entry point {existing.entry_point!r}); "
            "pick another env_id or deregister it first"
        )
    register(id=env_id, entry_point=entry_point, kwargs=kwargs)
