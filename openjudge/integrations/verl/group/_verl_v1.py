"""VERL 0.9's V1 agent loop, which the group stage subclasses, behind a version pin.

The group stage overrides private methods of ``AgentLoopWorkerTQ`` (``_run_prompt``,
``_run_agent_loop``, ``_compute_score``), so it is pinned to ``verl>=0.9,<0.10``; the
contract tests in ``tests/integrations/verl/group`` pin their names and signatures.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from openjudge.integrations.verl._verl import INSTALL_HINT

__all__ = [
    "SUPPORTED",
    "AgentLoopManager",
    "AgentLoopManagerTQ",
    "AgentLoopOutput",
    "AgentLoopWorkerTQ",
    "auto_await",
    "check_version",
    "get_custom_reward_fn",
]

SUPPORTED = ">=0.9,<0.10"


def check_version(installed: str) -> None:
    """Raise ImportError unless ``installed`` is a VERL 0.9.x version."""
    parts = installed.split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        major, minor = -1, -1
    if (major, minor) != (0, 9):
        raise ImportError(
            f"openjudge.integrations.verl.group needs verl{SUPPORTED}: it overrides private methods of VERL 0.9's "
            f"V1 agent-loop worker, and verl {installed} is installed. Install verl 0.9.x, or score "
            "per trajectory with openjudge.integrations.verl.OpenJudgeRewardManager."
        )


try:
    check_version(version("verl"))
except PackageNotFoundError as exc:  # pragma: no cover - verl missing
    raise ImportError(f"openjudge.integrations.verl.group needs verl{SUPPORTED}.\n{INSTALL_HINT}") from exc

try:
    from verl.experimental.agent_loop.agent_loop import AgentLoopManager, AgentLoopOutput
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopManagerTQ, AgentLoopWorkerTQ
    from verl.utils.ray_utils import auto_await
except ImportError as exc:  # pragma: no cover - a partial VERL install
    raise ImportError(
        "openjudge.integrations.verl.group needs VERL's V1 trainer modules, which import TransferQueue, torchdata, "
        "peft, pillow and cachetools (all in `pip install verl[...]`'s core set; "
        f"`bash scripts/install-verl.sh` installs them for a CPU check).\n(import failed: {exc})"
    ) from exc
