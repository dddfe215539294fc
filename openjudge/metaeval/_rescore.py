"""Re-score judgements already made: recordings, a meta-eval's judgements, a run's results.

:func:`load_recorded` reads any of them as a :class:`MetaEvalRun` (no judge is called), and
:func:`merge_runs` puts several over the same items side by side, so a judge of yours can
be read beside the published ones:

* ``judgebench``, ``llmbar``: a benchmark's stored judge outputs (:mod:`._recorded`);
* ``judgements``: the ``--judgements`` file of an earlier ``openjudge meta-eval``
  (:mod:`._judgements`), with every figure but cost and time as it was;
* ``results``: the results file of ``openjudge run`` over a labelled file, with that file
  (``data=``): items are matched by id, so use the same file and id field. A grader's
  ``not_applicable`` result leaves the item out of its statistics. On scored
  responses every grader is read as scoring one response; on pairs, as judging the pair
  in the stored order (a run does not swap it, so there is no position figure).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from openjudge.jobs._records import result_from_entry
from openjudge.jobs._results import ResultsFileError, read_header, read_outcomes
from openjudge.metaeval._items import LabelledSet, PairItem, PairwiseSet, PointItem, PointwiseSet
from openjudge.metaeval._judgements import HEADER_KEY, read_judgements
from openjudge.metaeval._loaders import RECORDED_FORMATS, LabelledDataError, RecordedFormat
from openjudge.metaeval._recorded import BENCHMARK_FORMATS, load_benchmark_recording
from openjudge.metaeval._runs import GraderRun, MetaEvalRun
from openjudge.metaeval._verdicts import NONE, read_pair, read_single
from openjudge.results import GraderScore, NotApplicable

__all__ = ["RECORDED_FORMATS", "RecordedFormat", "load_recorded", "merge_runs"]


def _first_record(path: Path) -> dict[str, object] | None:
    with path.open("rb") as f:
        head = f.read(1 << 20).lstrip()
    if head.startswith(b"["):
        return {"__array__": True}
    line = head.split(b"\n", 1)[0]
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _detect(path: Path) -> str:
    if not path.is_file():
        raise LabelledDataError([f"{path}: no such file"], path=path)
    first = _first_record(path)
    if first is None:
        raise LabelledDataError([f"{path}:1: not JSON Lines or a JSON array; pass --format"], path=path)
    if first.get("__array__"):
        return "llmbar"
    if HEADER_KEY in first:
        return "judgements"
    if "openjudge" in first or ("id" in first and isinstance(first.get("results"), dict)):
        return "results"  # a run's results file: its header, or (older files) a sample line
    if "judgments" in first:
        return "judgebench"
    raise LabelledDataError(
        [
            f"{path}:1: cannot tell what recorded this (fields {sorted(first)}); pass --format "
            f"({', '.join(f for f in RECORDED_FORMATS if f != 'auto')})"
        ],
        path=path,
    )


def _results_run(path: Path, data: LabelledSet, limit: int | None) -> MetaEvalRun:
    try:
        header = read_header(path)
        outcomes = {o.id: o for o in read_outcomes(path)}
    except ResultsFileError as exc:
        raise LabelledDataError([str(exc)], path=path) from None
    items: list[PairItem | PointItem] = [item for item in data.items if item.id in outcomes]
    if limit is not None:
        items = items[:limit]
    if not items:
        some = ", ".join(list(outcomes)[:3]) or "none"
        raise LabelledDataError(
            [
                f"{path}: none of its sample ids ({some}, ...) is an item id of {data.source}: re-score a run "
                "with the labelled file it graded, read with the same id field"
            ],
            path=path,
        )
    names = list(header.job.graders) if header is not None else []
    for outcome in outcomes.values():
        names += [name for name in outcome.results if name not in names]
    n = len(items)
    pairs = isinstance(data, PairwiseSet)
    runs = []
    for name in names:
        run = GraderRun(name=name, kind="pair" if pairs else "single", repeats=1, swapped=False)
        first = np.full((1, 1, n), math.nan)  # P(response_a better), or the raw score
        second = np.full((1, 1, n), math.nan)  # nothing, or the normalised score
        verdict = np.full((1, 1, n), NONE, dtype=np.int64)
        for i, item in enumerate(items):
            entry = outcomes[item.id].results.get(name)
            if entry is None:
                run.failures["no_result"] += 1
                run.failure_examples.setdefault("no_result", f"sample {item.id!r} has no result of {name!r}")
                continue
            result = result_from_entry(name, entry)
            if isinstance(result, NotApplicable):  # routed away: not this grader's item
                run.not_applicable += 1
                continue
            if pairs:
                pair = read_pair(result)
                run.note(result, pair.failure, pair.message)
                verdict[0, 0, i], first[0, 0, i] = pair.verdict, pair.first_preference
            else:
                single = read_single(result)
                run.note(result, single.failure, single.message)
                first[0, 0, i], second[0, 0, i] = single.score, single.oriented
                if run.score_range is None and isinstance(result, GraderScore):
                    run.score_range = result.score_range
        if pairs:
            run.verdict, run.preference = verdict, first
        else:
            run.score, run.oriented = first, second
        runs.append(run)
    left_out = len(data.items) - len(items)
    skipped = (*data.skipped, *([f"{left_out} labelled items have no line in {path}"] if left_out else []))
    subset: PairwiseSet | PointwiseSet
    if pairs:
        subset = PairwiseSet(
            tuple(i for i in items if isinstance(i, PairItem)), data.source, data.format, skipped
        )
    else:
        subset = PointwiseSet(
            tuple(i for i in items if isinstance(i, PointItem)), data.source, data.format, skipped
        )
    return MetaEvalRun(
        data=subset,
        graders=tuple(runs),
        skipped={},
        repeats=1,
        swap=False,
        label=path.name,
        recorded="results",
    )


def load_recorded(
    path: str | Path,
    *,
    format: RecordedFormat = "auto",
    data: LabelledSet | None = None,
    skip_bad: bool = False,
    limit: int | None = None,
) -> MetaEvalRun:
    """Read judgements already made as a run (see the module docstring); no judge is called.

    Args:
        path: The file.
        format: What wrote it, or ``"auto"`` to tell from its first record.
        data: The labelled items, for a ``results`` file (which holds no labels).
        skip_bad: Leave out unusable records of a benchmark file instead of failing.
        limit: Use at most this many items.

    Raises:
        LabelledDataError: The file cannot be used (the message names file, line and field),
            or a results file comes without ``data``.
    """
    p = Path(path)
    if format not in RECORDED_FORMATS:
        raise ValueError(f"format must be one of {', '.join(RECORDED_FORMATS)}, got {format!r}")
    kind = _detect(p) if format == "auto" else format
    if kind in BENCHMARK_FORMATS:
        return load_benchmark_recording(p, format=kind, skip_bad=skip_bad, limit=limit)
    if kind == "judgements":
        return read_judgements(p, limit=limit)
    if data is None:
        raise LabelledDataError(
            [
                f"{p}: an 'openjudge run' results file holds no labels: give the labelled file it graded (--data)"
            ],
            path=p,
        )
    return _results_run(p, data, limit)


def _reorder(run: GraderRun, index: np.ndarray) -> GraderRun:
    for name in ("verdict", "preference", "score", "oriented"):
        values = getattr(run, name)
        if values is not None:
            setattr(run, name, values[..., index])
    for name in ("judge_flip", "judge_first_wins", "judge_decisive"):
        values = getattr(run, name)
        if values is not None:
            setattr(run, name, values[index])
    return run


def merge_runs(runs: Sequence[MetaEvalRun]) -> MetaEvalRun:
    """Several runs' graders over the same items (matched by id) as one run, in the first's order.

    Raises:
        ValueError: The runs do not hold the same items, or two graders share a name.
    """
    if not runs:
        raise ValueError("merge_runs needs at least one run")
    first = runs[0]
    if len(runs) == 1:
        return first
    mine: tuple[PairItem | PointItem, ...] = first.data.items
    ids = [item.id for item in mine]
    graders: list[GraderRun] = list(first.graders)
    for other in runs[1:]:
        theirs: tuple[PairItem | PointItem, ...] = other.data.items
        position = {item.id: k for k, item in enumerate(theirs)}
        if type(other.data) is not type(first.data) or position.keys() != set(ids):
            missing, extra = len(set(ids) - position.keys()), len(position.keys() - set(ids))
            raise ValueError(
                f"{other.data.source} does not hold the same items as {first.data.source} ({missing} of the "
                f"first's items missing, {extra} others): judges are compared item by item"
            )
        index = np.array([position[i] for i in ids], dtype=np.int64)
        for g in other.graders:
            if any(existing.name == g.name for existing in graders):
                raise ValueError(f"two recordings have a grader named {g.name!r}")
            graders.append(_reorder(g, index))
    return MetaEvalRun(
        data=first.data,
        graders=tuple(graders),
        skipped={k: v for r in runs for k, v in r.skipped.items()},
        repeats=max(r.repeats for r in runs),
        swap=any(r.swap for r in runs),
        label=" + ".join(r.label for r in runs if r.label),
        recorded=first.recorded if all(r.recorded is not None for r in runs) else None,
    )
