"""``openjudge meta-eval`` end to end against the local OpenAI-compatible judge server.

The test server answers a pairwise verdict schema with its first allowed value, "A", and
a plain score with the last ``#oj:score=N`` directive in the prompt: so the pair judges
here always prefer the first response shown (a complete position bias the command must
expose), and the rater's scores are set per response by directives in the data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openjudge.cli import main
from openjudge.testing.judge_server import JudgeServerProcess

PAIR_CONFIG = """
providers:
  judge:
    kind: openai
    model: openjudge-test-judge
    base_url: ${JUDGE_URL}
    api_key: sk-test
    price: {prompt_per_1k: 0.01, completion_per_1k: 0.03}
graders:
  first_only:
    type: llm
    provider: judge
    params:
      template: "Which answer to {query} is better? A: {response_a} B: {response_b}. Score 1 for A, 0 for B. #oj:score=1"
      score_range: [0, 1]
  debiased:
    type: pairwise_preference
    provider: judge
runner: {max_concurrency: 8}
"""

RATER_CONFIG = """
providers:
  judge: {kind: openai, model: openjudge-test-judge, base_url: "${JUDGE_URL}", api_key: sk-test}
graders:
  rater:
    type: llm
    provider: judge
    params: {template: "%s", score_range: [1, 5]}
"""


@pytest.fixture
def env(judge_server: JudgeServerProcess, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("JUDGE_URL", judge_server.base_url)
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def write_pairs(path: Path, n: int) -> Path:
    rows = [
        {
            "id": f"p{k}",
            "prompt": f"question {k}",
            "response_a": f"answer {k}" + " more" * (k % 3),
            "response_b": f"reply {k}",
            "label": "AB"[k % 2] if k % 4 else "tie",
        }
        for k in range(n)
    ]
    return write(path, "".join(json.dumps(r) + "\n" for r in rows))


def write_scores(path: Path, n: int) -> Path:
    """Labels 1..5; the judge's score equals the label on two items of three, else label + 1 (or - 1)."""
    rows = []
    for k in range(n):
        label = 1 + k % 5
        said = label if k % 3 else (label + 1 if label < 5 else label - 1)
        rows.append({"prompt": f"q{k}", "response": f"answer {k} #oj:score={said}", "label": label})
    return write(path, "".join(json.dumps(r) + "\n" for r in rows))


def reports(path: Path) -> dict[str, Any]:
    payload = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(payload, dict)
    return payload


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g["name"]: g for g in report["graders"]}


def test_pairs_expose_a_first_position_judge(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write(env / "judge.yaml", PAIR_CONFIG)
    data = write_pairs(env / "pairs.jsonl", 12)
    code = main(
        ["meta-eval", str(config), "--data", str(data), "--json", str(env / "out.json"),
         "--report", str(env / "out.html"), "--bootstrap", "200", "--no-progress"]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "12 pairs (pairwise; labels A 3, B 6, tie 3)" in out
    assert "flip rate (order swapped)" in out and "first_only (pair)" in out
    (report,) = reports(env / "out.json")["reports"]
    graders = by_name(report)
    first = graders["first_only"]
    assert first["cost"]["judgements"] == 24 and first["cost"]["failures"] == {}
    assert first["position"]["flip_rate"]["value"] == 1.0
    assert first["position"]["first_position_win_rate"]["value"] == 1.0
    assert first["agreement"]["pairwise_accuracy"]["value"] == pytest.approx(3 / 9)  # "A" on every pair
    assert first["cost"]["cost"] == pytest.approx(
        first["cost"]["prompt_tokens"] / 1000 * 0.01 + first["cost"]["completion_tokens"] / 1000 * 0.03
    )
    debiased = graders["debiased"]
    assert debiased["cost"]["requests"] == 48  # two orders inside, two outside
    assert debiased["position"]["judge_flip_rate"]["value"] == 1.0
    assert debiased["agreement"]["tie_rate"]["value"] == 1.0  # every inner pair flipped: a tie
    html = (env / "out.html").read_text(encoding="utf-8")
    assert 'data-metric="flip_rate"' in html and 'data-grader="first_only"' in html


def test_scored_responses_and_a_comparison(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    honest = write(env / "honest.yaml", RATER_CONFIG % "Rate this answer to {query}: {response}")
    constant = write(
        env / "constant.yaml", RATER_CONFIG % "Rate this answer to {query}: {response} #oj:score=3"
    )
    data = write_scores(env / "scores.jsonl", 30)
    code = main(
        ["meta-eval", str(honest), "--data", str(data), "--compare", str(constant), "--repeats", "2",
         "--json", str(env / "out.json"), "--report", str(env / "out.html"), "--bootstrap", "300", "--no-progress"]
    )  # fmt: skip
    assert code == 0
    payload = reports(env / "out.json")
    honest_report, constant_report = payload["reports"]
    rater = by_name(honest_report)["rater"]
    assert rater["cost"]["judgements"] == 60  # 30 responses, 2 repeats
    assert rater["agreement"]["exact"]["value"] == pytest.approx(20 / 30)
    assert rater["agreement"]["within_one"]["value"] == 1.0
    assert rater["consistency"]["verdict_change_rate"]["value"] == 0.0
    assert by_name(constant_report)["rater"]["agreement"]["exact"]["value"] == pytest.approx(6 / 30)
    (compared,) = payload["comparison"]["graders"]
    exact = next(d for d in compared["differences"] if d["metric"] == "exact")
    assert exact["difference"]["value"] == pytest.approx(6 / 30 - 20 / 30)
    assert exact["verdict"] == "candidate worse"
    out = capsys.readouterr().out
    assert "constant.yaml minus honest.yaml" in out and "candidate worse" in out
    html = (env / "out.html").read_text(encoding="utf-8")
    assert 'data-metric="comparison"' in html and "honest.yaml" in html


def test_bad_data_exits_1_naming_the_line(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write(env / "judge.yaml", PAIR_CONFIG)
    data = write(
        env / "bad.jsonl", '{"prompt": "q", "response_a": "a", "response_b": "b", "label": "maybe"}\n'
    )
    assert main(["meta-eval", str(config), "--data", str(data), "--no-progress", "--format", "pairwise"]) == 1
    assert f"{data}:1: label: expected 'A', 'B' or 'tie' (got 'maybe')" in capsys.readouterr().err


def test_usage_and_config_errors(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write(env / "judge.yaml", PAIR_CONFIG)
    data = write_pairs(env / "pairs.jsonl", 2)
    assert main(["meta-eval", str(config), "--data", str(data), "--repeats", "0"]) == 2
    assert "--repeats must be at least 1" in capsys.readouterr().err
    assert main(["meta-eval", str(config), "--data", str(data), "--grader", "nope", "--no-progress"]) == 1
    assert "no grader named 'nope' (graders: first_only, debiased)" in capsys.readouterr().err


def test_one_grader_and_one_order(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write(env / "judge.yaml", PAIR_CONFIG)
    data = write_pairs(env / "pairs.jsonl", 6)
    args = ["meta-eval", str(config), "--data", str(data), "--grader", "first_only", "--no-swap"]
    assert main([*args, "--json", str(env / "o.json"), "--no-progress", "--limit", "4"]) == 0
    (report,) = reports(env / "o.json")["reports"]
    (grader,) = report["graders"]
    assert grader["name"] == "first_only" and grader["cost"]["judgements"] == 4
    assert grader["position"]["flip_rate"] is None and report["swap"] is False
    assert "pairs judged in the stored order only" in capsys.readouterr().out
