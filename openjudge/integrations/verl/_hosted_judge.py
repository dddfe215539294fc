"""The judge VERL hosts itself: ``kind: verl`` providers in the graders YAML.

With ``reward.reward_model.enable=True``, VERL starts vLLM (or SGLang) replicas of
``reward.reward_model.model_path`` behind its own router and hands every reward worker
the router's ``host:port`` as ``reward_router_address``. A provider written as::

    providers:
      judge:
        kind: verl            # model and base_url come from VERL
        timeout_s: 60
        limits: {max_concurrency: 64}

becomes an OpenAI-compatible provider with ``base_url = http://{reward_router_address}/v1``
and ``model = reward.reward_model.model_path`` (or the ``model`` the YAML names), built
by the same code as ``kind: openai``: the YAML's timeouts, retries, limits and sampling
apply, and every request carries the sampling ``seed`` (0 unless set). VERL's router sends
each request to the least-loaded replica; under ``full_determinism`` it hashes the request
only to choose among equally loaded ones, so identical requests are not pinned to one
replica (one replica is). A 500 from VERL's router that hides a refused request is told
apart from an outage (:class:`RouterTransport`).
"""

from __future__ import annotations

import asyncio
import re
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpx
from pydantic import SecretStr

from openjudge.config._build import BuiltJob
from openjudge.config._spec import JobConfig, ProviderSpec
from openjudge.integrations.scoring._guard import REFUSED_MARK
from openjudge.integrations.verl._settings import config_value
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_client import ChatClient

__all__ = [
    "HOSTED_KIND",
    "HostedJudge",
    "RouterTransport",
    "hosted_judge_from_verl",
    "judge_replica_count",
    "judge_replicas",
    "resolve_hosted_providers",
    "route_through_verl",
    "served_model_name",
]

HOSTED_KIND = "verl"


@dataclass(frozen=True, slots=True)
class HostedJudge:
    """Where VERL serves its reward model.

    Attributes:
        router_address: ``host:port`` of VERL's reward-model router.
        model: The model name to send (the name VERL's servers answer to), when known.
        replicas: How many replicas VERL runs behind the router, when the config says.
    """

    router_address: str
    model: str | None
    replicas: int | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.router_address}/v1"


def hosted_judge_from_verl(
    config: object, reward_router_address: str | None, reward_model_tokenizer: object = None
) -> HostedJudge | None:
    """The hosted judge VERL passes to a reward worker, or ``None`` when it runs none.

    The model name is what VERL serves ``reward.reward_model.model_path`` under
    (:func:`served_model_name`); without a config (VERL's ``naive`` manager calling
    :func:`~openjudge.integrations.verl.compute_score`), the reward-model tokenizer's ``name_or_path``.
    """
    if not reward_router_address:
        return None
    model = config_value(config, "reward", "reward_model", "model_path")
    if isinstance(model, str) and model:
        prometheus = config_value(config, "reward", "reward_model", "rollout", "prometheus")
        return HostedJudge(
            reward_router_address, served_model_name(model, prometheus), judge_replica_count(config)
        )
    model = getattr(reward_model_tokenizer, "name_or_path", None)
    return HostedJudge(reward_router_address, model if isinstance(model, str) and model else None)


def judge_replica_count(config: object) -> int | None:
    """Replicas of the judge VERL starts (``RewardModelManager``): its pool's GPUs (its own with
    ``enable_resource_pool``, else the trainer's) over each replica's TP x DP x PP."""
    reward_model = config_value(config, "reward", "reward_model")
    own = config_value(reward_model, "enable_resource_pool") is True
    where = reward_model if own else config_value(config, "trainer")
    sizes = [config_value(where, "n_gpus_per_node"), config_value(where, "nnodes")]
    rollout = config_value(reward_model, "rollout")
    for key in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size"):
        sizes.append(config_value(rollout, key) or 1)
    if not all(isinstance(n, int) and n > 0 for n in sizes):
        return None
    gpus, nodes, tp, dp, pp = (int(str(n)) for n in sizes)
    return (gpus * nodes) // (tp * dp * pp) or None


def served_model_name(model_path: str, prometheus: object = None) -> str:
    """The name VERL's vLLM (or SGLang) judge server answers to, for ``reward.reward_model.model_path``.

    VERL starts each replica as ``serve <local path>`` (``HFModelConfig.local_path``): a remote
    path (``hdfs://...``) is copied first, to ``<tempdir>/<md5 of the path>/<its last
    part>`` (``verl.utils.fs.copy_to_local``), and the server knows the model by that local
    path, not the ``hdfs://`` one. With ``rollout.prometheus.enable`` and its
    ``served_model_name``, the server is started with that name's last part instead.
    """
    if config_value(prometheus, "enable") is True:
        named = config_value(prometheus, "served_model_name")
        if isinstance(named, str) and named:
            return named.split("/")[-1]  # as VERL's server launcher strips a path
    from verl.utils.fs import get_local_temp_path, is_non_local

    if is_non_local(model_path):  # type: ignore[no-untyped-call]  # VERL leaves it unannotated; where copy_to_local puts it
        return str(get_local_temp_path(model_path, tempfile.gettempdir()))
    return model_path


def _openai_spec(name: str, spec: ProviderSpec, judge: HostedJudge | None, source: str) -> ProviderSpec:
    if judge is None:
        raise ValueError(
            f"{source}: providers.{name}: kind: verl is the judge VERL serves, but this run has none: set "
            "reward.reward_model.enable=True, reward.reward_model.enable_resource_pool=True and "
            "reward.reward_model.model_path=<judge model> (see docs/verl.md, 'The judge VERL hosts')"
        )
    model = spec.model or judge.model
    if model is None:
        raise ValueError(
            f"{source}: providers.{name}: VERL passed no reward.reward_model.model_path: name the model "
            "here (model: <served model name>)"
        )
    if spec.base_url is not None:
        raise ValueError(
            f"{source}: providers.{name}: kind: verl takes its URL from VERL; remove base_url "
            "(or use kind: openai for a server of your own)"
        )
    return spec.model_copy(
        update={
            "kind": "openai",
            "model": model,
            "base_url": judge.base_url,
            "api_key": spec.api_key or SecretStr("EMPTY"),
        }
    )


def resolve_hosted_providers(config: JobConfig, judge: HostedJudge | None, *, source: str) -> JobConfig:
    """``config`` with every ``kind: verl`` provider pointed at VERL's router.

    Raises:
        ValueError: A ``kind: verl`` provider, but VERL runs no reward model (or the
            provider names its own ``base_url``); the message says what to set.
    """
    if not any(spec.kind == HOSTED_KIND for spec in config.providers.values()):
        return config
    providers = {
        name: _openai_spec(name, spec, judge, source) if spec.kind == HOSTED_KIND else spec
        for name, spec in config.providers.items()
    }
    return config.model_copy(update={"providers": providers})


class RouterTransport:
    """A ``kind: verl`` provider's transport: tells VERL's router's 500s apart.

    VERL's router (``experimental/reward_loop/router/naive_router.py``) re-raises the
    ``ClientResponseError`` of any upstream error status, and FastAPI answers it as a
    plain ``500 Internal Server Error``: a judge that refused one request (HTTP 400: the
    prompt is longer than its context) looks exactly like a judge that is down, and the
    answer does not say which replica served it. On such a 500 this transport probes
    *every* replica of the judge directly (:func:`judge_replicas`), with ``GET /v1/models``,
    which a vLLM or SGLang server answers without queueing it behind generation: if every
    replica answers, the judge is up and the request itself was refused, so the error is
    final (not retried) and marked as a refusal, which never counts toward the breaker
    (:func:`~openjudge.integrations.scoring._guard.is_outage`); if any replica does not
    answer in time (it may be the one that failed), it stays a retryable outage. A probe
    that times out is never a refusal. When the replicas cannot be found (no Ray), the
    router itself is probed the same way. A probe's answer is reused for two seconds, so
    an outage costs one probe per two seconds, not one per request. Everything else is
    the wrapped transport's.
    """

    def __init__(
        self,
        inner: Any,
        router_address: str,
        replicas: Callable[[], Awaitable[list[str]]] | None = None,
        probe_timeout_s: float = 5.0,
        expected_replicas: int | None = None,
    ) -> None:
        self._inner = inner
        self._router = router_address
        self._replicas = replicas if replicas is not None else partial(judge_replicas, expected_replicas)
        self._probe_timeout_s = probe_timeout_s
        self._probed: tuple[float, bool] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def attempt(self, request: Any, timeout_s: float) -> Any:
        try:
            return await self._inner.attempt(request, timeout_s)
        except ChatModelError as exc:
            if exc.status_code != 500 or not exc.message.endswith(_ROUTER_500) or not await self._judge_up():
                raise
            raise ChatModelError(
                f"{exc.message} {REFUSED_MARK}: VERL's router answers 500 for any upstream error status, "
                "and every replica of the judge behind it answers a probe, so it refused this request "
                "(usually a prompt longer than its context); not retried",
                kind="provider_error",
                retryable=False,
                status_code=500,
                error_type=exc.error_type,
            ) from None

    async def _judge_up(self) -> bool:
        now = time.monotonic()
        if self._probed is not None and now - self._probed[0] < 2.0:
            return self._probed[1]
        try:  # a server actor that does not say where it listens in time is not up either
            addresses = await asyncio.wait_for(self._replicas(), self._probe_timeout_s) or [self._router]
        except Exception:  # a replica's server actor is gone or stuck: the judge is not up, whatever refused
            self._probed = (time.monotonic(), False)
            return False
        try:
            async with httpx.AsyncClient(timeout=self._probe_timeout_s) as client:
                answers = await asyncio.gather(
                    *(client.get(f"http://{address}/v1/models") for address in addresses),
                    return_exceptions=True,
                )
        except httpx.HTTPError:
            answers = []
        up = bool(answers) and all(isinstance(a, httpx.Response) and a.status_code == 200 for a in answers)
        self._probed = (time.monotonic(), up)
        return up


_REPLICA_ACTOR = re.compile(r"^(?:(?:vllm|sglang)_server_reward_\d+_0|trtllm_server_reward_\d+)$")
"""VERL's judge server actors, one per replica: ``<engine>_server_reward_<replica>_<node>``
(``launch_servers`` of VERL 0.9's vLLM and SGLang replicas; node 0 serves its HTTP), or
``trtllm_server_reward_<replica>`` (TensorRT-LLM: one server per replica)."""


async def judge_replicas(expected: int | None = None) -> list[str]:
    """``host:port`` of each replica of the judge VERL hosts, from its named server actors.

    ``[]`` outside Ray or when none is found (the caller probes the router instead).

    Raises:
        LookupError: Fewer replicas than ``expected`` (a server actor that died left no name).
        RayActorError: A replica's server actor is gone.
    """
    try:
        import ray
    except ImportError:  # pragma: no cover - VERL always brings Ray
        return []
    if not ray.is_initialized():
        return []
    out: list[str] = []
    for name in sorted(n for n in ray.util.list_named_actors() if _REPLICA_ACTOR.match(n)):
        host, port = await ray.get_actor(name).get_server_address.remote()
        out.append(f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}")
    if out and expected is not None and len(out) < expected:
        raise LookupError(f"{len(out)} of the judge's {expected} replicas are running")
    return out


_ROUTER_500 = "HTTP 500: Internal Server Error"
"""What our providers make of the 500 FastAPI sends when VERL's router re-raises."""


def route_through_verl(job: BuiltJob, config: JobConfig, judge: HostedJudge | None) -> None:
    """Give every provider that calls VERL's router a :class:`RouterTransport`."""
    if judge is None:
        return
    for name, provider in job.providers.items():
        spec = config.providers.get(name)
        if spec is None or spec.base_url != judge.base_url or not isinstance(provider, ChatClient):
            continue
        wrapped = RouterTransport(provider.transport, judge.router_address, expected_replicas=judge.replicas)
        provider.transport = wrapped  # duck-typed: every other attribute is the wrapped transport's
        provider._engine.transport = wrapped  # the engine makes each attempt through it
