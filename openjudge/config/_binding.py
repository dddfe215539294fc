"""Give each grader what its type's :class:`~openjudge.graders._binding.ProviderBinding` asks for.

The grader type declares how it takes a provider (required, optional or none; a chat model
or a reward model; under which parameter). This module knows what each provider kind can
serve: every kind a chat model (the provider itself), ``transformers`` and ``vllm`` a reward
model. It checks a config's graders against that (:func:`binding_problems`, at load) and
hands each grader its object (:class:`ProviderObjects`, at build). No grader type is named.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from openjudge.config._locations import FieldPath, Located
from openjudge.config._spec import ProviderSpec
from openjudge.graders._binding import ProviderBinding, Served

if TYPE_CHECKING:  # the loader checks bindings without importing the call engine
    from openjudge.models._limits import ConnectionLimits
    from openjudge.models.chat_client import ChatClient
    from openjudge.models.reward_model import RewardModel

__all__ = ["ProviderObjects", "binding_problems"]


def _transformers_reward_model(
    provider: ChatClient, spec: ProviderSpec, limits: ConnectionLimits | None
) -> RewardModel | None:
    """The same checkpoint settings, loaded as a sequence classifier (once per provider)."""
    from openjudge.providers.transformers import TransformersChatModel

    return provider.reward_model() if isinstance(provider, TransformersChatModel) else None


def _vllm_reward_model(
    provider: ChatClient, spec: ProviderSpec, limits: ConnectionLimits | None
) -> RewardModel | None:
    """The server's ``/classify`` endpoint, under the provider's policy."""
    from openjudge.providers.vllm import VLLMChatModel
    from openjudge.providers.vllm_reward import VLLMRewardModel

    if not isinstance(provider, VLLMChatModel):
        return None
    return VLLMRewardModel(
        provider.base_url, spec.model, api_key=spec.api_key, policy=provider.policy, limits=limits
    )


RewardModelFactory: TypeAlias = (
    "Callable[[ChatClient, ProviderSpec, ConnectionLimits | None], RewardModel | None]"
)


@dataclass(frozen=True, slots=True)
class _Service:
    """What a provider hands a grader, as config messages describe it.

    Attributes:
        needs: How a grader type that requires it is described (``is an LLM judge``).
        kinds: The provider kinds that serve it, each with how (empty: every kind; the
            provider itself is handed over).
    """

    needs: str
    kinds: Mapping[str, tuple[str, RewardModelFactory]]

    def kinds_text(self) -> str:
        return " or ".join(f"{kind!r} ({how})" for kind, (how, _) in self.kinds.items())


_SERVICES: Mapping[Served, _Service] = {
    "chat_model": _Service("is an LLM judge", {}),
    "reward_model": _Service(
        "scores with a reward model",
        {
            "transformers": ("in process", _transformers_reward_model),
            "vllm": ("its /classify endpoint", _vllm_reward_model),
        },
    ),
}


def binding_problems(
    type_name: str,
    binding: ProviderBinding,
    provider: str | None,
    providers: Mapping[str, ProviderSpec],
    where: Located,
    base: FieldPath,
) -> list[str]:
    """What is wrong with a grader's ``provider`` for its type's binding (``base``: its field path).

    A provider named but not defined is not reported here (the config's provider check does that).
    """
    service = _SERVICES[binding.serves]
    if binding.provider == "none":
        if provider is None:
            return []
        return [
            where.at((*base, "provider"), f"grader type {type_name!r} is rule-based and takes no provider")
        ]
    if provider is None:
        if binding.provider == "optional":
            return []
        of_kind = f" (a provider of kind {service.kinds_text()})" if service.kinds else ""
        return [
            where.at(base, f"grader type {type_name!r} {service.needs} and needs 'provider: <name>'{of_kind}")
        ]
    spec = providers.get(provider)
    if spec is not None and service.kinds and spec.kind not in service.kinds:
        return [
            where.at(
                (*base, "provider"),
                f"{type_name} graders need a provider of kind {service.kinds_text()}; "
                f"{provider!r} is of kind {spec.kind!r}",
            )
        ]
    return []


class ProviderObjects:
    """What the job's providers hand the graders bound to them.

    A chat model is the provider itself; a reward model is built once per provider, on
    first use, and shared by every grader that names it.

    Args:
        providers: The built providers, by name.
        specs: Their specs, by name.
        limits: The job's shared connection limits (reward models reaching a server use them).
    """

    def __init__(
        self,
        providers: Mapping[str, ChatClient],
        specs: Mapping[str, ProviderSpec],
        limits: ConnectionLimits | None,
    ) -> None:
        self._providers = providers
        self._specs = specs
        self._limits = limits
        self._served: dict[tuple[Served, str], RewardModel] = {}

    def served(self, type_name: str, serves: Served, provider: str) -> ChatClient | RewardModel:
        """What ``provider`` hands a grader of ``type_name`` whose binding ``serves`` this.

        Raises:
            ValueError: The provider's kind does not serve it (a message for the config).
        """
        service = _SERVICES[serves]
        client = self._providers[provider]
        if not service.kinds:
            return client
        key = (serves, provider)
        if key not in self._served:
            spec = self._specs[provider]
            _, build = service.kinds.get(spec.kind, ("", None))
            made = build(client, spec, self._limits) if build is not None else None
            if made is None:
                raise ValueError(
                    f"{type_name} graders need a provider of kind {service.kinds_text()}, not {spec.kind!r}"
                )
            self._served[key] = made
        return self._served[key]
