"""One process of a two-process GRPO run (``torchrun --nproc_per_node 2``), for test_processes.py.

Process 1's judge is down, process 0's is up. Each process trains, then writes what
``train()`` raised to ``<out>/rank<N>.json``. A process whose ``train()`` raised stays alive
until the other has written its file (at most ``LINGER_S``), as a failed process does that
does not exit at once: its peers must not depend on its death to stop waiting.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from datasets import Dataset  # type: ignore[import-untyped]  # no py.typed

from openjudge.graders.llm_grader import LLMGrader
from openjudge.integrations.trl import OpenJudgeRewards
from openjudge.models._errors import ChatModelError
from openjudge.models.chat_model import ChatRequest
from openjudge.runner.grading_runner import GraderConfig, GradingRunner
from openjudge.testing.function_model import FunctionChatModel
from tests.integrations.trl.helpers import make_trainer

LINGER_S = 60.0


def judge(request: ChatRequest) -> str:
    if os.environ["RANK"] == "1":
        raise ChatModelError("judge down on this node", status_code=503, retryable=False)
    return '{"reason": "ok", "score": 4}'


def main(out: Path) -> None:
    rank = int(os.environ["RANK"])
    grader = LLMGrader(
        FunctionChatModel(judge), name="helpful", template="A: {a}", score_range=(1, 5), max_reasks=0
    )
    runner = GradingRunner({"helpful": GraderConfig(grader, {"a": "response"})}, show_progress=False)
    rewards = OpenJudgeRewards(  # neutral: any TRL (drop needs 1.6); the failure rate trips either way
        runner, on_failure="neutral", max_failure_rate=0.5, failure_window=4, breaker_failures=0
    )
    data = Dataset.from_dict({"prompt": ["what is 2+2 ?", "what is the answer ?"] * 8})
    trainer = make_trainer(out / f"out{rank}", rewards.per_grader(), data, num_generations=2, batch_size=4)
    trainer.args.max_steps = 4
    result: dict[str, object] = {"rank": rank}
    started = time.monotonic()
    try:
        trainer.train()
    except Exception as exc:
        result.update(error=type(exc).__name__, message=str(exc), notes=getattr(exc, "__notes__", []))
    result.update(seconds=time.monotonic() - started, step=trainer.state.global_step)
    (out / f"rank{rank}.json").write_text(json.dumps(result), encoding="utf-8")
    other = out / f"rank{1 - rank}.json"
    deadline = time.monotonic() + LINGER_S
    while "error" in result and not other.exists() and time.monotonic() < deadline:
        time.sleep(0.2)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
