"""Judgements someone else already made, read back as a run: no config, no judge calls.

Benchmarks publish their judges' raw outputs; reading them as a :class:`MetaEvalRun`
puts every published judge through our metrics (and, by :mod:`._headline`, the
benchmark's own rule), so our definitions can be checked against the leaderboard and a
judge of yours set beside published ones on the same figures.

==============  =============================================================================
``judgebench``  JudgeBench ``outputs/*.jsonl``: a pair per line (``pair_id``, ``question``,
                ``response_A``, ``response_B``, ``label``) and ``judgments``: one or two
                (the second with the responses swapped), each ``{"decision": "A>B" | "B>A"
                | "A=B" | null, "judgment": {"judge_model", "scores"?}}`` or ``null``. A
                decision is on the order shown; reward models also store their two
                ``scores``, read as P(first better) = sigmoid(difference).
``llmbar``      LLMBar ``evaluators/<model>/<method>/result.json``: the dataset's items
                (``input``, ``output_1``, ``output_2``, ``label``) with ``results``, whose
                last entry holds ``"swap = False"`` and ``"swap = True"``, each with a
                ``winner`` ``"1"``, ``"2"`` or ``null`` already on the stored order. Ids are
                content hashes of the item without ``results``, as for ``dataset.json``.
                The ``Rating*`` evaluators score each output once; LLMBar then reads the
                two scores twice with opposite tie-breaks (a tie goes to output 2, then to
                output 1), so their "flips" are score ties.
==============  =============================================================================

Our own files (a meta-eval's ``--judgements``, or ``openjudge run`` results with the
labelled data) are read by :mod:`._rescore`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import JsonValue

from openjudge.jobs._datasets import BadRecord, sample_id
from openjudge.jobs._datasets import iter_samples as _iter_samples
from openjudge.metaeval._items import PairItem, PairwiseSet
from openjudge.metaeval._loaders import LabelledDataError, RecordProblem, read_item
from openjudge.metaeval._runs import GraderRun, MetaEvalRun
from openjudge.metaeval._verdicts import NONE, TIE, A, B

__all__ = ["BENCHMARK_FORMATS", "load_benchmark_recording"]

BENCHMARK_FORMATS = ("judgebench", "llmbar")
_SHOWN_PROBLEMS = 10
_JUDGEBENCH_DECISIONS = {"A>B": A, "B>A": B, "A=B": TIE}
_LLMBAR_WINNERS = {"1": A, "2": B}
_SWAP = (B, A, TIE)


@dataclass(slots=True)
class _Judgement:
    """One order's verdict, on the order shown (``A``: the response shown first)."""

    verdict: int
    preference: float = math.nan
    failure: str | None = None
    message: str = ""


@dataclass(slots=True)
class _Collected:
    items: list[PairItem] = field(default_factory=list)
    orders: list[list[_Judgement]] = field(default_factory=list)
    names: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)


def _records(path: Path, id_key: str | None) -> Iterator[tuple[int, str, dict[str, JsonValue]] | str]:
    for record in _iter_samples(path, on_error="skip", id_key=id_key):
        if isinstance(record, BadRecord):
            yield f"{path}: {record.message}"
        else:
            yield record.line, record.id, record.data


def _pair_item(kind: str, record: Mapping[str, JsonValue], id_: str, line: int) -> PairItem:
    item = read_item(kind, record, id_, line)
    assert isinstance(item, PairItem)  # both benchmarks' formats are pairwise
    return item


def _sigmoid(x: float) -> float:
    return 0.5 * (1.0 + math.tanh(0.5 * x))  # no overflow for large |x|


def _judgebench_order(raw: JsonValue, where: str) -> tuple[_Judgement, str | None]:
    """One stored judgment: its verdict on the order shown, and the judge model it names."""
    if raw is None:
        return _Judgement(NONE, failure="no_judgement", message=f"{where}: the judgment is null"), None
    if not isinstance(raw, dict):
        raise RecordProblem(where, f"expected an object or null, got {type(raw).__name__}")
    inner = raw.get("judgment")
    inner = inner if isinstance(inner, dict) else {}
    model = inner.get("judge_model")
    decision = raw.get("decision")
    verdict = _JUDGEBENCH_DECISIONS.get(decision) if isinstance(decision, str) else None
    if verdict is None:
        text = "no decision" if decision is None else f"decision {decision!r} is not A>B, B>A or A=B"
        return _Judgement(NONE, failure="no_verdict", message=f"{where}: {text}"), str(
            model
        ) if model else None
    scores = inner.get("scores")
    preference = {A: 1.0, B: 0.0, TIE: 0.5}[verdict]
    if (
        isinstance(scores, list)
        and len(scores) == 2
        and all(isinstance(s, int | float) and not isinstance(s, bool) and math.isfinite(s) for s in scores)
    ):
        first, second = (float(s) for s in scores)  # type: ignore[arg-type]  # numbers, checked above
        preference = _sigmoid(first - second)
    return _Judgement(verdict, preference), str(model) if model else None


def _judgebench(path: Path, limit: int | None) -> tuple[_Collected, str]:
    found = _Collected()
    orders_seen: tuple[int, int] | None = None  # (orders, line of the first record)
    for entry in _records(path, "pair_id"):
        if isinstance(entry, str):
            found.problems.append(entry)
            continue
        line, id_, record = entry
        try:
            judgments = record.get("judgments")
            if not isinstance(judgments, list) or len(judgments) not in (1, 2):
                raise RecordProblem("judgments", "expected a list of one or two judgments (both orders)")
            if orders_seen is None:
                orders_seen = (len(judgments), line)
            elif len(judgments) != orders_seen[0]:
                raise RecordProblem(
                    "judgments",
                    f"{len(judgments)} judgment(s), but the record at line {orders_seen[1]} has "
                    f"{orders_seen[0]}: a file holds one judge run in one mode",
                )
            pair = {k: v for k, v in record.items() if k not in ("judgments", "judge_name")}
            item = _pair_item("judgebench", pair, id_, line)
            read = [_judgebench_order(j, f"judgments[{k}]") for k, j in enumerate(judgments)]
        except RecordProblem as exc:
            found.problems.append(f"{path}:{line}: {exc}")
            continue
        judge = record.get("judge_name")
        models = {m for _, m in read if m}
        found.names[f"{judge}:{'/'.join(sorted(models))}" if judge and models else path.stem] += 1
        found.items.append(item)
        found.orders.append([j for j, _ in read])
        if limit is not None and len(found.items) >= limit:
            break
    return found, "judgebench"


def _llmbar_order(result: Mapping[str, JsonValue], key: str) -> _Judgement:
    order = result.get(key)
    if not isinstance(order, dict) or "winner" not in order:
        raise RecordProblem(f"results[-1][{key!r}]", "expected an object with a 'winner'")
    winner = order["winner"]
    verdict = _LLMBAR_WINNERS.get(winner) if isinstance(winner, str) else None
    if verdict is None:
        text = "no winner" if winner is None else f"winner {winner!r} is not '1' or '2'"
        return _Judgement(NONE, failure="no_verdict", message=f"results[-1][{key!r}]: {text}")
    # LLMBar stores both winners on the stored order; keep ours on the order shown.
    shown = verdict if key == "swap = False" else _SWAP[verdict]
    return _Judgement(shown, {A: 1.0, B: 0.0}[shown])


def _llmbar_name(path: Path) -> str:
    parts = path.resolve().parts
    if "evaluators" in parts[:-1]:
        at = len(parts) - 1 - parts[::-1].index("evaluators")
        return "/".join(parts[at + 1 : -1]) or path.stem
    return path.parent.name or path.stem


def _llmbar(path: Path, limit: int | None) -> tuple[_Collected, str]:
    found = _Collected()
    name = _llmbar_name(path)
    for entry in _records(path, None):
        if isinstance(entry, str):
            found.problems.append(entry)
            continue
        line, _, record = entry
        try:
            results = record.get("results")
            if not isinstance(results, list) or not results or not isinstance(results[-1], dict):
                raise RecordProblem("results", "expected a list whose last entry holds both orders' winners")
            pair = {k: v for k, v in record.items() if k != "results"}
            item = _pair_item("llmbar", pair, sample_id(pair), line)
            read = [_llmbar_order(results[-1], key) for key in ("swap = False", "swap = True")]
        except RecordProblem as exc:
            found.problems.append(f"{path}:{line}: {exc}")
            continue
        found.names[name] += 1
        found.items.append(item)
        found.orders.append(read)
        if limit is not None and len(found.items) >= limit:
            break
    return found, "llmbar"


def _grader_run(name: str, orders: list[list[_Judgement]]) -> GraderRun:
    n, count = len(orders), len(orders[0])
    run = GraderRun(name=name, kind="pair", repeats=1, swapped=count == 2)
    verdict = np.full((1, count, n), NONE, dtype=np.int64)
    preference = np.full((1, count, n), math.nan)
    for i, judged in enumerate(orders):
        for order, j in enumerate(judged):
            run.judgements += 1
            if j.failure is not None:
                run.failures[j.failure] += 1
                run.failure_examples.setdefault(j.failure, j.message)
                continue
            # The second order showed response_b first: map its verdict back to the stored order.
            verdict[0, order, i] = j.verdict if order == 0 else _SWAP[j.verdict]
            preference[0, order, i] = j.preference if order == 0 else 1.0 - j.preference
    run.verdict, run.preference = verdict, preference
    return run


def load_benchmark_recording(
    path: str | Path, *, format: str, skip_bad: bool = False, limit: int | None = None
) -> MetaEvalRun:
    """Read one benchmark judge's stored outputs as a run of one pair grader.

    Args:
        path: The outputs file (see the module docstring).
        format: ``"judgebench"`` or ``"llmbar"``.
        skip_bad: Leave out unusable records instead of failing.
        limit: Read at most this many items.

    Raises:
        LabelledDataError: The file or a record cannot be used (file, line and field named).
    """
    p = Path(path)
    if format not in BENCHMARK_FORMATS:
        raise ValueError(f"format must be one of {', '.join(BENCHMARK_FORMATS)}, got {format!r}")
    found, kind = _judgebench(p, limit) if format == "judgebench" else _llmbar(p, limit)
    if found.problems and not skip_bad:
        raise LabelledDataError(found.problems, path=p)
    if not found.items:
        raise LabelledDataError([f"{p}: no usable records", *found.problems[:_SHOWN_PROBLEMS]], path=p)
    name = found.names.most_common(1)[0][0]
    data = PairwiseSet(tuple(found.items), source=str(p), format=kind, skipped=tuple(found.problems))
    run = _grader_run(name, found.orders)
    return MetaEvalRun(
        data=data, graders=(run,), skipped={}, repeats=1, swap=run.swapped, label=name, recorded=kind
    )
