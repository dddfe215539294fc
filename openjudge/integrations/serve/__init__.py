"""A reward server for trainers that call rewards over HTTP: ``openjudge serve CONFIG``.

:class:`RewardServer` serves the scorer VERL, TRL and SkyRL use
(:class:`~openjudge.integrations.scoring.RewardScorer`: the graders YAML, the reward's
aggregate, the failure policy, the breaker and the failure rate) in OpenRLHF's shape
(``POST /get_reward``, for ``--reward.remote_url``) and a generic one (``POST /score``),
with ``GET /health`` and ``GET /metrics`` (Prometheus). :class:`ServeSettings` are its
options; :func:`serve` runs it until SIGINT or SIGTERM. See docs/serve.md.

Needs the ``serve`` extra (``prometheus-client``).
"""

from openjudge.integrations.serve._app import RewardServer as RewardServer
from openjudge.integrations.serve._command import run_command as run_command
from openjudge.integrations.serve._command import serve as serve
from openjudge.integrations.serve._settings import TOKEN_ENV as TOKEN_ENV
from openjudge.integrations.serve._settings import ServeSettings as ServeSettings

__all__ = ["TOKEN_ENV", "RewardServer", "ServeSettings", "run_command", "serve"]
