"""The reward server scaled out on Ray Serve: ``openjudge serve CONFIG --replicas N``.

Each replica is a :class:`~openjudge.integrations.serve.RewardServer` (its own graders,
batching, ``max_pending`` admission and 429s, failure ledger and metrics) behind Ray
Serve's HTTP proxy, which spreads requests over the replicas and queues at most
``max_ongoing_requests`` per replica (``max_pending``: the replica's own 429 comes first).
Requests are answered by :meth:`RewardServer.reply`, exactly as the single process
answers them. What is per replica: ``/metrics`` (a scrape reaches one replica; Ray's own
metrics cover the cluster), ``/health``, and the failure rate and breakers (each replica
counts its own samples).

Needs ``ray[serve]`` (the extra ``serve-ray``). The graders YAML must be readable at the
same path on every node that runs a replica.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

from openjudge.integrations.serve._app import RewardServer
from openjudge.integrations.serve._settings import ServeSettings

__all__ = ["ray_application", "serve_on_ray"]

APP_NAME = "openjudge"


def ray_application(settings: ServeSettings, replicas: int) -> Any:  # ray.serve.Application: Ray is optional
    """The Ray Serve application: ``replicas`` reward servers built from ``settings``.

    Raises:
        ImportError: ``ray[serve]`` is not installed.
    """
    from ray import serve
    from starlette.requests import Request
    from starlette.responses import Response

    class OpenJudgeRewards:
        """One replica: a reward server answering the requests Ray Serve's proxy routes to it."""

        def __init__(self, options: dict[str, Any]) -> None:
            self.server = RewardServer.from_settings(ServeSettings.model_validate(options))

        async def __call__(self, request: Request) -> Response:
            answer = await self.server.reply(
                request.method, request.url.path, request.headers, request.query_params, request.body
            )
            return Response(content=answer.body, status_code=answer.status, headers=answer.headers)

    deployment = serve.deployment(
        name="openjudge-rewards",
        num_replicas=replicas,
        max_ongoing_requests=settings.max_pending,
        ray_actor_options={"num_cpus": 1},
    )(OpenJudgeRewards)
    options = settings.model_dump(exclude_unset=True)
    options["token"] = settings.token  # read from this process's environment, not the replicas'
    return deployment.bind(options)


def serve_on_ray(
    settings: ServeSettings, replicas: int, *, ready: Callable[[str], None] | None = None
) -> None:
    """Run the Ray Serve application until SIGINT or SIGTERM, then delete it and disconnect
    (which stops the local Ray this started, if it started one).

    Connects to the Ray cluster ``RAY_ADDRESS`` names, or starts a local one. Ray Serve's
    proxy listens on ``settings.host`` and ``settings.port`` (a fixed port: Ray Serve
    cannot take any free one).
    """
    import ray
    from ray import serve

    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"), log_to_driver=False)
    serve.start(http_options={"host": settings.host, "port": settings.port})
    serve.run(ray_application(settings, replicas), name=APP_NAME, route_prefix="/")
    url = f"http://{settings.host}:{settings.port}"
    (
        ready
        or (
            lambda u: print(
                f"openjudge serve: {replicas} replicas on Ray Serve, listening on {u}", flush=True
            )
        )
    )(url)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        stop.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        # Not waiting: replicas drain on their own (a blocking delete can wait on a controller
        # that is stopping). Disconnecting stops the local Ray this process started, if any.
        serve.delete(APP_NAME, _blocking=False)
        ray.shutdown()
