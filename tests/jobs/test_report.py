from __future__ import annotations

import json
import re
from collections.abc import Mapping
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from openjudge.jobs._report import SampleSource, write_report
from openjudge.jobs._results import ResultsWriter, SampleOutcome
from openjudge.jobs._svg import nice_top
from openjudge.results import GraderError, GraderRank, GraderResult, GraderScore, ScoreRange, TokenUsage

_VOID = {"meta", "link", "br", "img", "hr", "input"}
_XSS = "<script>alert(1)</script>"


class _Page(HTMLParser):
    """Collects every tag, every table row's cell texts, and the bar titles of each chart."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.rows: list[tuple[dict[str, str], list[str]]] = []
        self.bars: dict[str, list[str]] = {}  # data-grader of the enclosing chart -> bar titles
        self._stack: list[tuple[str, dict[str, str]]] = []
        self._cell: list[str] | None = None
        self._text: list[str] = []

    def _chart(self) -> str | None:
        for _, attrs in reversed(self._stack):
            if "chart" in attrs.get("class", "").split():
                return attrs.get("data-grader") or attrs.get("data-aggregate", "latency")
        return None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attributes))
        if tag == "tr":
            self.rows.append((attributes, []))
        if tag in ("td", "th", "title"):
            self._text = []
        if tag not in _VOID:
            self._stack.append((tag, attributes))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        assert self._stack, f"unbalanced </{tag}>"
        opened, _ = self._stack.pop()
        assert opened == tag, f"<{opened}> closed by </{tag}>"
        if tag in ("td", "th"):
            self.rows[-1][1].append("".join(self._text))
        if tag == "title" and (chart := self._chart()) is not None:
            self.bars.setdefault(chart, []).append("".join(self._text))

    def handle_data(self, data: str) -> None:
        self._text.append(data)

    def with_class(self, *classes: str) -> list[dict[str, str]]:
        return [a for _, a in self.tags if set(classes) <= set(a.get("class", "").split())]

    def rows_with_class(self, cls: str) -> list[tuple[dict[str, str], list[str]]]:
        return [(a, cells) for a, cells in self.rows if a.get("class") == cls]


def _outcome(i: int) -> SampleOutcome:
    usage = TokenUsage(prompt_tokens=100, completion_tokens=5, requests=1)
    quality: GraderResult
    if i % 7 == 3:
        quality = GraderError(name="quality", kind="timeout", message=f"timed out {_XSS}", latency_s=30.0)
    else:
        quality = GraderScore(
            name="quality",
            score=float(1 + i % 5),
            score_range=ScoreRange(low=1, high=5),
            reason=_XSS if i == 5 else f"quality reason {i}",
            latency_s=0.1 * (1 + i % 10),
            usage=usage,
        )
    safety: GraderResult
    if i % 10 == 0:
        safety = GraderError(name="safety", kind="parse_error", message="no JSON in reply", latency_s=2.0)
    elif i == 1:
        safety = GraderError(name="safety", kind="refused", message="refused")
    else:
        safety = GraderScore(name="safety", score=1.0, reason="safe", latency_s=1.0, usage=usage)
    results: dict[str, GraderResult] = {
        "quality": quality,
        "length": GraderScore(name="length", score=i * 0.1),
        "pairwise": GraderRank(name="pairwise", rank=[1, 2]),
        "safety": safety,
    }
    return SampleOutcome(id=f"s{i:02d}", line=i + 1, results=results, aggregates={"overall": 0.5})


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, _Page]:
    folder = tmp_path_factory.mktemp("report")
    results = folder / "results.jsonl"
    with ResultsWriter(results) as writer:
        for i in range(30):
            writer.write(_outcome(i))
    report = folder / "report.html"
    write_report(results, report, title="Eval <v2> & co", lowest=3)
    html = report.read_text(encoding="utf-8")
    parser = _Page()
    parser.feed(html)
    parser.close()
    return html, parser


def test_one_histogram_per_grader(page: tuple[str, _Page]) -> None:
    _, parsed = page
    charts = parsed.with_class("chart", "histogram")
    assert [c.get("data-grader") or c["data-aggregate"] for c in charts] == [
        "quality",
        "length",
        "pairwise",
        "safety",
        "overall",  # the aggregate's histogram comes after the graders'
    ]
    # Every score is in exactly one bar: the bar titles "low – high: count" add up.
    totals = {g: sum(int(t.rsplit(": ", 1)[1]) for t in titles) for g, titles in parsed.bars.items()}
    assert totals == {"quality": 26, "length": 30, "safety": 26, "overall": 30, "latency": 59}
    assert "pairwise" not in parsed.bars  # ranks only: no bars


def test_quality_histogram_uses_normalized_scores_over_unit_range(page: tuple[str, _Page]) -> None:
    _, parsed = page
    titles = parsed.bars["quality"]
    # scores 1..5 normalise to 0, .25, .5, .75, 1: five non-empty bins of 20 over [0, 1].
    assert [t.split(" – ")[0] for t in titles] == ["0", "0.25", "0.5", "0.75", "0.95"]


def test_latency_chart(page: tuple[str, _Page]) -> None:
    _, parsed = page
    assert len(parsed.with_class("chart", "latency")) == 1


def test_error_rows(page: tuple[str, _Page]) -> None:
    _, parsed = page
    rows = parsed.rows_with_class("error-row")
    assert [(a["data-grader"], a["data-kind"], cells[:3]) for a, cells in rows] == [
        ("quality", "timeout", ["quality", "timeout", "4"]),
        ("safety", "parse_error", ["safety", "parse_error", "3"]),
        ("safety", "refused", ["safety", "refused", "1"]),
    ]
    assert rows[0][1][3] == f"timed out {_XSS}"


def test_error_rows_link_every_failing_sample_to_its_row(page: tuple[str, _Page]) -> None:
    html, parsed = page
    failed = parsed.rows_with_class("failed-row")
    by_kind: dict[tuple[str, str], list[str]] = {}
    for attrs, cells in failed:
        by_kind.setdefault((attrs["data-grader"], attrs["data-kind"]), []).append(cells[0])
        assert f'href="#{attrs["id"]}"' in html  # linked from the errors table
    assert {k: len(v) for k, v in by_kind.items()} == {
        ("quality", "timeout"): 4,
        ("safety", "parse_error"): 3,
        ("safety", "refused"): 1,
    }
    assert by_kind[("quality", "timeout")] == ["s03", "s10", "s17", "s24"]
    errors = parsed.rows_with_class("error-row")
    assert errors[0][1][4] == "s03, s10, s17, s24"  # the linked ids, in the row of their kind


def test_lowest_rows(page: tuple[str, _Page]) -> None:
    _, parsed = page
    by_grader: dict[str, list[list[str]]] = {}
    for attrs, cells in parsed.rows_with_class("lowest-row"):
        by_grader.setdefault(attrs["data-grader"], []).append(cells)
    assert by_grader == {
        # lowest normalised first; ties keep the earliest samples
        "quality": [
            ["s00", "0", "1", "quality reason 0", "-"],
            ["s05", "0", "1", _XSS, "-"],
            ["s15", "0", "1", "quality reason 15", "-"],
        ],
        "length": [
            ["s00", "0", "0", "", "-"],
            ["s01", "0.1", "0.1", "", "-"],
            ["s02", "0.2", "0.2", "", "-"],
        ],
        "safety": [
            ["s02", "1", "1", "safe", "-"],
            ["s03", "1", "1", "safe", "-"],
            ["s04", "1", "1", "safe", "-"],
        ],
    }  # no dataset was given: no inputs to show


def test_summary_table(page: tuple[str, _Page]) -> None:
    _, parsed = page
    table_rows = [cells for attrs, cells in parsed.rows if not attrs and cells and cells[0] == "quality"]
    assert table_rows[0][:4] == ["quality", "30", "26", "4"]


def test_everything_from_the_data_is_escaped(page: tuple[str, _Page]) -> None:
    html, _ = page
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<title>Eval &lt;v2&gt; &amp; co</title>" in html


def test_self_contained(page: tuple[str, _Page]) -> None:
    html, parsed = page
    tags = {tag for tag, _ in parsed.tags}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed"}
    assert not [
        a for _, a in parsed.tags if "src" in a or not a.get("href", "#").startswith("#")
    ]  # in-page links only
    assert "@import" not in html
    assert "url(" not in html
    # The only URL is the SVG namespace, which is a name and is never fetched.
    assert set(re.findall(r"https?://[^\s\"']+", html)) == {"http://www.w3.org/2000/svg"}


def test_report_of_an_empty_results_file(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.touch()
    report = tmp_path / "report.html"
    write_report(results, report, title="empty")
    parsed = _Page()
    parsed.feed(report.read_text(encoding="utf-8"))
    assert parsed.with_class("chart", "histogram") == []
    assert len(parsed.with_class("chart", "latency")) == 1
    assert parsed.rows_with_class("error-row") == []
    assert not (tmp_path / "report.html.tmp").exists()


def test_single_valued_unranged_grader_and_no_lowest(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    with ResultsWriter(results) as writer:
        for i in range(4):
            writer.write(SampleOutcome(id=str(i), line=i, results={"g": GraderScore(name="g", score=2.0)}))
    report = tmp_path / "report.html"
    write_report(results, report, title="t", lowest=0)
    parsed = _Page()
    parsed.feed(report.read_text(encoding="utf-8"))
    assert [t.rsplit(": ", 1)[1] for t in parsed.bars["g"] if not t.endswith(": 0")] == ["4"]
    assert parsed.rows_with_class("lowest-row") == []
    with pytest.raises(ValueError, match="lowest"):
        write_report(results, report, title="t", lowest=-1)


@pytest.mark.parametrize(
    ("peak", "top"), [(0, 1), (1, 1), (7, 8), (11, 12), (267, 300), (301, 400), (4100, 5000)]
)
def test_the_y_axis_is_fitted_to_the_tallest_bar(peak: int, top: int) -> None:
    assert nice_top(peak) == top


def test_the_lowest_samples_show_the_inputs_each_grader_saw(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    long_answer = "x" * 1000
    samples = [
        {"id": "a", "answer": _XSS, "expected": "b", "noise": "not an input"},
        {"id": "b", "answer": long_answer, "expected": "y"},
        {"id": "c", "answer": "same", "expected": "same"},
    ]
    data.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    results = tmp_path / "results.jsonl"
    with ResultsWriter(results) as writer:
        for i, sample in enumerate(samples):
            score = float(sample["answer"] == sample["expected"])
            writer.write(
                SampleOutcome(
                    id=str(sample["id"]),
                    line=i + 1,
                    results={"exact": GraderScore(name="exact", score=score)},
                )
            )
    report = tmp_path / "report.html"

    def inputs(sample: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"response": sample["answer"], "reference": sample["expected"]}

    write_report(results, report, title="t", lowest=2, samples=SampleSource(data, inputs={"exact": inputs}))
    html = report.read_text(encoding="utf-8")
    parsed = _Page()
    parsed.feed(html)
    shown = {cells[0]: cells[4] for _, cells in parsed.rows_with_class("lowest-row")}
    assert shown["a"] == json.dumps({"response": _XSS, "reference": "b"})  # what the grader saw, no more
    assert shown["b"].startswith('{"response": "xxx') and len(shown["b"]) == 300 and shown["b"].endswith("…")
    assert "<script" not in html


def test_response_failures_are_shown_apart_from_errors(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    unit = ScoreRange(low=0, high=1)
    failure = GraderScore(
        name="g",
        score=0.0,
        score_range=unit,
        reason="nests too deep",
        metadata={"blame": "response", "cause": "too_deep"},
    )
    with ResultsWriter(results) as writer:
        writer.write(SampleOutcome(id="0", line=0, results={"g": failure}))
        writer.write(
            SampleOutcome(id="1", line=1, results={"g": GraderScore(name="g", score=1.0, score_range=unit)})
        )
        writer.write(
            SampleOutcome(
                id="2", line=2, results={"g": GraderError(name="g", kind="timeout", message="slow")}
            )
        )
    report = tmp_path / "report.html"
    write_report(results, report, title="t")
    parsed = _Page()
    parsed.feed(report.read_text(encoding="utf-8"))
    assert [cells for _, cells in parsed.rows_with_class("failure-row")] == [
        ["g", "too_deep", "1", "nests too deep"]
    ]
    assert [cells[:4] for _, cells in parsed.rows_with_class("error-row")] == [["g", "timeout", "1", "slow"]]
