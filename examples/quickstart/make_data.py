"""Write the quickstart dataset: agent trajectories solving word problems with tools.

Each sample is an OpenAI-format conversation in which an agent uses a ``calculator``
and a ``lookup`` tool, then answers as ``<think>...</think><answer>...</answer>``, with the
ground truth and the reference tool calls. A seeded generator makes a mix of clean
runs, loops (the same call repeated), wasted lookups, wrong answers and broken format,
so every grader in ``config.yaml`` has something to find. Rerunning it rewrites the
same file byte for byte.

    python examples/quickstart/make_data.py examples/quickstart/data.jsonl
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

ITEMS = [("apples", 0.45), ("pencils", 1.2), ("notebooks", 3.5), ("coffee bags", 8.75), ("stamps", 0.68)]
CITIES = [("Lyon", 522_250), ("Porto", 231_800), ("Graz", 291_000), ("Tartu", 97_000), ("Bergen", 286_000)]


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


class Trajectory:
    def __init__(self, question: str) -> None:
        self.messages: list[dict[str, Any]] = [
            {
                "role": "system",
                "content": "You are a careful assistant. Use tools, then answer in <think>/<answer> tags.",
            },
            {"role": "user", "content": question},
        ]
        self.calls: list[dict[str, Any]] = []

    def step(self, name: str, observation: str, **arguments: Any) -> None:
        c = call(f"call_{len(self.calls)}", name, **arguments)
        self.calls.append(c)
        self.messages.append({"role": "assistant", "content": "", "tool_calls": [c]})
        self.messages.append({"role": "tool", "tool_call_id": c["id"], "name": name, "content": observation})

    def answer(self, text: str) -> str:
        self.messages.append({"role": "assistant", "content": text})
        return text


def fmt(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def shopping(rng: random.Random, i: int, flaw: str) -> dict[str, Any]:
    item, price = rng.choice(ITEMS)
    qty = rng.randint(3, 40)
    total = round(price * qty, 2)
    t = Trajectory(f"How much do {qty} {item} cost? Look up the unit price first.")
    t.step(
        "lookup",
        f"Unit price of {item}: {fmt(price)} EUR (catalogue, item #{100 + i}).",
        query=f"price of {item}",
    )
    if flaw == "loop":
        for _ in range(rng.randint(2, 3)):
            t.step(
                "lookup",
                f"Unit price of {item}: {fmt(price)} EUR (catalogue, item #{100 + i}).",
                query=f"price of {item}",
            )
    if flaw == "wasted":
        t.step(
            "lookup",
            f"The store opens at {rng.randint(7, 10)}:00 and closes at 20:00 on weekdays.",
            query="store hours",
        )
    t.step("calculator", f"{fmt(price)} * {qty} = {fmt(total)}", expression=f"{fmt(price)} * {qty}")
    shown = fmt(total + (rng.choice([-1, 1]) * round(price, 2) if flaw == "wrong" else 0))
    reasoning = f"Each costs {fmt(price)} EUR, so {qty} cost {fmt(price)} * {qty}."
    response = (
        f"{qty} {item} cost {shown} EUR."
        if flaw == "format"
        else f"<think>{reasoning}</think><answer>{shown}</answer>"
    )
    t.answer(response)
    reference = [
        call("r0", "lookup", query=f"price of {item}"),
        call("r1", "calculator", expression=f"{fmt(price)} * {qty}"),
    ]
    return {
        "task": "shopping",
        "question": t.messages[1]["content"],
        "messages": t.messages,
        "response": response,
        "ground_truth": fmt(total),
        "reference_tool_calls": reference,
    }


def density(rng: random.Random, i: int, flaw: str) -> dict[str, Any]:
    (a, pa), (b, pb) = rng.sample(CITIES, 2)
    diff = abs(pa - pb)
    t = Trajectory(f"What is the difference in population between {a} and {b}?")
    t.step(
        "lookup", f"{a} has a population of {pa:,} (2024 estimate, city proper).", query=f"population of {a}"
    )
    t.step(
        "lookup", f"{b} has a population of {pb:,} (2024 estimate, city proper).", query=f"population of {b}"
    )
    if flaw == "loop":
        t.step(
            "lookup",
            f"{b} has a population of {pb:,} (2024 estimate, city proper).",
            query=f"population of {b}",
        )
    if flaw == "wasted":
        t.step("lookup", "ok", query=f"mayor of {a}")
    t.step("calculator", f"|{pa} - {pb}| = {diff}", expression=f"abs({pa} - {pb})")
    shown = diff + (rng.choice([-1000, 1000]) if flaw == "wrong" else 0)
    response = (
        f"The difference is {shown:,} people."
        if flaw == "format"
        else f"<think>{a} has {pa:,} and {b} has {pb:,} people.</think><answer>{shown}</answer>"
    )
    t.answer(response)
    reference = [
        call("r0", "lookup", query=f"population of {a}"),
        call("r1", "lookup", query=f"population of {b}"),
        call("r2", "calculator", expression=f"abs({pa} - {pb})"),
    ]
    return {
        "task": "population",
        "question": t.messages[1]["content"],
        "messages": t.messages,
        "response": response,
        "ground_truth": str(diff),
        "reference_tool_calls": reference,
    }


FLAWS = ["none"] * 5 + ["loop", "wasted", "wrong", "format"]


def make(count: int = 300, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    samples = []
    for i in range(count):
        flaw = rng.choice(FLAWS)
        sample = (shopping if i % 2 == 0 else density)(rng, i, flaw)
        samples.append({"id": f"qs-{i:04d}", "flaw": flaw, **sample})
    return samples


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).with_name("data.jsonl"))
    with out.open("w", encoding="utf-8") as f:
        for sample in make():
            f.write(json.dumps(sample, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
