"""Run in a fresh process by ``test_entry_point``: our modules first, then VERL, then ``openjudge`` by name.

Usage: ``python -m tests.integrations.verl.entry_point_driver <graders.yaml>``; prints JSON.

The import order is the one that used to break: the shared modules (``rows``, the install
hint) before VERL, then the reward manager, whose import of VERL runs the ``verl.plugins``
entry point while the manager's own module is still being imported.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys


class Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def main(graders: str) -> None:
    errors = Errors()
    logging.getLogger("integrations").addHandler(errors)
    import openjudge.integrations.verl._rows  # VERL-free: imports no VERL
    import openjudge.integrations.verl._verl  # noqa: F401

    verl_after_rows = "verl" in sys.modules
    from openjudge.integrations.verl import (
        OpenJudgeRewardManager,  # imports VERL, which loads the entry point
    )

    loaded = {name: name in sys.modules for name in ("verl", "torch")}
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
                "verl_after_rows": verl_after_rows,
                "loaded_with_the_manager": loaded,
                "errors_logged": errors.messages,
                "agent_loop": _agent_loop_registry.get("openjudge_tool_agent"),
                "class": f"{type(manager).__module__}.{type(manager).__qualname__}",
                "registry": get_reward_manager_cls("openjudge") is OpenJudgeRewardManager,
                "rewards": [o["reward_score"] for o in outs],
                "kinds": [o["reward_extra_info"]["openjudge/quality/error_kind"] for o in outs],  # type: ignore[index]
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
