"""VERL 0.9.1's V1 trainers, run on CPU up to the point where a judge outage is decided.

What is VERL's code here, and what is scripted (and why):

* **VERL's**: the trainer class of each mode (``PPOTrainerSync``, ``PPOTrainerColocateAsync``,
  ``PPOTrainerSeparateAsync``, from ``get_trainer_cls``), built by its own ``__init__``
  from the composed config, which builds the replay buffer named in
  ``trainer.v1.sampler.custom_sampler`` (the openjudge one); its own ``fit()`` loop,
  ``step()``/``_step_once`` (sample, then the GPU stages), ``prepare_step``,
  ``_add_prompts_to_generate`` (the refill the buffer calls), ``_submit_batch_to_rollout``
  and the mode's hooks (``on_train_begin`` warm-up batches, ``on_sample_end``,
  ``on_step_end``); ``AgentLoopWorkerTQ`` (``generate_sequences``, ``_run_prompt``,
  ``_settle_session_tasks``, ``_agent_loop_postprocess``), VERL's single-turn agent loop,
  ``RewardLoopWorker`` (which builds ``OpenJudgeRewardManager`` through
  ``load_reward_manager``) and the replay buffers' polling, eviction and refill.
* **Scripted**: the rollout server (``ScriptedServer``: no vLLM on CPU); TransferQueue
  (``fake_tq``: its controller needs Ray actors and a storage backend; VERL calls a few
  functions of it); the agent-loop *manager* (VERL's ``AgentLoopManagerTQ`` only chunks
  the batch and ``ray.get``\\ s its Ray workers; here one in-process worker runs on an
  event-loop thread, as a Ray actor's loop would); the weight-sync and replica managers
  (``checkpoint_manager``: GPU memory and NCCL; calls are recorded); the GPU stages after
  sampling (log-probs, advantages, updates: identity, they do not decide anything about an
  outage); ``_compute_metrics`` (reads GPU tensors; here it records the step's metrics);
  and the dataloader (one prompt, repeated). On the colocated path, VERL's
  ``RewardLoopManager`` is built without its constructor (which starts Ray actors and the
  reward-model servers); its ``compute_rm_score`` and ``assemble_rm_scores`` and the
  trainer's ``_compute_reward_colocate`` are VERL's, over one in-process worker, with
  ``ray.get`` made the identity. The judge is the project's test server (HTTP, the real
  client), or a closed port for a judge that is down.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig

from tests.integrations.verl.agent_rig import (
    LocalRewardHandle,
    ScriptedServer,
    agent_config,
    byte_tokenizer,
    v1_agent_loop_worker,
)

N = 2
"""rollout.n"""
BATCH = 2
"""data.train_batch_size (prompts per step)"""
WINDOW = 8
"""failure_window: a judge down for the whole run stops it after this many samples (plus those in flight)"""

GRADERS = """\
version: 1
providers:
  judge:
    kind: openai
    model: test-judge
    base_url: {base_url}
    api_key: sk-test
    timeout_s: 2
    max_retries: 0
graders:
  quality:
    type: llm
    provider: judge
    params:
      template:
        - {{role: user, content: "{directive}Grade the answer that follows."}}
        - {{role: assistant, content: "Send it."}}
        - {{role: user, content: "Question: {{question}}\\nAnswer: {{answer}}\\nScore 1 to 5."}}
      score_range: [1, 5]
    mapper: {{question: prompt, answer: response}}
"""


def dead_url() -> str:
    """A loopback URL nothing listens on: every call is refused (a judge that is down)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def graders_yaml(directory: Path, base_url: str, *, fail_first: int = 0, tag: str = "") -> Path:
    """One LLM judge; ``fail_first`` > 0: its first calls get HTTP 503 (the server's ``times`` budget).

    The test server keys a ``times`` budget on the directive and the *first* user message,
    which is the same for every sample here (the answer comes in a later turn): so the
    budget counts the run's calls, and the judge is down for its first ``fail_first``
    calls, then up.
    """
    directive = f"#oj:status=503,times={fail_first} {tag} " if fail_first else ""
    path = directory / "graders.yaml"
    path.write_text(GRADERS.format(base_url=base_url, directive=directive), encoding="utf-8")
    return path


def mode_overrides(mode: str) -> list[str]:
    sampler = "OpenJudgeReplayBuffer" if mode == "sync" else "OpenJudgeReplayBufferAsync"
    out = [
        f"trainer.v1.trainer_mode={mode}",
        "trainer.v1.sampler.custom_sampler.path=pkg://openjudge.integrations.verl.sampler",
        f"trainer.v1.sampler.custom_sampler.name={sampler}",
        f"actor_rollout_ref.rollout.n={N}",
        f"data.train_batch_size={BATCH}",
        "data.gen_batch_size=1",  # async refills submit single prompts (VERL requires it there)
        "algorithm.adv_estimator=grpo",
        "trainer.val_before_train=False",
        "trainer.logger=[console]",
        "trainer.total_training_steps=3",
    ]
    if mode == "separate_async":  # VERL's prerequisites (checked by its __init__); rollout on its own GPUs
        out += [
            "actor_rollout_ref.hybrid_engine=False",
            "actor_rollout_ref.rollout.nnodes=1",
            "actor_rollout_ref.rollout.n_gpus_per_node=1",
            "actor_rollout_ref.rollout.checkpoint_engine.backend=nccl",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={BATCH}",
            "trainer.v1.separate_async.parameter_sync_step=1",
        ]
    return out


class Recorder:
    """Records the calls VERL makes on a stand-in (weight sync, replica sleep/abort)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Callable[..., dict[str, float]]:
        def call(*args: object, **kwargs: object) -> dict[str, float]:
            self.calls.append(name)
            return {}

        return call


class EventLoopThread:
    """An event loop on a thread of its own, as a Ray async actor runs its methods."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=60)

    def close(self) -> None:
        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        self.run(cancel_all())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


class AgentLoopManager:
    """Stands in for ``AgentLoopManagerTQ``: hands each batch to one in-process ``AgentLoopWorkerTQ``."""

    def __init__(self, worker: Any, loop: EventLoopThread) -> None:
        self.worker, self.loop = worker, loop
        self.prompts = 0

    def generate_sequences(self, prompts: Any) -> None:
        self.prompts += len(prompts)
        self.loop.run(self.worker.generate_sequences(prompts))  # returns once the sessions are spawned


def dataset_rows(question: str) -> dict[str, Any]:
    """One dataloader batch (one prompt), as VERL's collate function gives it."""
    raw = np.empty(1, dtype=object)
    raw[0] = [{"role": "user", "content": question}]
    return {
        "raw_prompt": raw,
        "index": np.array([0]),
        "data_source": np.array(["weather"], dtype=object),
        "reward_model": np.array([{"ground_truth": "sunny"}], dtype=object),
        "extra_info": np.array([{"index": 0}], dtype=object),
    }


class Run:
    """One training run of VERL's ``trainer_mode`` trainer, with the metrics of each step."""

    def __init__(self, trainer: Any, manager: AgentLoopManager) -> None:
        self.trainer = trainer
        self.manager = manager
        self.steps: list[dict[str, Any]] = []

    def fit(self) -> None:
        self.trainer.fit(self.manager)


def _identity(self: Any, batch: Any, *args: Any, **kwargs: Any) -> Any:
    return batch


GPU_STAGES = (
    "_balance_batch",
    "_compute_old_log_prob",
    "_compute_ref_log_prob",
    "_compute_values",
    "_compute_advantage",
    "_update_critic",
    "_update_actor",
)


class _Remote:
    """``handle.method.remote(...)`` for an in-process worker, run to completion on ``loop``."""

    def __init__(self, method: Callable[..., Any], loop: EventLoopThread) -> None:
        self._method, self._loop = method, loop

    def remote(self, *args: Any) -> Any:
        return self._loop.run(self._method(*args))


class ColocatedRewardHandle:
    """A ``RewardLoopWorker`` as VERL's ``RewardLoopManager.compute_rm_score`` calls it
    (``compute_score_batch.remote``, then ``ray.get``, which the tests make the identity)."""

    def __init__(self, worker: Any, loop: EventLoopThread) -> None:
        self.compute_score_batch = _Remote(worker.compute_score_batch, loop)


def colocated_reward_loop(config: DictConfig, worker: Any, loop: EventLoopThread) -> Any:
    """VERL's ``RewardLoopManager`` (its ``compute_rm_score`` and ``reward_loop_worker_handles``)
    over one in-process worker, without starting Ray actors or a reward-model server."""
    from verl.experimental.reward_loop.reward_loop import RewardLoopManager
    from verl.trainer.ppo.reward import resolve_reward_manager_cls

    manager: Any = object.__new__(RewardLoopManager)  # its constructor starts Ray actors
    manager.config = config
    manager.reward_model_manager = None  # the judge's GPUs: nothing to wake on CPU
    manager.reward_router_address = None
    manager.reward_manager_cls = resolve_reward_manager_cls(config)
    manager.reward_loop_workers = [ColocatedRewardHandle(worker, loop)]
    return manager


COLOCATED = (
    "reward.reward_model.enable=True",
    "reward.reward_model.enable_resource_pool=False",
    "reward.custom_reward_function.path=pkg://openjudge.integrations.verl",
    "reward.custom_reward_function.name=compute_score",
)
"""A reward model on the trainer's GPUs: VERL computes rewards after sampling (``compute_rm_score``)."""


@contextmanager
def verl_run(
    mode: str,
    model_dir: Path,
    graders: Path,
    *overrides: str,
    question: str = "What is the weather?",
    colocated: bool = False,
) -> Iterator[Run]:
    """VERL's ``mode`` trainer wired to VERL's agent-loop and reward workers (see the module docstring).

    ``colocated``: the reward-model path (:data:`COLOCATED`; VERL's ``RewardLoopManager.compute_rm_score``
    over an in-process ``RewardLoopWorker``; ``ray.get`` must be the identity, see
    :func:`ray_get_identity`). Use inside ``fake_tq.installed()``.
    """
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
    from verl.trainer.ppo.v1 import trainer_colocate_async, trainer_separate_async, trainer_sync
    from verl.trainer.ppo.v1.trainer_base import get_trainer_cls
    from verl.trainer.ppo.v1.trainer_separate_async import HybridEngineMode

    assert trainer_sync and trainer_colocate_async and trainer_separate_async  # registers the modes
    config: DictConfig = agent_config(
        model_dir,
        [
            *mode_overrides(mode),
            "actor_rollout_ref.rollout.agent.default_agent_loop=single_turn_agent",
            "reward.reward_manager.name=openjudge",
            f"+reward.openjudge.config={graders}",
            f"+reward.openjudge.failure_window={WINDOW}",
            *(COLOCATED if colocated else ()),
            *(["reward.reward_model.model_path=" + str(model_dir)] if colocated else []),
            *overrides,
        ],
    )
    loop = EventLoopThread()
    try:
        reward = loop.run(in_loop(lambda: RewardLoopWorker(config)))  # VERL builds it in its actor's loop
        worker = loop.run(
            in_loop(
                lambda: v1_agent_loop_worker(
                    config, ScriptedServer(answers()), None if colocated else [LocalRewardHandle(reward)]
                )
            )
        )
        manager = AgentLoopManager(worker, loop)
        cls = get_trainer_cls(mode)
        run_steps: list[dict[str, Any]] = []

        class Trainer(cls):  # type: ignore[misc,valid-type]  # VERL's class, chosen by mode
            def _compute_metrics(self, batch: Any, metrics: dict[str, Any], *args: Any, **kw: Any) -> None:
                run_steps.append(dict(metrics))

        for name in GPU_STAGES:
            setattr(Trainer, name, _identity)
        trainer = Trainer(config)
        trainer.reward_loop_manager = (
            colocated_reward_loop(config, reward, loop)
            if colocated
            else type("RewardLoop", (), {"reward_loop_worker_handles": [reward]})()
        )
        trainer.tokenizer = byte_tokenizer()
        trainer.val_dataloader = [dataset_rows(question)]
        trainer.checkpoint_manager = Recorder()
        trainer.standalone_checkpoint_manager = Recorder()
        trainer.current_mode = HybridEngineMode.TRAINER  # what _setup sets with hybrid_engine=False
        trainer.global_steps = 0
        trainer.total_training_steps = 3
        trainer.steps_per_epoch = 3
        trainer.train_dataloader = [dataset_rows(question)]
        trainer.train_dataloader_it = None
        trainer.replay_buffer.poll_interval = 0.02  # VERL's default is 2 s
        trainer._init_dump_executor()
        trainer.agent_loop_manager = manager  # what fit() sets; _validate() alone needs it too
        run = Run(trainer, manager)
        run.steps = run_steps
        yield run
    finally:
        loop.close()


def answers() -> Callable[[str], str]:
    """A different answer each time: identical judge requests in flight are sent once."""
    count = iter(range(1_000_000))
    return lambda prompt: f"It is sunny (take {next(count)})."


@contextmanager
def ray_get_identity() -> Iterator[None]:
    """``ray.get`` returns what it is given: the in-process handles above answer directly."""
    import ray

    module: Any = ray  # ray.get is an overloaded function: replaced for the test, then restored
    saved = module.get

    def get(refs: Any, *args: Any, **kwargs: Any) -> Any:
        real = isinstance(refs, ray.ObjectRef) or (
            isinstance(refs, list) and any(isinstance(r, ray.ObjectRef) for r in refs)
        )
        return saved(refs, *args, **kwargs) if real else refs  # the ledger actor's answers stay Ray's

    module.get = get
    try:
        yield
    finally:
        module.get = saved


async def in_loop(make: Callable[[], Any]) -> Any:
    return make()
