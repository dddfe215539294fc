"""A meta-eval's judgements on disk (``--judgements FILE``), to re-score without calling a judge.

JSON Lines. The first line describes the run and its graders; every other line is one
labelled item with what each grader said about it::

    {"openjudge_meta_eval": {"format": 1, "kind": "pairwise" | "pointwise", "source": str,
      "data_format": str, "swap": bool, "repeats": int, "label": str, "recorded": str | null,
      "graders": [{"name", "kind": "pair" | "single", "repeats", "swapped", "provider",
                   "price", "score_range", "judgements", "failures", "failure_examples",
                   "usage": {"prompt_tokens", "completion_tokens", "requests"},
                   "judge_s", "wall_s"}]}}
    {"id", "line", "prompt", "response_a", "response_b", "label" ("A" | "B" | "tie"),
     "reference"?, "extra"?, "judged": {grader: JUDGED}}          # a pair
    {"id", "line", "prompt", "response", "label" (a number), ..., "judged": {...}}  # a response

where JUDGED holds, per repeat, per order (pair graders: as stored, then swapped) or per
side (single graders: ``response_a``, ``response_b``; one side on scored responses)::

    {"verdict": [["A", "tie"], ...], "preference": [[0.9, 0.5], ...],     # pair graders
     "judge_flip": float | null, "judge_first_wins": float, "judge_decisive": float}
    {"score": [[4.0, 2.0], ...], "oriented": [[0.75, 0.25], ...]}       # single graders

Verdicts are on the stored order (``A`` is ``response_a``); ``null`` is no verdict. A
single grader's verdicts on pairs are derived again from its scores when read.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from openjudge._text import encodable_json_text
from openjudge.jobs._summary import Price
from openjudge.metaeval._items import PairItem, PairLabel, PairwiseSet, PointItem, PointwiseSet
from openjudge.metaeval._loaders import LabelledDataError
from openjudge.metaeval._runs import GraderRun, MetaEvalRun, pair_verdicts_from_scores
from openjudge.metaeval._stats import Floats
from openjudge.metaeval._verdicts import NONE, TIE, A, B
from openjudge.results import ScoreRange, TokenUsage

__all__ = ["HEADER_KEY", "read_judgements", "write_judgements"]

HEADER_KEY = "openjudge_meta_eval"
_CODES: dict[str | None, int] = {"A": A, "B": B, "tie": TIE, None: NONE}
_NAMES: dict[int, str | None] = {code: name for name, code in _CODES.items()}


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class _Usage(_Model):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0


class _GraderHead(_Model):
    name: str
    kind: Literal["pair", "single"]
    repeats: int = Field(ge=1)
    swapped: bool
    provider: str | None = None
    price: dict[str, float] | None = None
    score_range: ScoreRange | None = None
    judgements: int = 0
    failures: dict[str, int] = Field(default_factory=dict)
    failure_examples: dict[str, str] = Field(default_factory=dict)
    usage: _Usage = Field(default_factory=_Usage)
    judge_s: float = 0.0
    wall_s: float = 0.0
    not_applicable: int = 0


class _Head(_Model):
    format: Literal[1] = 1
    kind: Literal["pairwise", "pointwise"]
    source: str
    data_format: str
    swap: bool
    repeats: int = Field(ge=1)
    label: str = ""
    recorded: str | None = None
    graders: list[_GraderHead]


class _Judged(_Model):
    verdict: list[list[str | None]] | None = None
    preference: list[list[float | None]] | None = None
    judge_flip: float | None = None
    judge_first_wins: float = 0.0
    judge_decisive: float = 0.0
    score: list[list[float | None]] | None = None
    oriented: list[list[float | None]] | None = None


class _Line(_Model):
    id: str
    line: int
    prompt: str
    response_a: str | None = None
    response_b: str | None = None
    response: str | None = None
    label: str | float
    reference: str | None = None
    extra: dict[str, JsonValue] = Field(default_factory=dict)
    judged: dict[str, _Judged]


def _floats(values: Floats) -> list[list[float | None]]:
    return [[None if math.isnan(v) else float(v) for v in row] for row in values]


def _judged(run: GraderRun, i: int) -> dict[str, JsonValue]:
    if run.kind == "pair":
        assert run.verdict is not None and run.preference is not None
        flip = None if run.judge_flip is None or math.isnan(run.judge_flip[i]) else float(run.judge_flip[i])
        return {
            "verdict": [[_NAMES[int(v)] for v in row] for row in run.verdict[:, :, i]],
            "preference": _floats(run.preference[:, :, i]),  # type: ignore[dict-item]  # JSON numbers
            "judge_flip": flip,
            "judge_first_wins": 0.0 if run.judge_first_wins is None else float(run.judge_first_wins[i]),
            "judge_decisive": 0.0 if run.judge_decisive is None else float(run.judge_decisive[i]),
        }
    assert run.score is not None and run.oriented is not None
    return {
        "score": _floats(run.score[:, :, i]),  # type: ignore[dict-item]  # JSON numbers
        "oriented": _floats(run.oriented[:, :, i]),  # type: ignore[dict-item]  # JSON numbers
    }


def _head(run: MetaEvalRun) -> _Head:
    return _Head(
        kind=run.data.kind,
        source=run.data.source,
        data_format=run.data.format,
        swap=run.swap,
        repeats=run.repeats,
        label=run.label,
        recorded=run.recorded,
        graders=[
            _GraderHead(
                name=g.name,
                kind=g.kind,
                repeats=g.repeats,
                swapped=g.swapped,
                provider=g.provider,
                price=dict(g.price) if g.price is not None else None,
                score_range=g.score_range,
                judgements=g.judgements,
                failures=dict(g.failures),
                failure_examples=dict(g.failure_examples),
                usage=_Usage(
                    prompt_tokens=g.usage.prompt_tokens,
                    completion_tokens=g.usage.completion_tokens,
                    requests=g.usage.requests,
                ),
                judge_s=g.judge_s,
                wall_s=g.wall_s,
                not_applicable=g.not_applicable,
            )
            for g in run.graders
        ],
    )


def _item_lines(run: MetaEvalRun) -> Iterator[dict[str, JsonValue]]:
    items: tuple[PairItem | PointItem, ...] = run.data.items
    for i, item in enumerate(items):
        line: dict[str, JsonValue] = {"id": item.id, "line": item.line, "prompt": item.prompt}
        if isinstance(item, PairItem):
            line |= {"response_a": item.response_a, "response_b": item.response_b, "label": item.label}
        else:
            line |= {"response": item.response, "label": item.label}
        if item.reference is not None:
            line["reference"] = item.reference
        if item.extra:
            line["extra"] = dict(item.extra)
        line["judged"] = {g.name: _judged(g, i) for g in run.graders}
        yield line


def write_judgements(path: str | Path, run: MetaEvalRun) -> None:
    """Write every judgement of ``run`` (see the module docstring); the file is replaced."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    partial = p.with_name(p.name + ".partial")
    with partial.open("w", encoding="utf-8") as f:
        f.write(json.dumps({HEADER_KEY: _head(run).model_dump(mode="json")}) + "\n")
        for line in _item_lines(run):
            f.write(encodable_json_text(json.dumps(line, ensure_ascii=False)) + "\n")  # lone surrogates
    partial.replace(p)


def _array(rows: list[list[float | None]] | None, shape: tuple[int, int], what: str) -> Floats:
    if rows is None or len(rows) != shape[0] or any(len(r) != shape[1] for r in rows):
        raise ValueError(f"{what}: expected {shape[0]} repeat(s) of {shape[1]} value(s)")
    return np.array([[math.nan if v is None else v for v in row] for row in rows], dtype=np.float64)


def _new_run(head: _GraderHead, n: int, sides: int) -> GraderRun:
    run = GraderRun(
        name=head.name,
        kind=head.kind,
        repeats=head.repeats,
        swapped=head.swapped,
        failures=Counter(head.failures),
        failure_examples=dict(head.failure_examples),
        judgements=head.judgements,
        usage=TokenUsage(head.usage.prompt_tokens, head.usage.completion_tokens, head.usage.requests),
        judge_s=head.judge_s,
        wall_s=head.wall_s,
        not_applicable=head.not_applicable,
        provider=head.provider,
        price=Price(
            prompt_per_1k=head.price.get("prompt_per_1k", 0.0),
            completion_per_1k=head.price.get("completion_per_1k", 0.0),
        )
        if head.price is not None
        else None,
        score_range=head.score_range,
    )
    orders = 2 if head.swapped else 1
    if head.kind == "pair":
        run.verdict = np.full((head.repeats, orders, n), NONE, dtype=np.int64)
        run.preference = np.full((head.repeats, orders, n), math.nan)
        run.judge_flip = np.full(n, math.nan)
        run.judge_first_wins = np.zeros(n)
        run.judge_decisive = np.zeros(n)
    else:
        run.score = np.full((head.repeats, sides, n), math.nan)
        run.oriented = np.full((head.repeats, sides, n), math.nan)
    return run


def _fill(run: GraderRun, judged: _Judged, i: int, sides: int) -> None:
    if run.kind == "pair":
        assert run.verdict is not None and run.preference is not None
        shape = run.verdict.shape[:2]
        rows = judged.verdict
        if rows is None or len(rows) != shape[0] or any(len(r) != shape[1] for r in rows):
            raise ValueError(f"verdict: expected {shape[0]} repeat(s) of {shape[1]} verdict(s)")
        bad = next((v for row in rows for v in row if v not in _CODES), None)
        if bad is not None:
            raise ValueError(f"verdict: {bad!r} is not 'A', 'B', 'tie' or null")
        run.verdict[:, :, i] = [[_CODES[v] for v in row] for row in rows]
        run.preference[:, :, i] = _array(judged.preference, shape, "preference")
        assert (
            run.judge_flip is not None and run.judge_first_wins is not None and run.judge_decisive is not None
        )
        run.judge_flip[i] = math.nan if judged.judge_flip is None else judged.judge_flip
        run.judge_first_wins[i] = judged.judge_first_wins
        run.judge_decisive[i] = judged.judge_decisive
        return
    assert run.score is not None and run.oriented is not None
    run.score[:, :, i] = _array(judged.score, (run.repeats, sides), "score")
    run.oriented[:, :, i] = _array(judged.oriented, (run.repeats, sides), "oriented")


def _item(parsed: _Line, kind: str) -> PairItem | PointItem:
    if kind == "pairwise":
        if parsed.response_a is None or parsed.response_b is None or parsed.label not in ("A", "B", "tie"):
            raise ValueError("a pair needs response_a, response_b and a label 'A', 'B' or 'tie'")
        label: PairLabel = parsed.label  # type: ignore[assignment]  # checked above
        return PairItem(
            parsed.id,
            parsed.line,
            parsed.prompt,
            parsed.response_a,
            parsed.response_b,
            label,
            parsed.reference,
            parsed.extra,
        )
    if parsed.response is None or not isinstance(parsed.label, float | int):
        raise ValueError("a scored response needs response and a numeric label")
    return PointItem(
        parsed.id,
        parsed.line,
        parsed.prompt,
        parsed.response,
        float(parsed.label),
        parsed.reference,
        parsed.extra,
    )


def _lines(path: Path) -> Iterator[tuple[int, dict[str, JsonValue]]]:
    with path.open(encoding="utf-8") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise LabelledDataError([f"{path}:{number}: not JSON ({exc.msg})"], path=path) from None
            if not isinstance(value, dict):
                raise LabelledDataError([f"{path}:{number}: expected a JSON object"], path=path)
            yield number, value


def _problem(path: Path, number: int, exc: ValidationError | ValueError) -> LabelledDataError:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return LabelledDataError([f"{path}:{number}: {where}: {first['msg']}"], path=path)
    return LabelledDataError([f"{path}:{number}: {exc}"], path=path)


def is_judgements_file(first: dict[str, JsonValue]) -> bool:
    """Whether a file's first record is a judgements header."""
    return HEADER_KEY in first


def read_judgements(path: str | Path, *, limit: int | None = None) -> MetaEvalRun:
    """Read a judgements file back as the run that wrote it (no judge is called).

    Raises:
        LabelledDataError: The file is not a judgements file, or a line does not fit it
            (the message names the line and field).
    """
    p = Path(path)
    lines = _lines(p)
    first = next(lines, None)
    if first is None or HEADER_KEY not in first[1]:
        raise LabelledDataError(
            [f"{p}:1: not a meta-eval judgements file (its first line has no {HEADER_KEY!r} header)"], path=p
        )
    try:
        head = _Head.model_validate(first[1][HEADER_KEY])
    except ValidationError as exc:
        raise _problem(p, 1, exc) from None
    parsed: list[tuple[int, _Line]] = []
    for number, value in lines:
        try:
            parsed.append((number, _Line.model_validate(value)))
        except ValidationError as exc:
            raise _problem(p, number, exc) from None
        if limit is not None and len(parsed) >= limit:
            break
    n = len(parsed)
    sides = 2 if head.kind == "pairwise" else 1
    runs = [_new_run(g, n, sides) for g in head.graders]
    items: list[PairItem | PointItem] = []
    for i, (number, line) in enumerate(parsed):
        try:
            items.append(_item(line, head.kind))
            for run in runs:
                judged = line.judged.get(run.name)
                if judged is None:
                    raise ValueError(f"judged: no entry for grader {run.name!r}")
                _fill(run, judged, i, sides)
        except ValueError as exc:
            raise _problem(p, number, exc) from None
    if not items:
        raise LabelledDataError([f"{p}: no items after the header"], path=p)
    for run in runs:
        if run.kind == "single" and head.kind == "pairwise":
            pair_verdicts_from_scores(run)
    data: PairwiseSet | PointwiseSet
    if head.kind == "pairwise":
        data = PairwiseSet(
            tuple(i for i in items if isinstance(i, PairItem)), source=head.source, format=head.data_format
        )
    else:
        data = PointwiseSet(
            tuple(i for i in items if isinstance(i, PointItem)), source=head.source, format=head.data_format
        )
    return MetaEvalRun(
        data=data,
        graders=tuple(runs),
        skipped={},
        repeats=head.repeats,
        swap=head.swap,
        label=head.label or p.stem,
        recorded=head.recorded or "judgements",
    )
