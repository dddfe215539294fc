"""Recorded judgements: benchmark excerpts scored by our metrics and by the benchmarks' own rules.

The excerpts and how their expected figures were computed (by JudgeBench's and LLMBar's
own code, not ours) are described in ``data/README.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openjudge.cli import main
from openjudge.metaeval._items import PairwiseSet
from openjudge.metaeval._loaders import LabelledDataError
from openjudge.metaeval._metrics import summarize
from openjudge.metaeval._report import BenchmarkFigure, GraderReport
from openjudge.metaeval._rescore import load_recorded, merge_runs

DATA = Path(__file__).parent / "data"
O1_MINI = DATA / "judgebench" / "o1-mini-arena-hard.jsonl"
SKYWORK = DATA / "judgebench" / "skywork-reward-llama-3.1-8b.jsonl"
LLMBAR = DATA / "llmbar" / "Natural" / "evaluators"


def figures(g: GraderReport) -> dict[str, BenchmarkFigure]:
    return {f.key: f for f in g.benchmark}


def decisions(path: Path) -> list[tuple[str, str | None, str | None]]:
    """(label, first decision, second decision on the stored order) per pair, straight from the file."""
    swap = {"A>B": "B>A", "B>A": "A>B"}
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        pair = json.loads(line)
        first, second = (j["decision"] if j else None for j in pair["judgments"])
        out.append((pair["label"], first, swap.get(second, second) if second else None))
    return out


@pytest.mark.parametrize(
    ("path", "name", "accuracy", "correct", "inconsistent"),
    [
        (O1_MINI, "arena_hard:o1-mini-2024-09-12", 0.625, 10, 8),
        (SKYWORK, "reward_model:Skywork/Skywork-Reward-Llama-3.1-8B", 0.4375, 7, 0),
    ],
)
def test_judgebench_figures_are_those_of_its_own_rule(
    path: Path, name: str, accuracy: float, correct: int, inconsistent: int
) -> None:
    run = load_recorded(path)  # told from the file: JudgeBench's judgments
    assert run.recorded == "judgebench" and run.swap
    report = summarize(run, bootstrap=200)
    g = report.graders[0]
    assert g.name == name and len(run.data.items) == 16
    found = figures(g)
    assert found["judgebench_accuracy"].estimate.value == pytest.approx(accuracy)
    assert (found["judgebench_accuracy"].count, found["judgebench_accuracy"].total) == (correct, 16)
    assert found["judgebench_inconsistent"].count == inconsistent
    low, high = found["judgebench_accuracy"].estimate.low, found["judgebench_accuracy"].estimate.high
    assert low is not None and high is not None and low <= accuracy <= high
    # Our own metrics read the same decisions: accuracy in the stored order, flips across orders.
    rows = decisions(path)
    stored = sum(first == label for label, first, _ in rows) / 16
    assert g.agreement.pairwise_accuracy is not None and g.agreement.pairwise_accuracy.value == pytest.approx(
        stored
    )
    flips = sum(first != second for _, first, second in rows) / 16
    assert g.position.flip_rate is not None and g.position.flip_rate.value == pytest.approx(flips)
    assert g.cost.judgements == 32 and g.cost.failures == {}


def test_reward_model_scores_become_preferences() -> None:
    run = load_recorded(SKYWORK, format="judgebench")
    grader = run.graders[0]
    assert grader.preference is not None and grader.verdict is not None
    pair = json.loads(SKYWORK.read_text(encoding="utf-8").splitlines()[0])
    score_a, score_b = pair["judgments"][0]["judgment"]["scores"]
    import math

    assert grader.preference[0, 0, 0] == pytest.approx(1 / (1 + math.exp(score_b - score_a)))


@pytest.mark.parametrize(
    ("evaluator", "correct_average", "equal"),
    [
        ("GPT-4/Vanilla", 0.9375, 1.0),
        ("LLaMA2/Vanilla", 0.71875, 0.8125),
        ("ChatGPT/Rating", 0.65625, 0.5625),
    ],
)
def test_llmbar_figures_are_those_of_its_statistics(
    evaluator: str, correct_average: float, equal: float
) -> None:
    run = load_recorded(LLMBAR / evaluator / "result.json")  # a JSON array: LLMBar
    g = summarize(run, bootstrap=200).graders[0]
    assert g.name == evaluator
    found = figures(g)
    assert found["llmbar_correct_average"].estimate.value == pytest.approx(correct_average)
    assert found["llmbar_correct_average"].total == 32  # two orders of 16 items
    assert found["llmbar_equal"].estimate.value == pytest.approx(equal)
    # "equal" is one minus our flip rate when every verdict is present.
    assert g.position.flip_rate is not None and g.position.flip_rate.value == pytest.approx(1 - equal)


def test_llmbar_ids_match_the_dataset_file(tmp_path: Path) -> None:
    """Items of a result.json get the ids their dataset.json records get, so runs line up."""
    from openjudge.metaeval._loaders import load_labelled

    records = json.loads((LLMBAR / "GPT-4/Vanilla/result.json").read_text(encoding="utf-8"))
    dataset = tmp_path / "dataset.json"
    dataset.write_text(json.dumps([{k: v for k, v in r.items() if k != "results"} for r in records]))
    data = load_labelled(dataset, format="llmbar")
    run = load_recorded(LLMBAR / "GPT-4/Vanilla/result.json", format="llmbar")
    assert [i.id for i in data.items] == [i.id for i in run.data.items]


def test_several_recordings_side_by_side_and_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    merged = merge_runs([load_recorded(O1_MINI), load_recorded(SKYWORK)])
    assert [g.name for g in merged.graders] == [
        "arena_hard:o1-mini-2024-09-12",
        "reward_model:Skywork/Skywork-Reward-Llama-3.1-8B",
    ]
    out = tmp_path / "report.json"
    html = tmp_path / "report.html"
    code = main(
        [
            "meta-eval",
            "--recorded",
            str(O1_MINI),
            "--recorded",
            str(SKYWORK),
            "--json",
            str(out),
            "--report",
            str(html),
            "--bootstrap",
            "200",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "recorded judgements (judgebench), no judge called" in printed
    assert "JudgeBench accuracy (%)" in printed and "62.50" in printed and "43.75" in printed
    assert "tokens per 1k" not in printed  # a recording has no tokens, cost or time
    report = json.loads(out.read_text())["reports"][0]
    assert report["recorded"] == "judgebench"
    assert [f["key"] for f in report["graders"][0]["benchmark"]] == [
        "judgebench_accuracy",
        "judgebench_inconsistent",
    ]
    assert (
        "The benchmark&#x27;s own figures" in html.read_text()
        or "The benchmark's own figures" in html.read_text()
    )


def test_judgements_file_round_trip_rescores_identically(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "judgements.jsonl"
    assert (
        main(["meta-eval", "--recorded", str(O1_MINI), "--judgements", str(saved), "--bootstrap", "200"]) == 0
    )
    first = capsys.readouterr().out
    again = load_recorded(saved)  # told from its header
    assert again.recorded == "judgebench" and isinstance(again.data, PairwiseSet)
    assert main(["meta-eval", "--recorded", str(saved), "--bootstrap", "200"]) == 0
    second = capsys.readouterr().out
    assert first.split("judgements: ")[0] == second.replace(str(saved), str(O1_MINI))


def test_a_bad_record_is_named_by_file_line_and_field(tmp_path: Path) -> None:
    lines = O1_MINI.read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[2])
    broken["judgments"] = broken["judgments"][:1]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], lines[1], json.dumps(broken), *lines[3:]]) + "\n")
    with pytest.raises(
        LabelledDataError, match=r"bad\.jsonl:3: judgments: 1 judgment\(s\), but the record at line 1 has 2"
    ):
        load_recorded(bad)
    skipped = load_recorded(bad, skip_bad=True)
    assert len(skipped.data.items) == 15 and len(skipped.data.skipped) == 1


def test_a_missing_judgement_counts_against_the_judge_as_in_judgebench(tmp_path: Path) -> None:
    lines = O1_MINI.read_text(encoding="utf-8").splitlines()
    pairs = [json.loads(line) for line in lines]
    right = next(k for k, p in enumerate(pairs) if p["judgments"][0]["decision"] == p["label"])
    pairs[right]["judgments"][0] = None
    pairs[right]["judgments"][1]["decision"] = None
    path = tmp_path / "nulls.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    g = summarize(load_recorded(path, format="judgebench"), bootstrap=100).graders[0]
    assert g.cost.failures == {"no_judgement": 1, "no_verdict": 1}
    found = figures(g)
    # JudgeBench scores the pair 0 (not correct): one fewer correct pair than before, if it was correct.
    before = summarize(load_recorded(O1_MINI), bootstrap=100).graders[0]
    was = figures(before)["judgebench_accuracy"].count
    rows = decisions(O1_MINI)
    label, first, second = rows[right]
    score = (
        (first == label) - (first not in (label, "A=B")) + (second == label) - (second not in (label, "A=B"))
    )
    assert found["judgebench_accuracy"].count == was - (score > 0)
    assert found["judgebench_accuracy"].total == 16
    assert (
        g.agreement.pairwise_accuracy is not None and g.agreement.pairwise_accuracy.n == 15
    )  # ours leaves it out


def test_usage_errors_and_undetectable_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "judge.yaml"
    config.write_text("graders: {}\n")
    assert main(["meta-eval", str(config), "--recorded", str(O1_MINI)]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["meta-eval", "--recorded", str(O1_MINI), "--repeats", "3"]) == 2
    assert main(["meta-eval", "--recorded", str(O1_MINI), "--format", "pointwise"]) == 2
    assert "describes labelled data" in capsys.readouterr().err
    assert main(["meta-eval"]) == 2
    assert "--recorded FILE" in capsys.readouterr().err
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"question": "q"}\n')
    assert main(["meta-eval", "--recorded", str(odd)]) == 1
    assert "cannot tell what recorded this" in capsys.readouterr().err
    assert (
        main(
            ["meta-eval", "--recorded", str(O1_MINI), "--recorded", str(LLMBAR / "GPT-4/Vanilla/result.json")]
        )
        == 1
    )
    assert "does not hold the same items" in capsys.readouterr().err


@pytest.mark.anyio
async def test_a_live_run_on_benchmark_data_gets_the_benchmark_figures_too() -> None:
    from openjudge.graders.base_grader import BaseGrader
    from openjudge.metaeval._items import PairItem
    from openjudge.metaeval._runs import collect
    from openjudge.results import GraderResult, GraderScore, ScoreRange

    class FirstShown(BaseGrader):
        """Always prefers the response shown first: right in one order of every pair."""

        async def aevaluate(self, *, query: str, response_a: str, response_b: str) -> GraderResult:
            return GraderScore(
                name="first", score=1.0, metadata={"winner": "A"}, score_range=ScoreRange(low=0, high=1)
            )

    class Longer(BaseGrader):
        async def aevaluate(self, *, query: str, response: str) -> GraderResult:
            return GraderScore(name="longer", score=float(len(response)))

    items = tuple(
        PairItem(
            id=str(k),
            line=k + 1,
            prompt=f"q{k}",
            response_a="a" * (1 + k % 3),
            response_b="bb",
            label="A" if k % 2 == 0 else "B",
        )
        for k in range(12)
    )
    data = PairwiseSet(items, format="judgebench")
    run = await collect({"first": FirstShown(name="first"), "longer": Longer(name="longer")}, data)
    first, longer = summarize(run, bootstrap=100).graders
    # Position-biased: +1 and -1 on every pair, so JudgeBench counts none correct, all inconsistent.
    assert figures(first)["judgebench_accuracy"].count == 0
    assert figures(first)["judgebench_inconsistent"].count == 12
    # A single grader is order-blind: both orders are its one verdict (a tie scores 0).
    expected = sum(
        (len(i.response_a) > len(i.response_b) and i.label == "A")
        or (len(i.response_a) < 2 and i.label == "B")
        for i in items
    )
    assert figures(longer)["judgebench_accuracy"].count == expected
    assert figures(longer)["judgebench_inconsistent"].count == 0


@pytest.mark.anyio
async def test_your_judge_beside_a_published_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Judge the benchmark's pairs live, save the judgements, then read them beside a recording."""
    from openjudge.graders.base_grader import BaseGrader
    from openjudge.metaeval._judgements import write_judgements
    from openjudge.metaeval._loaders import load_labelled
    from openjudge.metaeval._runs import collect
    from openjudge.results import GraderResult, GraderScore, ScoreRange, TokenUsage

    class Shorter(BaseGrader):
        """Prefers the shorter answer, and reports some usage, as an LLM judge would."""

        async def aevaluate(self, *, query: str, response_a: str, response_b: str) -> GraderResult:
            winner = "A" if len(response_a) < len(response_b) else "B"
            usage = TokenUsage(prompt_tokens=100, completion_tokens=5, requests=1)
            return GraderScore(
                name="mine",
                score=1.0 if winner == "A" else 0.0,
                metadata={"winner": winner},
                score_range=ScoreRange(low=0, high=1),
                usage=usage,
            )

    data = load_labelled(O1_MINI, format="judgebench")  # the same pairs, ids from pair_id
    mine = tmp_path / "mine.jsonl"
    write_judgements(mine, await collect({"mine": Shorter(name="mine")}, data))
    assert main(["meta-eval", "--recorded", str(mine), "--recorded", str(O1_MINI), "--bootstrap", "100"]) == 0
    printed = capsys.readouterr().out
    header = next(line for line in printed.splitlines() if line.startswith("metric"))
    assert "mine (pair)" in header and "arena_hard:o1-mini-2024-09-12 (pair)" in header
    assert "JudgeBench accuracy (%)" in printed and "62.50" in printed  # the published judge's figure
    assert "tokens per 1k judgements" in printed  # your run's tokens are known and shown


def test_a_single_game_file_is_scored_on_its_one_order(tmp_path: Path) -> None:
    """JudgeBench's --single_game runs store one judgment: accuracy is that decision's (reverse_order=False)."""
    pairs = [json.loads(line) for line in O1_MINI.read_text(encoding="utf-8").splitlines()]
    for pair in pairs:
        pair["judgments"] = pair["judgments"][:1]
    path = tmp_path / "single.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    run = load_recorded(path)
    assert not run.swap
    g = summarize(run, bootstrap=100).graders[0]
    right = sum(p["judgments"][0]["decision"] == p["label"] for p in pairs)
    assert figures(g)["judgebench_accuracy"].count == right
    assert figures(g)["judgebench_inconsistent"].count == 0
    assert g.position.flip_rate is None  # one order: no position figure


def test_single_graders_on_pairs_say_nothing_of_orders() -> None:
    import numpy as np

    from openjudge.metaeval._console import render_report
    from openjudge.metaeval._items import PairItem
    from openjudge.metaeval._runs import GraderRun, MetaEvalRun, pair_verdicts_from_scores

    data = PairwiseSet((PairItem("1", 1, "q", "a", "bb", "A"), PairItem("2", 2, "q", "aa", "b", "B")))
    run = GraderRun(name="rm", kind="single", repeats=1, swapped=False)
    run.score = run.oriented = np.array([[[2.0, 1.0], [1.0, 2.0]]])
    pair_verdicts_from_scores(run)
    text = render_report(summarize(MetaEvalRun(data, (run,), {}, 1, True), bootstrap=50))
    assert "orders" not in text.splitlines()[1]
