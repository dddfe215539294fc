"""What ``on_failure=drop`` costs VERL's async trainers: whole groups evicted, biased by prompt.

    python -m bench.verl_evictions

VERL's async replay buffer (``ReplayBufferAsync``, here the openjudge subclass that counts
and bounds evictions) evicts a prompt group as soon as one of its ``n`` sessions failed
and generates a new prompt instead. With per-sample failure probability ``p`` a group
survives with probability ``(1 - p) ** n``. This runs VERL's buffer (over the in-memory
TransferQueue of the tests) for ``STEPS`` steps of ``BATCH`` prompts, ``n`` = 8, with
failures drawn per sample, and prints:

* the share of groups evicted under ``drop`` (and the prompts generated per trained group),
  against ``1 - (1 - p) ** n``; under ``neutral`` no group is evicted: the failed member
  trains with zero advantage;
* the bias: when failures concentrate on some prompts (answers the judge fails on: long,
  hostile, off-format), those prompts' share of the trained groups under ``drop``, against
  their share of the prompts (which ``neutral`` keeps);
* whether the openjudge bound (more than ``max_failure_rate`` of the last
  ``failure_window`` groups evicted stops the run, default 0.5 of 100) trips, and when.

No timing: these are counts, the same on any machine (a fixed seed).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omegaconf import OmegaConf

from openjudge.errors import FailureRateExceeded
from openjudge.integrations.verl._ledger import driver_view, reset_run_ledgers, run_ledger
from openjudge.integrations.verl._settings import FailurePolicy

N = 8
BATCH = 64
STEPS = 40


@dataclass
class Outcome:
    trained: int
    generated: int
    hard_trained: int
    hard_generated: int
    evicted_counted: int
    stopped: str | None


def run(
    p_easy: float, p_hard: float, hard_share: float, *, bound: float | None = None, seed: int = 0
) -> Outcome:
    """``STEPS`` steps of VERL's async buffer under ``drop``: prompts are hard with ``hard_share``;
    ``bound``: the ``max_failure_rate`` the buffer stops at (``None``: never)."""
    from tests.integrations.verl import fake_tq

    rng = random.Random(seed)
    reset_run_ledgers()
    run_ledger(FailurePolicy(max_failure_rate=bound, failure_window=100), {})  # the reward workers' options
    hard: set[str] = set()
    generated = [0]
    with fake_tq.installed() as store:
        from openjudge.integrations.verl.sampler import OpenJudgeReplayBufferAsync

        def refill(count: int) -> None:  # what VERL's trainer and AgentLoopWorkerTQ do for each prompt
            for _ in range(count):
                generated[0] += 1
                uid = f"p{generated[0]}"
                is_hard = rng.random() < hard_share
                if is_hard:
                    hard.add(uid)
                p = p_hard if is_hard else p_easy
                ok = [rng.random() >= p for _ in range(N)]
                for s in (s for s in range(N) if ok[s]):
                    store.put(
                        "train",
                        f"{uid}_{s}_0",
                        {"status": "success", "global_steps": 1},
                        {"extra_fields": {}},
                    )
                status = "finished" if all(ok) else "failure"
                store.put("train", uid, {"is_prompt": True, "status": status, "global_steps": 1}, None)

        buffer = OpenJudgeReplayBufferAsync(  # the arguments VERL's trainer gives a custom sampler
            trainer_mode="colocate_async",
            trainer_config=OmegaConf.create({}),
            max_off_policy_threshold=None,
            max_off_policy_strategy="drop",
            sampler_kwargs=OmegaConf.create({}),
            poll_interval=0.0,
            refill_fn=refill,
        )
        trained = hard_trained = 0
        stopped = None
        try:
            for step in range(1, STEPS + 1):
                refill(BATCH)  # the step's batch (VERL's prepare_step)
                batch, _ = buffer.sample(step, "train", BATCH)
                uids = {key.split("_")[0] for key in batch.keys}
                trained += len(uids)
                hard_trained += len(uids & hard)
                store.tags.get("train", {}).clear()  # the step trained them (VERL clears its keys)
        except FailureRateExceeded as exc:
            stopped = str(exc)
    _, counts = driver_view()  # the ledger's count, as training/openjudge/run/evicted_groups reports it
    return Outcome(trained, generated[0], hard_trained, len(hard), counts["evicted_groups"], stopped)


def describe(
    label: str, p: float, outcome: Outcome, bounded: Outcome, hard_share: float | None = None
) -> None:
    tried = outcome.trained + outcome.evicted_counted
    share = outcome.evicted_counted / tried if tried else 0.0
    print(f"{label} ({STEPS} steps of {BATCH} prompts):")
    print(
        f"  drop: {share:.1%} of groups evicted (1 - (1 - p)^n = {1 - (1 - p) ** N:.1%}), "
        f"{outcome.generated / max(outcome.trained, 1):.2f} prompts generated per trained group"
    )
    if hard_share is not None and outcome.trained:
        print(
            f"  drop: the prompts the judge fails on are {hard_share:.0%} of the prompts but "
            f"{outcome.hard_trained / outcome.trained:.1%} of the trained groups (neutral: {hard_share:.0%})"
        )
    print("  neutral: 0 groups evicted; each failed member trains with zero advantage")
    if bounded.stopped is None:
        print("  the openjudge bound (max_failure_rate=0.5 of the last 100 groups): not tripped")
    else:
        print(
            f"  the openjudge bound (max_failure_rate=0.5 of the last 100 groups): stops the run after "
            f"{bounded.trained} trained groups and {bounded.evicted_counted} evicted"
        )


def main(report: Callable[..., Any] = describe) -> None:
    for p in (0.05, 0.10):
        report(
            f"n = {N}, {p:.0%} of samples failing, uniformly", p, run(p, p, 0.0), run(p, p, 0.0, bound=0.5)
        )
    # 20 % of the prompts fail the judge at 20 %, the others at 1.25 %: 5 % of samples overall.
    args = (0.0125, 0.20, 0.20)
    report(
        f"n = {N}, 5% of samples failing, concentrated on 20% of the prompts (at 20%; the rest at 1.25%)",
        0.05,
        run(*args),
        run(*args, bound=0.5),
        0.20,
    )


if __name__ == "__main__":
    main()
