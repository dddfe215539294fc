"""Run in a fresh process by ``test_entry_point``: find ``openjudge`` through the ``verl.plugins`` entry point.

Usage: ``python -m tests.integrations.verl.entry_point_driver <graders.yaml>``; prints JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys


def main(graders: str) -> None:
    import verl  # noqa: F401  # loads the verl.plugins entry points, as in every VERL process

    registered = "integrations.verl.reward_loop" in sys.modules  # imported by the plugin, not by us
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls
    from verl.trainer.ppo.reward import load_reward_manager

    from tests.integrations.verl.helpers import (
        FALLBACK_OPTIONS,
        FAULT_PROMPTS,
        make_batch,
        make_tokenizer,
        trainer_config,
        words_of,
    )

    tokenizer = make_tokenizer(words_of(FAULT_PROMPTS))
    cfg = trainer_config(
        [
            "reward.reward_manager.name=openjudge",  # source=register (the default)
            f"+reward.openjudge.config={graders}",
            *FALLBACK_OPTIONS,
        ]
    )
    manager = load_reward_manager(cfg, tokenizer, reward_router_address=None, reward_model_tokenizer=None)
    data = make_batch(tokenizer, FAULT_PROMPTS[:1])

    async def run() -> list[dict[str, object]]:
        return list(await asyncio.gather(*(manager.run_single(data[i : i + 1]) for i in range(len(data)))))

    outs = asyncio.run(run())
    print(
        json.dumps(
            {
                "registered_on_import_verl": registered,
                "agent_loop": _agent_loop_registry.get("openjudge_tool_agent"),
                "class": f"{type(manager).__module__}.{type(manager).__qualname__}",
                "registry": get_reward_manager_cls("openjudge").__qualname__,
                "rewards": [o["reward_score"] for o in outs],
                "kinds": [o["reward_extra_info"]["openjudge/quality/error_kind"] for o in outs],  # type: ignore[index]
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
