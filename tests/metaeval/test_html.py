"""The HTML report: charts per metric and grader, escaping, several reports with a comparison."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from openjudge.metaeval import collect, compare_runs, render_html, summarize, write_html
from openjudge.metaeval._items import PointItem, PointwiseSet
from openjudge.results import GraderResult
from tests.metaeval.test_metrics import CannedPairGrader, CountingScorer, pair_set, score

pytestmark = pytest.mark.anyio


def prefers_first(query: str, first: str, second: str) -> GraderResult:
    return score("A")


async def test_pairs_page_has_interval_charts_scatter_and_escaped_names(tmp_path: Path) -> None:
    data = pair_set(["A", "B", "tie", "A", "B", "A"])
    name = "<script>alert(1)</script>"
    report = summarize(
        await collect({name: CannedPairGrader(prefers_first)}, data, label="j&b.yaml"), bootstrap=50
    )
    write_html(tmp_path / "r.html", report)
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "openjudge meta-eval: j&amp;b.yaml" in html
    metrics = set(re.findall(r'class="card chart intervals" data-metric="([a-z_]+)"', html))
    assert {"pairwise_accuracy", "three_way_agreement", "flip_rate", "first_position_win_rate"} <= metrics
    assert "longer_wins_rate" in metrics
    assert html.count('class="card chart scatter"') == 1
    assert html.count('class="point"') == len(report.graders[0].length.points) == 6
    assert "Failures and cost" in html and not (tmp_path / "r.html.tmp").exists()


async def test_scored_responses_and_a_comparison_page() -> None:
    data = PointwiseSet(
        tuple(
            PointItem(id=str(k), line=k, prompt=f"q{k}", response="r" * k, label=float(1 + k % 5))
            for k in range(10)
        )
    )
    scripts = {f"q{k}": [float(1 + k % 5)] for k in range(10)}
    runs = [
        await collect({"rater": CountingScorer(scripts)}, data, label=label)
        for label in ("old.yaml", "new.yaml")
    ]
    reports = [summarize(run, bootstrap=50) for run in runs]
    html = render_html(reports, compare_runs(runs[0], runs[1], bootstrap=50))
    metrics = set(re.findall(r'data-metric="([a-z_]+)"', html))
    assert {"spearman", "kendall", "exact", "within_one", "comparison"} <= metrics
    assert "flip_rate" not in metrics and "Position bias" not in html  # no pairs
    assert html.count('<h2 class="config">') == 2 and "old.yaml vs new.yaml" in html
    with pytest.raises(ValueError, match="at least one report"):
        render_html([])
