"""What a meta-evaluation reports: per grader, agreement, biases, consistency and cost.

Every rate and correlation is an :class:`Estimate`: the value on the data, its 95 %
percentile-bootstrap interval over labelled items, and ``n``, the items it is computed
over. A metric that does not apply (a position bias of a single grader, a correlation on
pairs) is ``None``. The models are frozen pydantic models, so ``report.model_dump_json()``
is the JSON output of ``openjudge meta-eval --json``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "Agreement",
    "BenchmarkFigure",
    "Consistency",
    "Cost",
    "DataSummary",
    "Estimate",
    "GraderReport",
    "LengthBias",
    "MetaEvalReport",
    "PositionBias",
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Estimate(_Model):
    """A statistic and its bootstrap 95 % interval.

    Attributes:
        value: On the data (``None`` if undefined, e.g. a correlation of constant scores).
        low: Lower bound of the interval (``None`` when too few resamples define it).
        high: Upper bound.
        n: Labelled items the statistic is computed over.
    """

    value: float | None
    low: float | None
    high: float | None
    n: int


class Agreement(_Model):
    """Agreement with the labels.

    On pairs (the verdict in the order stored, first repeat):

    Attributes:
        pairwise_accuracy: Over pairs labelled A or B: the share whose verdict names the
            labelled winner. A tie verdict counts as a miss (``tie_rate`` says how often).
        three_way_agreement: Over all pairs, only when some are labelled tie: the share
            whose verdict equals the label, a tie being a third class.
        tie_rate: The share of verdicts that are ties.
        confusion: Counts by label, then verdict (``A``, ``B``, ``tie``).
        spearman: On scored responses: Spearman's rho of score and label.
        kendall: Kendall's tau-b of score and label.
        exact: The share of scores equal to the label.
        within_one: The share of scores within 1 of the label.
    """

    pairwise_accuracy: Estimate | None = None
    three_way_agreement: Estimate | None = None
    tie_rate: Estimate | None = None
    confusion: dict[str, dict[str, int]] | None = None
    spearman: Estimate | None = None
    kendall: Estimate | None = None
    exact: Estimate | None = None
    within_one: Estimate | None = None


class PositionBias(_Model):
    """Position bias of a pair grader (pairs judged in both orders).

    Attributes:
        flip_rate: Over pairs with a verdict in both orders: the share whose verdict
            changes when the order is swapped (ties included: A then tie is a flip).
        first_position_win_rate: Over verdicts naming a winner, in both orders: the share
            won by the response shown first. 0.5 is unbiased: each pair is shown both ways.
        judge_flip_rate: For graders that judge both orders inside (pairwise_preference):
            how often their two inner verdicts disagreed, i.e. the bias they absorb.
        judge_first_position_win_rate: Their inner calls' first-position win rate.
    """

    flip_rate: Estimate | None = None
    first_position_win_rate: Estimate | None = None
    judge_flip_rate: Estimate | None = None
    judge_first_position_win_rate: Estimate | None = None


class LengthBias(_Model):
    """Length bias (lengths in characters).

    Attributes:
        longer_wins_rate: Pairs only: over pairs of different lengths labelled tie or with
            the shorter response labelled better, the share where the verdict names the
            longer response.
        length_score_spearman: Spearman's rho of length and score: for single graders,
            each response's length and normalised score; for pair graders, the length
            difference (first minus second) and P(first is better).
        points: Up to 400 of those (length, score) points, evenly spread over the data.
    """

    longer_wins_rate: Estimate | None = None
    length_score_spearman: Estimate | None = None
    points: list[tuple[float, float]] = []


class Consistency(_Model):
    """Self-consistency over repeated judgements.

    Attributes:
        repeats: Judgements per item (and order).
        verdict_change_rate: Over items with at least two verdicts (scores, on scored
            responses), in the stored order: the share whose verdict is not the same in
            every repeat. ``None`` with one repeat.
    """

    repeats: int
    verdict_change_rate: Estimate | None = None


class Cost(_Model):
    """Failures, tokens, money and time.

    A *judgement* is one grader result: one pair in one order for a pair grader (a
    pairwise_preference judgement is two judge calls), one response for a single grader.

    Attributes:
        judgements: Grader results.
        failures: Failed judgements per kind (the error kinds, and ``no_verdict`` for a
            result that cannot be read as a verdict).
        failure_rate: Failed judgements / judgements.
        failure_examples: The first message seen per kind.
        requests: Judge requests, retries and re-asks included.
        prompt_tokens: Prompt tokens of every judgement.
        completion_tokens: Completion tokens.
        cost: ``tokens / 1000 * price`` with the provider's ``price`` (``None`` without one).
        wall_s: Wall time of the grader's pass, at the config's concurrency.
        judge_s: Sum of the judgements' own latencies.
        tokens_per_1k: Tokens per 1,000 judgements.
        cost_per_1k: Cost per 1,000 judgements.
        wall_s_per_1k: Wall seconds per 1,000 judgements.
        not_applicable: Items the grader does not apply to (routing): neither judgements
            nor failures, and left out of its statistics.
    """

    judgements: int
    failures: dict[str, int]
    failure_rate: float | None
    failure_examples: dict[str, str]
    requests: int
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    wall_s: float
    judge_s: float
    tokens_per_1k: float | None
    cost_per_1k: float | None
    wall_s_per_1k: float | None
    not_applicable: int = 0


class BenchmarkFigure(_Model):
    """A figure the benchmark itself publishes, computed by its own rule (see :mod:`._headline`).

    Attributes:
        key: Its name here (``judgebench_accuracy``).
        benchmark: The benchmark (``JudgeBench``).
        name: What the benchmark calls it (``accuracy``).
        rule: How it is computed, in one line.
        estimate: The share (0 to 1; the benchmark prints it as a percentage) and its interval.
        count: Its numerator on the data (pairs correct; for an average over two orders,
            the verdicts correct).
        total: Its denominator on the data.
    """

    key: str
    benchmark: str
    name: str
    rule: str
    estimate: Estimate
    count: float
    total: float


class GraderReport(_Model):
    """Everything measured about one grader.

    Attributes:
        name: The grader's name in the config.
        kind: ``pair`` (reads both responses) or ``single`` (scores one response).
        provider: Its provider, for LLM graders built from a config.
        items: Labelled items judged.
        benchmark: The data's benchmark's own figures, where it publishes some.
        readings: Each figure in a sentence ("strong position bias: the first answer wins ...").
        notes: What the reader must know to use the figures (a rescaled score, a metric left out).
    """

    name: str
    kind: Literal["pair", "single"]
    provider: str | None
    items: int
    agreement: Agreement
    position: PositionBias
    length: LengthBias
    consistency: Consistency
    cost: Cost
    benchmark: list[BenchmarkFigure] = []
    readings: list[str] = []
    notes: list[str] = []


class DataSummary(_Model):
    """The labelled data.

    Attributes:
        source: The file.
        format: The format read.
        kind: ``pairwise`` or ``pointwise``.
        items: Items used.
        skipped: Records left out as unusable (with ``--skip-bad``).
        labels: Pairs per label (``A``, ``B``, ``tie``); for scored responses, the count per
            label value when there are at most 20 distinct values (else empty).
    """

    source: str
    format: str
    kind: Literal["pairwise", "pointwise"]
    items: int
    skipped: int
    labels: dict[str, int]


class MetaEvalReport(_Model):
    """A meta-evaluation of one judge config.

    Attributes:
        label: What was evaluated (the config file).
        data: The labelled data.
        graders: One report per grader.
        skipped_graders: Graders not evaluated, and why.
        swap: Whether pairs were judged in both orders.
        bootstrap: Bootstrap resamples behind each interval.
        seed: The resampling seed.
        confidence: The intervals' level.
        recorded: The format of the recorded judgements read (``None``: the graders were
            run), in which case tokens, cost and time are unknown.
        label_scale: Pointwise data: the labels' scale (low, high) that scores are compared on.
    """

    label: str
    data: DataSummary
    graders: list[GraderReport]
    skipped_graders: dict[str, str]
    swap: bool
    bootstrap: int
    seed: int
    confidence: float = 0.95
    recorded: str | None = None
    label_scale: tuple[float, float] | None = None
