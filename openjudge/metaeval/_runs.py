"""Run each grader over the labelled items and keep what the statistics need.

Each grader runs in its own :class:`~openjudge.runner.grading_runner.GradingRunner` pass
(the config's concurrency, timeout and deadline), so its wall time, tokens and failures
are its own. The samples of a pass are, for ``K`` repeats (repeat-major):

* a pair grader on pairs: every item as shown (``A, B``), then swapped (``B, A``);
* a single grader on pairs: every item's ``response_a``, then every ``response_b``;
* a single grader on scored responses: every item.

Results are streamed (:meth:`~openjudge.runner.grading_runner.GradingRunner.astream`) and
reduced to arrays as they arrive (verdicts, preferences, scores), so memory is a few
numbers per judgement, not the judges' replies.

A grader routed away from an item (its ``when`` does not hold for the item's fields) gives
no judgement there: the item is left out of that grader's statistics, counted apart
(``not_applicable``), never as a failure.

Repeats must be independent judge calls: while a run with ``repeats > 1`` is going, the
chat models of the graders (their ``model`` attribute) neither deduplicate identical
calls in flight nor read the judge cache; both are restored afterwards.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
from pydantic import JsonValue

from openjudge.graders.base_grader import BaseGrader
from openjudge.jobs._summary import Price
from openjudge.metaeval._items import LabelledSet, PairwiseSet
from openjudge.metaeval._stats import Floats, Ints
from openjudge.metaeval._verdicts import NONE, TIE, A, B, GraderKind, grader_kind, read_pair, read_single
from openjudge.models.chat_client import ChatClient
from openjudge.results import GraderResult, GraderScore, NotApplicable, RowResult, ScoreRange, TokenUsage
from openjudge.runner._grader_config import GraderConfig
from openjudge.runner._mapper import Mapper
from openjudge.runner.grading_runner import GradingRunner

__all__ = ["GraderRun", "MetaEvalRun", "collect", "pair_verdicts_from_scores"]

_SWAP = np.array([B, A, TIE, NONE])  # verdict code -> the same verdict with the positions exchanged


@dataclass(slots=True)
class GraderRun:
    """One grader's judgements of the labelled items, as arrays over ``n`` items.

    Attributes:
        name: The grader's result name.
        kind: ``"pair"`` or ``"single"``.
        repeats: Judgements per item and view.
        swapped: Pair graders only: whether each pair was also judged in the swapped order.
        verdict: Pairs only, ``(repeats, orders, n)``: A = ``response_a`` better, B, TIE or
            NONE, mapped back to the stored order; orders are as shown and (if ``swapped``)
            swapped. A single grader's verdict compares its two scores (one order).
        preference: Like ``verdict``: P(``response_a`` better) in [0, 1], NaN without one.
        score: Single graders, ``(repeats, sides, n)``: raw score per response (sides are
            ``response_a``, ``response_b`` on pairs; one side on scored responses).
        oriented: Like ``score``, normalised (1 best) where the grader declares a range.
        judge_flip: Pair graders that judge both orders inside: whether their two inner
            verdicts disagreed, per item (first repeat, stored order); NaN if not reported.
        judge_first_wins: Inner calls won by the response shown first, per item.
        judge_decisive: Inner calls that named a winner, per item.
        failures: Failed judgements per kind (``no_verdict``: a result that cannot be read).
        failure_examples: The first message per failure kind.
        judgements: Results received (not-applicable ones excluded).
        usage: Tokens and requests of every judgement, failed ones included.
        judge_s: Sum of the judgements' own latencies.
        wall_s: Wall time of this grader's pass.
        provider: The provider the grader uses (when built from a config).
        price: Its price per 1,000 tokens, if known.
        score_range: Single graders: the score range their results declare (the first seen).
        not_applicable: Results that say the grader does not apply to the item (routing): no
            judgement, no failure; the item is left out of the grader's statistics.
    """

    name: str
    kind: GraderKind
    repeats: int
    swapped: bool
    verdict: Ints | None = None
    preference: Floats | None = None
    score: Floats | None = None
    oriented: Floats | None = None
    judge_flip: Floats | None = None
    judge_first_wins: Floats | None = None
    judge_decisive: Floats | None = None
    failures: Counter[str] = field(default_factory=Counter)
    failure_examples: dict[str, str] = field(default_factory=dict)
    judgements: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    judge_s: float = 0.0
    wall_s: float = 0.0
    provider: str | None = None
    price: Price | None = None
    score_range: ScoreRange | None = None
    not_applicable: int = 0

    def note(self, result: GraderResult, failure: str | None, message: str) -> None:
        """Count one judgement: its usage and latency, and its failure if it has one."""
        self.judgements += 1
        if result.usage is not None:
            self.usage = self.usage + result.usage
        if result.latency_s is not None:
            self.judge_s += result.latency_s
        if failure is not None:
            self.failures[failure] += 1
            self.failure_examples.setdefault(failure, message)


@dataclass(frozen=True, slots=True)
class MetaEvalRun:
    """Every grader's judgements of one labelled set.

    Attributes:
        data: The labelled items.
        graders: One run per grader evaluated, in config order.
        skipped: Graders left out, with the reason (e.g. a pair grader on scored responses).
        repeats: Judgements per item and view.
        swap: Whether pair graders also judged each pair in the swapped order.
        label: A name for this run (the config file, in comparisons).
        recorded: The format of the recorded judgements it was read from (``None``: the
            graders were run), so tokens, cost and time are not known.
    """

    data: LabelledSet
    graders: tuple[GraderRun, ...]
    skipped: Mapping[str, str]
    repeats: int
    swap: bool
    label: str = ""
    recorded: str | None = None


def _pair_samples(data: PairwiseSet, orders: int, repeats: int) -> list[dict[str, JsonValue]]:
    return [
        item.pair_sample(swapped=order == 1)
        for _ in range(repeats)
        for order in range(orders)
        for item in data.items
    ]


def _single_samples(data: LabelledSet, repeats: int) -> list[dict[str, JsonValue]]:
    if isinstance(data, PairwiseSet):
        return [
            item.single_sample(side) for _ in range(repeats) for side in ("A", "B") for item in data.items
        ]
    return [item.single_sample() for _ in range(repeats) for item in data.items]


_Add = Callable[[int, GraderResult], None]


def _applicable(run: GraderRun, add: _Add) -> Callable[[int, RowResult], None]:
    """``add``, for the results that are judgements; a not-applicable one is only counted."""

    def add_row(index: int, result: RowResult) -> None:
        if isinstance(result, NotApplicable):
            run.not_applicable += 1
        else:
            add(index, result)

    return add_row


def _pair_reader(run: GraderRun, n: int, orders: int) -> tuple[_Add, Callable[[], None]]:
    """Fill a pair grader's arrays one result at a time (by sample index)."""
    shape = (run.repeats, orders, n)
    verdict = run.verdict = np.full(shape, NONE, dtype=np.int64)
    preference = run.preference = np.full(shape, math.nan)
    judge_flip = run.judge_flip = np.full(n, math.nan)
    first_wins = run.judge_first_wins = np.zeros(n)
    decisive = run.judge_decisive = np.zeros(n)

    def add(index: int, result: GraderResult) -> None:
        reading = read_pair(result)
        run.note(result, reading.failure, reading.message)
        if reading.verdict == NONE:
            return
        r, rest = divmod(index, orders * n)
        order, i = divmod(rest, n)
        if order == 1:  # shown as (B, A): the judge's "A" is response_b
            verdict[r, order, i] = _SWAP[reading.verdict]
            preference[r, order, i] = 1.0 - reading.first_preference
        else:
            verdict[r, order, i] = reading.verdict
            preference[r, order, i] = reading.first_preference
        if r == 0 and order == 0:
            judge_flip[i] = reading.judge_flip
            first_wins[i] = reading.judge_first_wins
            decisive[i] = reading.judge_decisive

    return add, lambda: None


def _single_reader(run: GraderRun, n: int, sides: int) -> tuple[_Add, Callable[[], None]]:
    """Fill a single grader's arrays one result at a time; on pairs, derive verdicts at the end."""
    shape = (run.repeats, sides, n)
    score = run.score = np.full(shape, math.nan)
    oriented = run.oriented = np.full(shape, math.nan)

    def add(index: int, result: GraderResult) -> None:
        reading = read_single(result)
        run.note(result, reading.failure, reading.message)
        r, rest = divmod(index, sides * n)
        side, i = divmod(rest, n)
        score[r, side, i] = reading.score
        oriented[r, side, i] = reading.oriented
        if run.score_range is None and isinstance(result, GraderScore):
            run.score_range = result.score_range

    def finish() -> None:
        if sides == 2:
            pair_verdicts_from_scores(run)

    return add, finish


def pair_verdicts_from_scores(run: GraderRun) -> None:
    """Set a single grader's verdicts on pairs from its two scores: the higher normalised one wins."""
    assert run.oriented is not None
    first, second = run.oriented[:, 0, :], run.oriented[:, 1, :]
    both = ~(np.isnan(first) | np.isnan(second))
    codes = np.where(np.abs(first - second) <= 1e-9, TIE, np.where(first > second, A, B))
    run.verdict = np.where(both, codes, NONE)[:, None, :]
    preference = np.select([codes == A, codes == B], [1.0, 0.0], 0.5)
    run.preference = np.where(both, preference, math.nan)[:, None, :]


@contextlib.contextmanager
def _independent_calls(configs: Iterator[GraderConfig]) -> Iterator[None]:
    """Switch off in-flight deduplication and the judge cache of the graders' chat models."""
    models = {id(m): m for c in configs if isinstance(m := getattr(c.grader, "model", None), ChatClient)}
    saved = {key: (m.dedupe, m.cache) for key, m in models.items()}
    for m in models.values():
        m.dedupe = False
        m.cache = None
    try:
        yield
    finally:
        for key, m in models.items():
            m.dedupe, m.cache = saved[key]


async def collect(
    graders: GradingRunner | Mapping[str, GraderConfig | BaseGrader | tuple[BaseGrader, Mapper | None]],
    data: LabelledSet,
    *,
    repeats: int = 1,
    swap: bool = True,
    kinds: Mapping[str, GraderKind] | None = None,
    providers: Mapping[str, str] | None = None,
    prices: Mapping[str, Price] | None = None,
    show_progress: bool = False,
    label: str = "",
) -> MetaEvalRun:
    """Judge every labelled item with every grader.

    Args:
        graders: A runner (its graders, concurrency, timeout and deadline are used) or
            graders by result name (run with the runner's defaults).
        data: The labelled items (:func:`~openjudge.metaeval.load_labelled`).
        repeats: Judgements per item and view, for self-consistency.
        swap: Also judge each pair in the swapped order (pair graders), for position bias.
        kinds: ``"pair"`` or ``"single"`` per grader name, where it cannot be told
            (function mappers) or should be overridden.
        providers: Provider name per grader, for the report.
        prices: Price per 1,000 tokens per grader, for the cost figures.
        show_progress: Draw a progress line per grader on stderr.
        label: A name for this run.

    Raises:
        ValueError: ``repeats`` below 1, or a grader whose kind cannot be told.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    runner = graders if isinstance(graders, GradingRunner) else GradingRunner(graders, show_progress=False)
    configs = runner.grader_configs
    given = dict(kinds or {})
    unknown = sorted(set(given) - set(configs))
    if unknown:
        raise ValueError(f"kinds names no grader {unknown[0]!r} (graders: {', '.join(configs)})")
    wrong = sorted(name for name, kind in given.items() if kind not in ("pair", "single"))
    if wrong:
        raise ValueError(f"kinds[{wrong[0]!r}] must be 'pair' or 'single', got {given[wrong[0]]!r}")
    # Every kind is settled before any judge is called, so a bad one costs nothing.
    resolved = {name: given.get(name) or grader_kind(name, config) for name, config in configs.items()}
    n = len(data.items)
    runs: list[GraderRun] = []
    skipped: dict[str, str] = {}
    with _independent_calls(iter(configs.values())) if repeats > 1 else contextlib.nullcontext():
        for name, config in configs.items():
            kind = resolved[name]
            orders = 2 if kind == "pair" and swap else 1
            if kind == "single":
                samples = _single_samples(data, repeats)
            elif isinstance(data, PairwiseSet):
                samples = _pair_samples(data, orders, repeats)
            else:
                skipped[name] = "judges pairs, and the labelled data are scored responses"
                continue
            one_grader = runner.replace(
                grader_configs={name: config},
                aggregators=None,
                show_progress=show_progress,
                unrouted="not_applicable",  # an item another grader is routed to is not this one's
            )
            run = GraderRun(
                name=name,
                kind=kind,
                repeats=repeats,
                swapped=orders == 2,
                provider=(providers or {}).get(name),
                price=(prices or {}).get(name),
            )
            sides = 2 if isinstance(data, PairwiseSet) else 1
            add, finish = _pair_reader(run, n, orders) if kind == "pair" else _single_reader(run, n, sides)
            add_row = _applicable(run, add)
            started = time.monotonic()
            async with one_grader.astream(samples) as stream:  # results are read as they come
                async for done in stream:
                    add_row(done.index, done.results[name])
            run.wall_s = time.monotonic() - started
            finish()
            runs.append(run)
    return MetaEvalRun(
        data=data, graders=tuple(runs), skipped=skipped, repeats=repeats, swap=swap, label=label
    )
