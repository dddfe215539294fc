"""The options of ``openjudge serve``: the shared scorer's, and where and how much it serves."""

from __future__ import annotations

import ipaddress
import os
from typing import Self

from pydantic import Field, model_validator

from openjudge.integrations.scoring._settings import ScorerSettings

__all__ = ["TOKEN_ENV", "ServeSettings", "is_loopback"]

TOKEN_ENV = "OPENJUDGE_SERVE_TOKEN"
"""Environment variable holding the bearer token (kept off the command line, which ``ps`` shows)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a hostname or "" (every interface): reachable from elsewhere
        return False


class ServeSettings(ScorerSettings):
    """Options of the reward server.

    Every option of :class:`~openjudge.integrations.scoring.ScorerSettings` (the graders YAML,
    the reward's aggregate, the failure policy, the breaker and failure rate), and:

    Attributes:
        host: Interface to listen on. Anything but a loopback address needs ``token``.
        port: TCP port (``0``: any free port; the server prints the one it took).
        token: Bearer token every request but ``/health`` must carry (``Authorization:
            Bearer <token>``, or ``?token=<token>`` in the URL for clients that set no
            headers, such as OpenRLHF's). Required beyond localhost; default: the
            ``OPENJUDGE_SERVE_TOKEN`` environment variable.
        max_pending: Samples admitted at once (being graded or waiting for a grading
            slot). A request that would exceed it is answered 429 with ``Retry-After``,
            before any of its samples is graded.
        retry_after_s: The ``Retry-After`` of a 429, in whole seconds.
        max_concurrent_samples: Samples graded at once (the others of ``max_pending``
            wait); the server's default is 256.
    """

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    token: str | None = Field(default=None, min_length=16, repr=False)
    max_pending: int = Field(default=1024, ge=1)
    retry_after_s: int = Field(default=1, ge=1)
    max_concurrent_samples: int | None = Field(default=256, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _token_from_environment(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("token") is None and os.environ.get(TOKEN_ENV):
            return {**data, "token": os.environ[TOKEN_ENV]}
        return data

    @model_validator(mode="after")
    def _token_beyond_localhost(self) -> Self:
        if self.token is None and not is_loopback(self.host):
            raise ValueError(
                f"host {self.host!r} is reachable from other machines, so every request "
                f"must carry a bearer token: set {TOKEN_ENV} to a secret of 16 characters or more "
                "(e.g. `export OPENJUDGE_SERVE_TOKEN=$(python -c 'import secrets; print(secrets.token_urlsafe())')`), "
                "or listen on 127.0.0.1"
            )
        return self
