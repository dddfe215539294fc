"""The runner's concurrency against the providers' own limits.

A runner asked for ``max_concurrency=256`` over a provider left at its default limit
(64 calls in flight) would run at most 64 judge calls at once, and nothing would say so.
:func:`capped_providers` finds the judges a runner's graders call whose limit is a
default below the runner's concurrency; the runner logs one warning per such provider at
construction, naming the cap and how to lift it. A limit the user set is respected
silently: it says what they want.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from openjudge.graders.base_grader import BaseGrader
from openjudge.models.chat_client import ChatClient

__all__ = ["capped_providers", "chat_clients", "concurrency_warning"]

_DEPTH = 2  # a grader, the graders it wraps, and theirs


def _clients(grader: BaseGrader) -> Iterator[ChatClient]:
    seen: set[int] = set()

    def visit(obj: object, depth: int) -> Iterator[ChatClient]:
        if id(obj) in seen or depth > _DEPTH:
            return
        seen.add(id(obj))
        for value in list(vars(obj).values()) if hasattr(obj, "__dict__") else []:
            if isinstance(value, ChatClient):
                yield value
            elif isinstance(value, BaseGrader):
                yield from visit(value, depth + 1)

    yield from visit(grader, 0)


def chat_clients(graders: Iterable[BaseGrader]) -> list[ChatClient]:
    """The chat clients ``graders`` call (and the graders they wrap), each once."""
    found: dict[int, ChatClient] = {}
    for grader in graders:
        for client in _clients(grader):
            found.setdefault(id(client), client)
    return list(found.values())


def capped_providers(graders: Iterable[BaseGrader], max_concurrency: int) -> list[ChatClient]:
    """The chat clients ``graders`` call whose *default* concurrency limit is below ``max_concurrency``."""
    return [
        client
        for client in chat_clients(graders)
        if "max_concurrency" not in client.policy.limits.model_fields_set
        and client.policy.limits.max_concurrency < max_concurrency
    ]


def concurrency_warning(client: ChatClient, max_concurrency: int) -> str:
    """What the cap is and how to lift it."""
    cap = client.policy.limits.max_concurrency
    name = getattr(client, "model_name", None)
    judge = f"{type(client).__name__}({name!r})" if isinstance(name, str) else type(client).__name__
    return (
        f"GradingRunner(max_concurrency={max_concurrency}) over {judge}: the provider's default limit "
        f"allows {cap} calls in flight, so at most {cap} of its judge calls run at once. To run "
        f"{max_concurrency}, set the provider's limit: {type(client).__name__}(..., "
        f"max_concurrency={max_concurrency}) or policy=ProviderPolicy(limits=ProviderLimits("
        f"max_concurrency={max_concurrency})); to keep {cap}, set it explicitly and this warning goes"
    )
