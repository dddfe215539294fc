"""A scripted pairwise judge with planted biases, and labelled pairs built to measure them.

Items are stratified so that every planted share holds exactly: each bias category is a
whole number of 20-item cycles, and each cycle crosses "longer response shown at A or B"
(10/10) with the label (1 tie, 6 longer-better, 3 shorter-better per 10). Only the
random judge's coin flips are random, and they are deterministic hashes.

Per item category, the judge (a function provider behind a real PairwiseJudge grader):

* ``position`` (30 %): always answers "A", whichever response is shown first;
* ``random`` (20 %): a fair coin per call;
* ``length`` (50 %): the longer response.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from openjudge.metaeval._items import PairItem, PairLabel, PairwiseSet
from openjudge.models.chat_model import ChatRequest

Category = Literal["position", "random", "length"]

POSITION_SHARE, RANDOM_SHARE, LENGTH_SHARE = 0.3, 0.2, 0.5
TIE_SHARE = 0.1
LONGER_BETTER_SHARE = 6 / 9
"""Of the pairs labelled A or B, the share whose longer response is labelled better."""

# Population values implied by the plan (derivations in test_planted_bias.py).
PLANTED = {
    "flip_rate": POSITION_SHARE + RANDOM_SHARE * 0.5,
    "first_position_win_rate": POSITION_SHARE + RANDOM_SHARE * 0.5 + LENGTH_SHARE * 0.5,
    "pairwise_accuracy": POSITION_SHARE * 0.5 + RANDOM_SHARE * 0.5 + LENGTH_SHARE * LONGER_BETTER_SHARE,
    "longer_wins_rate": POSITION_SHARE * 0.5 + RANDOM_SHARE * 0.5 + LENGTH_SHARE * 1.0,
}
PLANTED["three_way_agreement"] = (1 - TIE_SHARE) * PLANTED["pairwise_accuracy"]

_QUERY = re.compile(r"<query>\n(item (\d+)):")
_A = re.compile(r"<response_a>\n(.*?)\n</response_a>", re.DOTALL)
_B = re.compile(r"<response_b>\n(.*?)\n</response_b>", re.DOTALL)
_CYCLE = 20


@dataclass(frozen=True, slots=True)
class Planned:
    index: int
    category: Category
    longer_at_a: bool
    label: PairLabel


def _category(k: int) -> Category:
    block = k % 10
    return "position" if block < 3 else "random" if block < 5 else "length"


def plan(n: int) -> list[Planned]:
    """The design of ``n`` items (``n`` a multiple of 200 keeps every share exact)."""
    seen: Counter[Category] = Counter()
    out = []
    for k in range(n):
        category = _category(k)
        j = seen[category]
        seen[category] += 1
        longer_at_a = (j % _CYCLE) < _CYCLE // 2
        slot = j % 10
        if slot == 9:
            label: PairLabel = "tie"
        else:
            longer_better = slot < 6
            label = "A" if longer_better == longer_at_a else "B"
        out.append(Planned(k, category, longer_at_a, label))
    return out


def pairs(n: int) -> PairwiseSet:
    items = []
    for p in plan(n):
        long_text = f"a long answer to item {p.index}: " + "detail " * (8 + p.index % 5)
        short_text = f"short {p.index}"
        a, b = (long_text, short_text) if p.longer_at_a else (short_text, long_text)
        items.append(
            PairItem(
                id=f"item-{p.index}",
                line=p.index + 1,
                prompt=f"item {p.index}: which answer is better?",
                response_a=a,
                response_b=b,
                label=p.label,
            )
        )
    return PairwiseSet(tuple(items), source="planted")


def coin(key: str) -> Literal["A", "B"]:
    """A fair, deterministic coin."""
    return "A" if hashlib.sha256(key.encode()).digest()[0] < 128 else "B"


class ScriptedJudge:
    """The judge's reply function. With ``vary_calls`` the n-th identical call flips coin n."""

    def __init__(self, *, vary_calls: bool = False) -> None:
        self.vary_calls = vary_calls
        self.calls: Counter[str] = Counter()
        self.total = 0

    def winner(self, item: int, shown_first: str, shown_second: str) -> Literal["A", "B"]:
        category = _category(item)
        if category == "position":
            return "A"
        if category == "length":
            return "A" if len(shown_first) > len(shown_second) else "B"
        key = f"{item}|{shown_first}"
        call = self.calls[key]
        if self.vary_calls:
            self.calls[key] += 1
        return coin(f"{key}|{call}")

    def __call__(self, request: ChatRequest) -> str:
        self.total += 1
        text = str(request.messages[-1]["content"])
        found, a, b = _QUERY.search(text), _A.search(text), _B.search(text)
        assert found is not None and a is not None and b is not None, text
        return json.dumps(
            {"reason": "scripted", "winner": self.winner(int(found.group(2)), a.group(1), b.group(1))}
        )
