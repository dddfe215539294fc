"""How a grader type takes the provider its config entry names: data each type declares.

A job config gives a grader ``provider: <name>``; what the grader is handed from that
provider, under which constructor parameter, and whether it may or must have one, is
the type's :class:`ProviderBinding`. Built-in types declare theirs in the registry
(:mod:`openjudge.graders._registry`); a class named by import path gets one from its
constructor (:meth:`ProviderBinding.of_class`). The config layer reads the binding and
never the type's name.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = ["JUDGE", "NO_PROVIDER", "OPTIONAL_JUDGE", "REWARD_MODEL", "ProviderBinding", "Served"]

Served: TypeAlias = Literal["chat_model", "reward_model"]
"""What a provider hands a grader: its chat model itself, or a reward model it serves."""


@dataclass(frozen=True, slots=True)
class ProviderBinding:
    """How a grader type takes the provider its config entry names in ``provider:``.

    Attributes:
        provider: ``required`` (the grader calls it: an LLM judge, a reward model),
            ``optional`` (only part of the grader may call it, as the model graders inside
            an OpenAI grader JSON do) or ``none`` (rule-based: it takes no provider).
        serves: What the grader is handed: the provider's chat model, or the reward model
            the provider serves.
        parameter: The constructor parameter it is handed as.
    """

    provider: Literal["required", "optional", "none"]
    serves: Served = "chat_model"
    parameter: str = "model"

    @property
    def kind(self) -> Literal["rule", "llm"]:
        """``llm`` for a type that needs a provider (what ``openjudge graders`` lists), else ``rule``."""
        return "llm" if self.provider == "required" else "rule"

    @property
    def takes_provider(self) -> bool:
        return self.provider != "none"

    @classmethod
    def of_class(cls, grader: type) -> ProviderBinding:
        """A class of the user's: a judge when its constructor takes ``model``, else rule-based."""
        try:
            parameters = inspect.signature(grader).parameters
        except (TypeError, ValueError):
            return NO_PROVIDER
        return JUDGE if JUDGE.parameter in parameters else NO_PROVIDER


JUDGE = ProviderBinding("required")
"""An LLM judge: the provider's chat model, as ``model``."""
OPTIONAL_JUDGE = ProviderBinding("optional")
"""A grader that calls a judge for some of its work, when its config names a provider."""
REWARD_MODEL = ProviderBinding("required", "reward_model", "reward_model")
"""A reward-model grader: the reward model its provider serves, as ``reward_model``."""
NO_PROVIDER = ProviderBinding("none")
"""A rule-based grader."""
