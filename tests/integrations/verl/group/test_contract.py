"""Contract tests: the private VERL 0.9 methods the group stage overrides or relies on.

``openjudge.integrations.verl.group`` is pinned to ``verl>=0.9,<0.10``. When a VERL release moves
one of these, a test here fails and names it, before a training run does.
"""

from __future__ import annotations

import inspect
from importlib.metadata import version

import pytest
from verl.experimental.agent_loop.agent_loop import AgentLoopManager, AgentLoopWorker
from verl.trainer.ppo.v1 import agent_loop_tq
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopManagerTQ, AgentLoopWorkerTQ

from openjudge.integrations.verl.group._manager import OpenJudgeAgentLoopManager
from openjudge.integrations.verl.group._verl_v1 import check_version
from openjudge.integrations.verl.group._worker import OpenJudgeAgentLoopWorker

WORKER_TQ = AgentLoopWorkerTQ.__ray_actor_class__  # type: ignore[attr-defined]  # set by @ray.remote


def params(fn: object) -> list[tuple[str, object, object]]:
    """The parameters, less the ``_ray_trace_ctx`` keyword Ray adds to actor methods."""
    sig = inspect.signature(fn)  # type: ignore[arg-type]  # a function
    return [(p.name, p.kind, p.default) for p in sig.parameters.values() if p.name != "_ray_trace_ctx"]


def test_the_installed_verl_is_the_pinned_one() -> None:
    check_version(version("verl"))  # 0.9.x here
    for other in ("0.8.3", "0.10.0", "1.0"):
        with pytest.raises(ImportError, match=rf"needs verl>=0.9,<0.10.*verl {other} is installed"):
            check_version(other)


def test_run_prompt_signature_and_how_it_reads_n() -> None:
    assert params(WORKER_TQ._run_prompt) == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("prompt", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("sampling_params", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("trajectory", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
        ("trace", inspect.Parameter.POSITIONAL_OR_KEYWORD, False),
    ]
    source = inspect.getsource(WORKER_TQ._run_prompt)
    # n as the override computes it, before VERL pops __rollout_n__.
    assert (
        'prompt.pop("__rollout_n__", config.n if not trajectory["validate"] else config.val_kwargs.n)'
        in source
    )
    assert 'uid, partition_id = prompt["uid"]' in source
    assert "session_id=i" in source and "await _settle_session_tasks(tasks)" in source
    assert callable(agent_loop_tq._settle_session_tasks)


def test_run_agent_loop_and_compute_score_signatures() -> None:
    kind = inspect.Parameter
    assert params(AgentLoopWorker._run_agent_loop) == [
        ("self", kind.POSITIONAL_OR_KEYWORD, kind.empty),
        ("sampling_params", kind.POSITIONAL_OR_KEYWORD, kind.empty),
        ("trajectory", kind.POSITIONAL_OR_KEYWORD, kind.empty),
        ("agent_name", kind.KEYWORD_ONLY, kind.empty),
        ("trace", kind.KEYWORD_ONLY, True),
        ("kwargs", kind.VAR_KEYWORD, kind.empty),
    ]
    assert params(AgentLoopWorker._compute_score) == [
        ("self", kind.POSITIONAL_OR_KEYWORD, kind.empty),
        ("outputs", kind.POSITIONAL_OR_KEYWORD, kind.empty),
        ("kwargs", kind.POSITIONAL_OR_KEYWORD, kind.empty),
    ]
    # The V1 postprocess scores every output of a session through _compute_score, then
    # copies the final output's reward to the others.
    postprocess = inspect.getsource(WORKER_TQ._agent_loop_postprocess)
    assert "await self._compute_score(outputs, kwargs=kwargs)" in postprocess
    assert (
        'output.extra_fields["reward_extra_info"] = final_output.extra_fields["reward_extra_info"]'
        in postprocess
    )
    run_loop = inspect.getsource(AgentLoopWorker._run_agent_loop)
    assert 'return await self._agent_loop_postprocess(output, trajectory["validate"], **kwargs)' in run_loop
    compute = inspect.getsource(AgentLoopWorker._compute_score)
    assert "if final_output.reward_score is None and enable_async_reward:" in compute


def test_our_overrides_keep_verl_signatures() -> None:
    for name in ("_run_prompt", "_run_agent_loop", "_compute_score"):
        ours = getattr(OpenJudgeAgentLoopWorker, name)
        theirs = getattr(WORKER_TQ, name)
        assert [p[:2] for p in params(ours)] == [p[:2] for p in params(theirs)], name
        assert inspect.iscoroutinefunction(ours) and inspect.iscoroutinefunction(theirs)
    assert issubclass(OpenJudgeAgentLoopWorker, WORKER_TQ)


def test_manager_hooks() -> None:
    assert issubclass(OpenJudgeAgentLoopManager, AgentLoopManagerTQ)
    assert "self.agent_loop_workers_class = AgentLoopWorkerTQ" in inspect.getsource(
        AgentLoopManagerTQ.__init__
    )
    assert 'if not hasattr(self, "agent_loop_workers_class"):' in inspect.getsource(AgentLoopManager.__init__)
    assert "self.agent_loop_workers_class.options(" in inspect.getsource(
        AgentLoopManager._init_agent_loop_workers
    )
    assert isinstance(inspect.getattr_static(AgentLoopManagerTQ, "create"), classmethod)
    assert isinstance(inspect.getattr_static(OpenJudgeAgentLoopManager, "create"), classmethod)


def test_trainers_load_the_manager_class_from_the_documented_key() -> None:
    from verl.trainer import main_ppo
    from verl.trainer.ppo import ray_trainer

    key = 'self.config.actor_rollout_ref.rollout.get("agent", {}).get("agent_loop_manager_class")'
    assert key in inspect.getsource(main_ppo.TaskRunnerV1.init_agent_loop_manager)
    assert key in inspect.getsource(ray_trainer)
