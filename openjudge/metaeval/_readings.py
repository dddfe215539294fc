"""Each figure of a grader's report in one plain sentence, with its interval.

The sentence says what the number means for someone choosing a judge ("strong position
bias: the first answer wins 71 % [66, 76] of decided verdicts"). A strength is only named
when the interval excludes the neutral value: otherwise the reading says there is no
clear effect, however large the value looks on few items. Thresholds (distance from
neutral): rates 0.05 slight, 0.15 strong, between them moderate; correlations 0.1 weak,
0.4 moderate, 0.7 strong.
"""

from __future__ import annotations

from openjudge.metaeval._report import Estimate, GraderReport

__all__ = ["percent", "readings"]


def percent(estimate: Estimate, *, digits: int = 0) -> str:
    """``71 % [66, 76]`` (``[-]`` without an interval)."""
    assert estimate.value is not None
    value = f"{estimate.value * 100:.{digits}f} %"
    if estimate.low is None or estimate.high is None:
        return f"{value} [-]"
    return f"{value} [{estimate.low * 100:.{digits}f}, {estimate.high * 100:.{digits}f}]"


def _rho(estimate: Estimate) -> str:
    assert estimate.value is not None
    if estimate.low is None or estimate.high is None:
        return f"{estimate.value:.2f} [-]"
    return f"{estimate.value:.2f} [{estimate.low:.2f}, {estimate.high:.2f}]"


def _known(estimate: Estimate | None) -> Estimate | None:
    return estimate if estimate is not None and estimate.value is not None else None


def _excludes(estimate: Estimate, neutral: float) -> bool:
    return (
        estimate.low is not None
        and estimate.high is not None
        and (estimate.low > neutral or estimate.high < neutral)
    )


def _rate_strength(estimate: Estimate, neutral: float) -> str | None:
    """``strong``/``moderate``/``slight``, or ``None`` when the interval holds ``neutral``."""
    if not _excludes(estimate, neutral):
        return None
    assert estimate.value is not None
    gap = abs(estimate.value - neutral)
    return "strong" if gap >= 0.15 else "moderate" if gap >= 0.05 else "slight"


def _correlation_strength(estimate: Estimate) -> str | None:
    if not _excludes(estimate, 0.0):
        return None
    assert estimate.value is not None
    size = abs(estimate.value)
    return "strong" if size >= 0.7 else "moderate" if size >= 0.4 else "weak" if size >= 0.1 else "slight"


def _accuracy(g: GraderReport) -> list[str]:
    accuracy = _known(g.agreement.pairwise_accuracy)
    if accuracy is None:
        return []
    assert accuracy.value is not None
    if not _excludes(accuracy, 0.5):
        verdict = "no better than a coin toss"
    elif accuracy.value > 0.5:
        verdict = "better than a coin toss"
    else:
        verdict = "worse than a coin toss"
    text = f"{verdict}: picks the labelled better answer in {percent(accuracy)} of pairs"
    ties = _known(g.agreement.tie_rate)
    if ties is not None and ties.value:
        text += f", and calls {percent(ties)} of them a tie (counted as misses)"
    return [text]


def _position(g: GraderReport) -> list[str]:
    out = []
    first = _known(g.position.first_position_win_rate)
    flips = _known(g.position.flip_rate)
    if first is not None:
        assert first.value is not None
        strength = _rate_strength(first, 0.5)
        favoured = "first" if first.value > 0.5 else "second"
        head = f"{strength} position bias" if strength else "no clear position bias"
        text = f"{head}: the {favoured if strength else 'first'} answer wins "
        shown = first if favoured == "first" or not strength else _complement(first)
        text += f"{percent(shown)} of decided verdicts"
        if flips is not None:
            text += f"; the verdict changes when the order is swapped on {percent(flips)} of pairs"
        out.append(text)
    elif flips is not None:
        out.append(f"the verdict changes when the order is swapped on {percent(flips)} of pairs")
    inner = _known(g.position.judge_flip_rate)
    if inner is not None:
        out.append(
            f"inside the grader, the judge's two orders disagreed on {percent(inner)} of pairs "
            "(the grader turns those into ties)"
        )
    return out


def _complement(estimate: Estimate) -> Estimate:
    assert estimate.value is not None
    low = None if estimate.high is None else 1.0 - estimate.high
    high = None if estimate.low is None else 1.0 - estimate.low
    return Estimate(value=1.0 - estimate.value, low=low, high=high, n=estimate.n)


def _length(g: GraderReport) -> list[str]:
    out = []
    longer = _known(g.length.longer_wins_rate)
    if longer is not None:
        head = "strong length bias" if _excludes(longer, 0.5) and (longer.value or 0) > 0.5 else "length"
        out.append(f"{head}: where the longer answer is not the better one, it still wins {percent(longer)}")
    rho = _known(g.length.length_score_spearman)
    if rho is not None:
        strength = _correlation_strength(rho)
        assert rho.value is not None
        if strength is None:
            out.append(f"no clear link between length and score (Spearman {_rho(rho)})")
        else:
            way = "higher" if rho.value > 0 else "lower"
            out.append(f"{strength} length preference: longer answers score {way} (Spearman {_rho(rho)})")
    return out


def _scores(g: GraderReport) -> list[str]:
    out = []
    rho = _known(g.agreement.spearman)
    if rho is not None:
        strength = _correlation_strength(rho)
        assert rho.value is not None
        if strength is None:
            out.append(f"no clear agreement with the labels' ranking (Spearman {_rho(rho)})")
        else:
            way = "agreement with" if rho.value > 0 else "disagreement with"
            out.append(f"{strength} {way} the labels' ranking (Spearman {_rho(rho)})")
    exact, within = _known(g.agreement.exact), _known(g.agreement.within_one)
    if exact is not None and within is not None:
        out.append(
            f"the score equals the label on {percent(exact)} of responses; within 1 on {percent(within)}"
        )
    return out


def _consistency(g: GraderReport) -> list[str]:
    change = _known(g.consistency.verdict_change_rate)
    if change is None:
        return []
    return [f"asked {g.consistency.repeats} times, it changes its verdict on {percent(change)} of items"]


def _benchmark(g: GraderReport) -> list[str]:
    out = []
    for figure in g.benchmark:
        if figure.estimate.value is None:
            continue
        out.append(
            f"{figure.benchmark} {figure.name}, by its own rule: {percent(figure.estimate, digits=2)} "
            f"({figure.count:g}/{figure.total:g})"
        )
    return out


def _failures(g: GraderReport) -> list[str]:
    failed = sum(g.cost.failures.values())
    if not failed:
        return []
    kinds = ", ".join(f"{kind} {count}" for kind, count in g.cost.failures.items())
    return [
        f"{failed} of {g.cost.judgements} judgements gave no verdict ({kinds}); the figures leave them out"
    ]


def readings(g: GraderReport) -> list[str]:
    """The grader's figures as sentences, most important first."""
    return [
        *_benchmark(g),
        *_accuracy(g),
        *_scores(g),
        *_position(g),
        *_length(g),
        *_consistency(g),
        *_failures(g),
    ]
