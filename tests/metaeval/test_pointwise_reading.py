"""Scored responses read right: no pair wording, scales named or refused, figures in plain words.

Also: a run's results file re-scored against its labelled file, and a live run's
judgements written and read back, with no judge called the second time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openjudge.cli import main
from openjudge.graders.base_grader import BaseGrader
from openjudge.metaeval._console import render_report
from openjudge.metaeval._items import PairItem, PairwiseSet, PointItem, PointwiseSet
from openjudge.metaeval._judgements import read_judgements, write_judgements
from openjudge.metaeval._metrics import summarize
from openjudge.metaeval._report import Estimate, GraderReport
from openjudge.metaeval._rescore import load_recorded
from openjudge.metaeval._runs import collect
from openjudge.results import GraderResult, GraderScore, ScoreRange

pytestmark = pytest.mark.anyio

LABELS = [1, 2, 3, 4, 5] * 4


def points() -> PointwiseSet:
    return PointwiseSet(
        tuple(
            PointItem(id=f"r{k}", line=k + 1, prompt=f"q{k}", response="x" * (k + 1), label=float(label))
            for k, label in enumerate(LABELS)
        )
    )


class Rater(BaseGrader):
    """Scores each response by a fixed table keyed on its prompt."""

    def __init__(self, name: str, scores: dict[str, float], score_range: ScoreRange | None) -> None:
        super().__init__(name=name)
        self.scores = scores
        self.range = score_range

    async def aevaluate(self, *, query: str, response: str) -> GraderResult:
        return GraderScore(name=self.name, score=self.scores[query], score_range=self.range)


def graders() -> dict[str, BaseGrader]:
    unit = {f"q{k}": (label - 1) / 4 for k, label in enumerate(LABELS)}  # 0-1, agrees perfectly
    same = {f"q{k}": float(label) for k, label in enumerate(LABELS)}  # 1-5, agrees perfectly
    loss = {f"q{k}": -(5 - label) / 4 for k, label in enumerate(LABELS)}  # -1..0, no declared range
    return {
        "unit": Rater("unit", unit, ScoreRange(low=0, high=1)),
        "same": Rater("same", same, ScoreRange(low=1, high=5)),
        "penalty": Rater(
            "penalty", {k: -v for k, v in unit.items()}, ScoreRange(low=-1, high=0, higher_is_better=False)
        ),
        "loss": Rater("loss", loss, None),
    }


def by_name(graders: list[GraderReport]) -> dict[str, GraderReport]:
    return {g.name: g for g in graders}


async def test_scales_are_named_rescaled_or_refused_and_no_pair_wording() -> None:
    report = summarize(await collect(graders(), points()), bootstrap=100)
    g = by_name(report.graders)
    assert g["same"].notes == [] and g["same"].agreement.exact is not None
    assert g["same"].agreement.exact.value == 1.0
    # 0-1 against 1-5: rescaled, with both scales named; then it agrees exactly.
    (note,) = g["unit"].notes
    assert "scores on 0-1" in note and "labels are on 1-5" in note and "rescaled" in note
    assert g["unit"].agreement.exact is not None and g["unit"].agreement.exact.value == 1.0
    # Lower is better: reversed onto the labels' scale, and its correlation is positive.
    assert "lower is better" in g["penalty"].notes[0]
    assert g["penalty"].agreement.exact is not None and g["penalty"].agreement.exact.value == 1.0
    assert g["penalty"].agreement.spearman is not None and g[
        "penalty"
    ].agreement.spearman.value == pytest.approx(1.0)
    # No declared range, scores outside 1-5: exact and within-1 are refused, with the fix.
    (refusal,) = g["loss"].notes
    assert "declares no score range" in refusal and "1-5" in refusal and "score_range" in refusal
    assert g["loss"].agreement.exact is None and g["loss"].agreement.within_one is None
    assert g["loss"].agreement.spearman is not None and g["loss"].agreement.spearman.value == pytest.approx(
        1.0
    )
    text = render_report(report)
    assert "pairs" not in text.split("\n\n")[0]  # the header speaks of scored responses only
    assert "20 scored responses (pointwise; labels on 1-5)" in text
    assert f"note: {refusal}" in text
    assert any("strong agreement with the labels' ranking" in r for r in g["same"].readings)


async def test_a_given_label_scale_is_used() -> None:
    data = PointwiseSet(
        tuple(PointItem(f"r{k}", k, f"q{k}", "x", float(v)) for k, v in enumerate([2, 3, 4] * 4))
    )
    table = {f"q{k}": (v - 1) / 4 for k, v in enumerate([2, 3, 4] * 4)}
    run = await collect({"unit": Rater("unit", table, ScoreRange(low=0, high=1))}, data)
    observed = summarize(run, bootstrap=50).graders[0]
    # Put on the observed 2-4, the scores 0.25, 0.5, 0.75 become 2.5, 3, 3.5: only the 3s match.
    assert observed.agreement.exact is not None and observed.agreement.exact.value == pytest.approx(1 / 3)
    given = summarize(run, bootstrap=50, label_scale=(1, 5)).graders[0]
    assert given.agreement.exact is not None and given.agreement.exact.value == 1.0
    assert "labels are on 1-5" in given.notes[0]
    with pytest.raises(ValueError, match=r"label 4 is outside the labels' scale 1-3"):
        summarize(run, bootstrap=50, label_scale=(1, 3))


def test_position_bias_reads_in_plain_words() -> None:
    from openjudge.metaeval._readings import readings

    base = summarize_stub()
    biased = base.model_copy(
        update={
            "position": base.position.model_copy(
                update={"first_position_win_rate": Estimate(value=0.71, low=0.66, high=0.76, n=200)}
            )
        }
    )
    assert "strong position bias: the first answer wins 71 % [66, 76] of decided verdicts" in readings(biased)
    fair = base.model_copy(
        update={
            "position": base.position.model_copy(
                update={"first_position_win_rate": Estimate(value=0.52, low=0.47, high=0.57, n=200)}
            )
        }
    )
    assert readings(fair)[0].startswith("no clear position bias: the first answer wins 52 % [47, 57]")
    second = base.model_copy(
        update={
            "position": base.position.model_copy(
                update={"first_position_win_rate": Estimate(value=0.40, low=0.35, high=0.45, n=200)}
            )
        }
    )
    assert readings(second)[0].startswith("moderate position bias: the second answer wins 60 % [55, 65]")


def summarize_stub() -> GraderReport:
    data = PairwiseSet((PairItem("1", 1, "q", "a", "b", "A"),))
    from openjudge.metaeval._runs import GraderRun, MetaEvalRun

    run = GraderRun(name="g", kind="pair", repeats=1, swapped=False)
    import numpy as np

    run.verdict = np.full((1, 1, 1), -1, dtype=np.int64)
    run.preference = np.full((1, 1, 1), np.nan)
    report = summarize(MetaEvalRun(data, (run,), {}, 1, False), bootstrap=10)
    return report.graders[0]


def test_run_results_are_rescored_against_their_labelled_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text(
        "".join(
            json.dumps({"id": f"r{k}", "prompt": f"q{k}", "response": "x" * k, "label": v}) + "\n"
            for k, v in enumerate(LABELS)
        )
    )
    results = tmp_path / "results.jsonl"
    lines = []
    for k, v in enumerate(LABELS):
        entry = {
            "type": "score",
            "score": (v - 1) / 4,
            "normalized_score": (v - 1) / 4,
            "score_range": {"low": 0, "high": 1},
        }
        outcome: dict[str, Any] = {"id": f"r{k}", "line": k + 1, "results": {"rater": entry}}
        if k == 3:
            outcome["results"]["rater"] = {"type": "error", "kind": "timeout", "message": "judge timed out"}
        lines.append(json.dumps(outcome))
    results.write_text("\n".join(lines) + "\n")
    assert main(["meta-eval", "--recorded", str(results), "--bootstrap", "100"]) == 1
    assert "holds no labels" in capsys.readouterr().err
    out = tmp_path / "report.json"
    code = main(
        [
            "meta-eval",
            "--recorded",
            str(results),
            "--data",
            str(labelled),
            "--json",
            str(out),
            "--bootstrap",
            "100",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    g = json.loads(out.read_text())["reports"][0]["graders"][0]
    assert g["agreement"]["exact"]["value"] == 1.0 and g["agreement"]["exact"]["n"] == 19
    assert g["cost"]["failures"] == {"timeout": 1}
    assert "rescaled" in g["notes"][0]
    assert "recorded judgements (results)" in printed


async def test_live_judgements_are_written_and_read_back_without_a_judge(tmp_path: Path) -> None:
    run = await collect(graders(), points())
    path = tmp_path / "judgements.jsonl"
    write_judgements(path, run)
    again = read_judgements(path)
    first, second = summarize(run, bootstrap=100), summarize(again, bootstrap=100)
    assert [g.agreement for g in first.graders] == [g.agreement for g in second.graders]
    assert [g.notes for g in first.graders] == [g.notes for g in second.graders]
    assert load_recorded(path).graders[0].score_range == ScoreRange(low=0, high=1)
