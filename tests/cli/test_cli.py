"""The ``openjudge`` command line, through the same entry point the console script uses."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from openjudge.cli import main
from openjudge.jobs._results import read_results
from openjudge.testing.judge_server import JudgeServerProcess

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart" / "config.yaml"


def ids_in(path: Path) -> list[str]:
    return [str(r["id"]) for r in read_results(path)]


def results_by_id(path: Path, grader: str) -> dict[str, dict[str, Any]]:
    """Each sample's entry for one grader, as plain dicts."""
    out: dict[str, dict[str, Any]] = {}
    for record in read_results(path):
        results = record["results"]
        assert isinstance(results, dict)
        entry = results[grader]
        assert isinstance(entry, dict)
        out[str(record["id"])] = entry
    return out


def test_quickstart_runs_and_prints_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(QUICKSTART.parent, tmp_path / "quickstart")
    config = tmp_path / "quickstart" / "config.yaml"
    out_path = tmp_path / "quickstart" / "results.jsonl"  # beside the config, whatever the directory
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(config), "--report", "report.html", "--no-progress"]) == 0
    out = capsys.readouterr().out
    for grader in ("action_loop", "info_gain", "tool_sequence", "answer", "format", "reward"):
        assert grader in out
    assert "300 samples graded\n" in out and "already complete" not in out
    assert f"results: {out_path}; report: report.html" in out
    loops = results_by_id(out_path, "action_loop")
    assert len(loops) == 300
    looped = loops["qs-0000"]
    assert looped["type"] == "score" and looped["score"] == 0.5  # 4 actions, 3 identical lookups: 3/6 pairs
    assert "chart histogram" in (tmp_path / "report.html").read_text()

    # A rerun resumes, from another directory too: everything is already there.
    monkeypatch.chdir(tmp_path / "quickstart")
    assert main(["run", "config.yaml", "--no-progress"]) == 0
    assert (
        f"0 samples graded, 300 samples already complete in {Path('results.jsonl')}"
        in capsys.readouterr().out
    )
    assert len(ids_in(out_path)) == 300


def write_config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(body, encoding="utf-8")
    return path


RULE_JOB = """
graders:
  exact:
    type: string_match
    mapper: {response: answer, reference: expected}
data:
  path: data.jsonl
"""


def test_malformed_lines_and_missing_fields_are_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, RULE_JOB)
    (tmp_path / "data.jsonl").write_text(
        '{"id": "a", "answer": "4", "expected": "4"}\n'
        "{not json}\n"
        '{"id": "b", "answer": "5"}\n'
        "[1, 2]\n"
        '{"id": "c", "answer": "x", "expected": "y"}\n',
        encoding="utf-8",
    )
    out = tmp_path / "r.jsonl"
    assert main(["run", str(config), "--out", str(out), "--no-progress"]) == 0
    records = results_by_id(out, "exact")
    assert records["a"]["score"] == 1.0 and records["c"]["score"] == 0.0
    missing = records["b"]
    assert (
        missing["type"] == "error"
        and missing["kind"] == "invalid_input"
        and "'expected'" in missing["message"]
    )
    assert (
        records["invalid-line-2"]["kind"] == "invalid_input"
        and "line 2" in records["invalid-line-2"]["message"]
    )
    assert records["invalid-line-4"]["kind"] == "invalid_input"
    printed = capsys.readouterr().out
    assert "3 samples graded, 2 malformed records\n" in printed
    assert f"3 of 5 grader results in {out} are errors (60.0%)" in printed  # 1 missing field, 2 malformed

    # Fail fast instead, on request: exit code 1 naming the file and line.
    assert (
        main(
            [
                "run",
                str(config),
                "--out",
                str(tmp_path / "r2.jsonl"),
                "--fail-on-bad-records",
                "--no-progress",
            ]
        )
        == 1
    )
    assert "data.jsonl: line 2" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "graders:\n  g:\n    type: string_mach\n",
            "job.yaml:3: graders.g.type: unknown grader type 'string_mach'; did you mean 'string_match'",
        ),
        (
            "providers:\n  p:\n    kind: openia\n    model: m\ngraders:\n  g:\n    type: llm\n    provider: p\n",
            "job.yaml:3: providers.p.kind: unknown provider kind 'openia'; did you mean 'openai'?",
        ),
        (
            "providers:\n  p:\n    kind: openai\ngraders:\n  g:\n    type: llm\n    provider: p\n",
            "job.yaml:2: providers.p.model: Field required",
        ),
        (
            "providers:\n  p:\n    kind: openai\n    model: m\n    base_url: localhost:8000\ngraders: {}\n",
            "job.yaml:5: providers.p.base_url: String should match pattern",
        ),
        (
            "providers:\n  p:\n    kind: openai\n    model: m\n    api_key: ${OJ_TEST_UNSET_VAR}\ngraders:\n  g: {type: string_match}\n",
            "job.yaml:5: providers.p.api_key: environment variable OJ_TEST_UNSET_VAR is not set",
        ),
        (
            "graders:\n  g:\n    type: string_match\nrunner:\n  max_concurrency: lots\n",
            "job.yaml:5: runner.max_concurrency: Input should be a valid integer",
        ),
        (
            "graders:\n  g:\n    type: trajectory_comprehensive\n",
            "job.yaml:2: graders.g: grader type 'trajectory_comprehensive' is an LLM judge and needs 'provider: <name>'",
        ),
        (
            "graders:\n  g:\n    type: string_match\n    provider: nope\n",
            "job.yaml:4: graders.g.provider: grader type 'string_match' is rule-based",
        ),
        (
            "graders:\n  g:\n    type: string_match\n    params: {mode: fuzzy}\n",
            "job.yaml:4: graders.g.params.mode: unknown parameter 'mode'; did you mean 'match_mode'? "
            "(valid: case_sensitive, description, full_match, match_mode, name, regex_timeout_s, strip)",
        ),
        ("graders: [\n", "job.yaml:2: invalid YAML"),
        (
            "providers:\n  p: {kind: openai, model: m, base_url: 'http://127.0.0.1:9/v1', api_key: k}\n"
            "graders:\n  g:\n    type: llm\n    provider: p\n    params: {template: '{x}', sampling: {temprature: 1}}\n",
            "job.yaml:7: graders.g.params.sampling.temprature: unknown field 'temprature'; "
            "did you mean 'temperature'?",
        ),
    ],
)
def test_config_errors_name_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, expected: str
) -> None:
    config = write_config(tmp_path, body)
    assert main(["validate", str(config)]) == 1
    err = capsys.readouterr().err
    assert expected.replace("job.yaml", str(config)) in err, err


def test_validate_graders_and_estimate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(QUICKSTART)]) == 0
    assert "ok (5 graders, 0 providers; the first 100 records of" in capsys.readouterr().out
    assert main(["graders", "--json"]) == 0
    listing = {g["name"]: g for g in json.loads(capsys.readouterr().out)}
    assert listing["action_loop_detection"]["required_inputs"] == ["messages"]
    assert listing["action_loop_detection"]["score_range"] == [0.0, 1.0]
    assert listing["trajectory_comprehensive"]["kind"] == "llm"
    config = write_config(
        tmp_path,
        """
providers:
  judge: {kind: openai, model: m, base_url: "http://127.0.0.1:9/v1", api_key: k,
          sampling: {max_tokens: 50}, price: {prompt_per_1k: 1.0, completion_per_1k: 2.0}}
graders:
  judged:
    type: llm
    provider: judge
    params: {template: "Answer: {answer}", score_range: [1, 5]}
""",
    )
    (tmp_path / "data.jsonl").write_text(
        '{"answer": "four"}\n{"answer": "4"}\n{"nothing": 1}\n', encoding="utf-8"
    )
    assert main(["estimate", str(config), "--data", str(tmp_path / "data.jsonl")]) == 0
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if line.startswith("judged"))
    calls, skipped = row.split()[1:3]
    assert (calls, skipped) == ("2", "1")
    assert "$" in row


LLM_JOB = """
providers:
  judge:
    kind: openai
    model: test-judge
    base_url: {base_url}
    api_key: sk-test
graders:
  quality:
    type: llm
    provider: judge
    params: {{template: "Rate: {{answer}}", score_range: [1, 5]}}
runner:
  max_concurrency: 4
"""


@pytest.mark.slow  # a 200-sample run in a subprocess, stopped, then finished (7 s each)
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "crash"])
def test_interrupted_run_resumes_without_duplicates_or_gaps(
    tmp_path: Path, judge_server: JudgeServerProcess, stop: signal.Signals
) -> None:
    judge_server.set_latency(0.05)  # slow enough to stop the run halfway
    config = write_config(tmp_path, LLM_JOB.format(base_url=judge_server.base_url))
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(json.dumps({"id": f"s{i:03d}", "answer": str(i)}) + "\n" for i in range(200)),
        encoding="utf-8",
    )
    out = tmp_path / "results.jsonl"
    argv = [
        sys.executable,
        "-m",
        "openjudge",
        "run",
        str(config),
        "--data",
        str(data),
        "--out",
        str(out),
        "--no-progress",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    # 21 lines: the header and 20 samples (under load, a kill can follow the poll at once)
    while (not out.exists() or out.read_bytes().count(b"\n") < 21) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(stop)
    proc.communicate(timeout=60)
    assert proc.returncode == (130 if stop == signal.SIGINT else -signal.SIGKILL)
    partial = ids_in(out)
    assert 20 <= len(partial) < 200
    assert len(set(partial)) == len(partial)

    finished = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=True)
    assert f"samples already complete in {out}" in finished.stdout
    final = ids_in(out)
    assert sorted(final) == [f"s{i:03d}" for i in range(200)]  # no gaps, no duplicates
    assert all(r["score"] == 3.0 for r in results_by_id(out, "quality").values())


def messages_of_quickstart() -> list[object]:
    lines = (ROOT / "examples" / "quickstart" / "data.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["messages"] for line in lines]


def test_judge_example_runs_against_a_local_server(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    judge_server: JudgeServerProcess,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "judge.jsonl"
    config = ROOT / "examples" / "judge" / "config.yaml"
    assert main(["run", str(config), "--out", str(out), "--no-progress"]) == 0
    trajectory = results_by_id(out, "trajectory")
    assert len(trajectory) == 300
    # The test server judges every step 3 of 5: (3 - 1) / 4.
    assert all(r["type"] == "score" and r["score"] == 0.5 for r in trajectory.values())
    first = capsys.readouterr().out
    assert "300 samples graded\n" in first
    # Some generated trajectories repeat: repeats are served by the cache (or the identical
    # call in flight), so the server sees one request per distinct prompt.
    distinct = len({json.dumps(m, sort_keys=True) for m in messages_of_quickstart()})
    found = re.search(r"judge cache: (\d+) judge calls? of (\d+) answered from ", first)
    assert found is not None, first
    hits, asked = int(found.group(1)), int(found.group(2))
    assert asked == 300 and asked - hits >= distinct
    assert judge_server.stats().chat_requests == distinct < 300

    # Grading the same data into a new results file is served by the judge cache.
    judge_server.reset_stats()
    assert main(["run", str(config), "--out", str(tmp_path / "again.jsonl"), "--no-progress"]) == 0
    assert "judge cache: 300 judge calls of 300 answered from " in capsys.readouterr().out
    assert judge_server.stats().chat_requests == 0
    again = results_by_id(tmp_path / "again.jsonl", "trajectory")
    assert {k: (v["score"], v["reason"]) for k, v in again.items()} == {
        k: (v["score"], v["reason"]) for k, v in trajectory.items()
    }
    assert all(v["usage"]["requests"] == 0 for v in again.values())  # cached replies cost nothing


def test_exported_config_schema_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    committed = json.loads((ROOT / "docs" / "config.schema.json").read_text(encoding="utf-8"))
    assert printed == committed, "run: openjudge schema > docs/config.schema.json"
    assert printed["properties"]["graders"]["minProperties"] == 1
