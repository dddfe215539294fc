"""Datasets, configs and result readers shared by the distributed-grading tests and bench."""

from __future__ import annotations

import json
from pathlib import Path

from openjudge.jobs._results import read_results

JOB = """
providers:
  judge:
    kind: openai
    model: test-judge
    base_url: {base_url}
    api_key: sk-test
    max_retries: 0
    limits: {{max_concurrency: {limit}}}
graders:
  quality:
    type: llm
    provider: judge
    params: {{template: "Rate: {{answer}}", score_range: [1, 5]}}
  exact:
    type: string_match
    mapper: {{response: answer, reference: expected}}
aggregators:
  - {{type: weighted_mean, name: reward}}
runner: {{max_concurrency: 32}}
cache: {{enabled: false}}
"""


def judge_score(i: int) -> int:
    """The score the test judge gives sample ``i`` (through a ``#oj:score=`` directive)."""
    return 1 + (i * 7) % 5


def write_job(path: Path, *, base_url: str, limit: int) -> Path:
    path.write_text(JOB.format(base_url=base_url, limit=limit), encoding="utf-8")
    return path


def write_samples(path: Path, n: int, *, bad_lines: tuple[int, ...] = ()) -> Path:
    """``n`` samples ``s00000``...; every third one fails ``exact``; malformed lines after ``bad_lines``."""
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            answer = f"answer {i} #oj:score={judge_score(i)}"
            sample = {"id": f"s{i:05d}", "answer": answer, "expected": answer if i % 3 else "other"}
            f.write(json.dumps(sample) + "\n")
            if i in bad_lines:
                f.write("{not json\n")
    return path


Graded = tuple[str, float | None, float | None, str]


def graded(path: Path) -> dict[str, dict[str, Graded]]:
    """Id -> result name -> (type, score, normalized score, reason); aggregates as ("aggregate", value, ...)."""
    out: dict[str, dict[str, Graded]] = {}
    for record in read_results(path):
        results = record["results"]
        aggregates = record["aggregates"]
        assert isinstance(results, dict) and isinstance(aggregates, dict)
        row: dict[str, Graded] = {}
        for name, entry in results.items():
            assert isinstance(entry, dict)
            score, normalized = entry.get("score"), entry.get("normalized_score")
            assert score is None or isinstance(score, float)
            assert normalized is None or isinstance(normalized, float)
            row[name] = (
                str(entry["type"]),
                score,
                normalized,
                str(entry.get("reason", entry.get("message"))),
            )
        for name, value in aggregates.items():
            assert value is None or isinstance(value, float)
            row[name] = ("aggregate", value, None, "")
        out[str(record["id"])] = row
    return out


def ids_in(path: Path) -> list[str]:
    return [str(record["id"]) for record in read_results(path)]
