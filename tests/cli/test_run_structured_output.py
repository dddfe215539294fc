"""``openjudge run`` against a server that refuses ``json_schema``: scores, and one line saying what was found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openjudge.cli import main
from openjudge.jobs._results import read_results
from openjudge.providers import forget_structured_output
from openjudge.testing.judge_server import DEFAULT_MODEL, JudgeServerProcess

CONFIG = """
providers:
  local:
    kind: openai
    model: {model}
    base_url: {base_url}
    max_retries: 3
graders:
  quality:
    type: llm
    provider: local
    params:
      template: "Question: {{question}} Answer: {{answer}} Score 1 (wrong) to 5 (right)."
      score_range: [1, 5]
data:
  path: data.jsonl
"""


def test_the_run_finds_json_object_and_says_so_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with JudgeServerProcess(refuse={"json_schema": 500}) as server:
        forget_structured_output(server.base_url)
        config = tmp_path / "job.yaml"
        config.write_text(CONFIG.format(model=DEFAULT_MODEL, base_url=server.base_url), encoding="utf-8")
        rows = [{"id": str(k), "question": f"q{k}", "answer": f"a{k} #oj:score={k + 3}"} for k in range(4)]
        (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        try:
            assert main(["run", str(config), "--no-progress", "--no-cache"]) == 0
        finally:
            forget_structured_output(server.base_url)
        stats = server.stats()
    scores = {}
    for record in read_results(tmp_path / "results.jsonl"):
        entry = record["results"]
        assert isinstance(entry, dict)
        result = entry["quality"]
        assert isinstance(result, dict)
        scores[record["id"]] = (result["type"], result["score"])
    # Asked for 3..6 on a 1-5 scale: the server keeps to the enum it was sent, so 6 is 5.
    assert scores == {"0": ("score", 3.0), "1": ("score", 4.0), "2": ("score", 5.0), "3": ("score", 5.0)}
    # The 4 samples are judged at once and none waits for another's probe: each in flight
    # before the mode is known may meet the refusal once (answered without generating).
    assert 1 <= stats.by_outcome["500"] <= 4 and stats.by_outcome["200"] == 4
    said = [line for line in capsys.readouterr().out.splitlines() if "structured output" in line]
    refused = (  # what the server answered, cut to 160 characters
        "json_schema: HTTP 500: 1 validation error: {'type': 'literal_error', 'loc': ('body', "
        "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_obje..."
    )
    assert said == [
        f"provider 'local' ({server.base_url} model {DEFAULT_MODEL!r}): structured output json_object "
        f"(found on first use; the server refused {refused})"
    ]
