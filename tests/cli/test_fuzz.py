"""Fuzz the command end to end with hostile datasets: one hostile record costs at
most its own result; the run, its rerun and its report always complete.

Datasets from ``hostile_corpus``: seeded mixes of good records and hostile ones (lone
surrogates in ids, fields, keys and responses; huge, tiny, non-finite and over-long
numbers; nesting near and past the parser's limit; lines around the size cap; control
characters; byte order marks; bytes that are not UTF-8; odd, duplicate, reserved and
colliding ids; non-objects; malformed records), as JSON Lines, JSON arrays and CSV, graded
by rule graders and an LLM judge (the project's test judge server). Each is run as a user
runs it, ``openjudge run ... --report`` in a subprocess, then run again. Checked:

* exit code 0 (documented: finished, grader errors are results), no traceback;
* the results file and the report are strict UTF-8, and the results file reads back
  through the strict readers;
* one line per record of the dataset (JSON Lines and arrays), ids unique, every good
  record graded exactly once with a score from the rule grader;
* the rerun grades nothing and leaves the results file byte for byte as it was.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from openjudge.jobs._results import read_outcomes
from openjudge.testing.judge_server import JudgeServerProcess
from tests.cli.hostile_corpus import CAP, Record, csv_dataset, json_dataset

ROOT = Path(__file__).resolve().parents[2]
RECORDS = 60


@pytest.fixture(scope="module")
def judge() -> Iterator[JudgeServerProcess]:
    with JudgeServerProcess(latency_s=0.0) as server:
        yield server


def _job(base_url: str) -> str:
    return f"""
providers:
  judge: {{kind: openai, model: m, base_url: "{base_url}", api_key: sk-test, max_retries: 0}}
graders:
  exact: {{type: string_match, mapper: {{response: answer, reference: expected}}}}
  given: {{type: provided_score, mapper: {{score: score}}}}
  quality: {{type: llm, provider: judge, params: {{template: "Rate: {{answer}}"}}, mapper: {{answer: answer}}}}
data: {{max_record_bytes: {CAP}}}
"""


def _openjudge(tmp_path: Path, data: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "XDG_CACHE_HOME": str(tmp_path),
    }
    args = (
        "run",
        "job.yaml",
        "--data",
        data,
        "--out",
        "out.jsonl",
        "--report",
        "report.html",
        "--no-progress",
    )
    done = subprocess.run(
        [sys.executable, "-m", "openjudge", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode("utf-8"),  # strict: what we print is UTF-8 too
        done.stderr.decode("utf-8", "backslashreplace"),
    )


def _check_run(tmp_path: Path, data: str, records: list[Record], *, counted: bool) -> bytes:
    done = _openjudge(tmp_path, data)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    written = (tmp_path / "out.jsonl").read_bytes()
    written.decode("utf-8")
    (tmp_path / "report.html").read_bytes().decode("utf-8")
    lines = list(read_outcomes(tmp_path / "out.jsonl"))
    ids = Counter(line.id for line in lines)
    assert max(ids.values()) == 1, ids.most_common(3)
    if counted:
        assert len(lines) == sum(r.text.count(b"\n") + 1 for r in records)
    by_id = {line.id: line for line in lines}
    for record in records:
        if record.good_id is not None and record.good_id not in ("g0",):
            assert by_id[record.good_id].results["exact"].type == "score", by_id[record.good_id]
    assert by_id["g0"].results["exact"].type == "score"  # the first record, which duplicates aim at
    return written


@pytest.mark.parametrize(
    ("kind", "seed"), [("jsonl", 1), ("jsonl", 2), ("json", 1), ("json", 2), ("csv", 1), ("csv", 2)]
)
def test_hostile_datasets_cost_their_own_records_only(
    tmp_path: Path, judge: JudgeServerProcess, kind: str, seed: int
) -> None:
    (tmp_path / "job.yaml").write_text(_job(judge.base_url), encoding="utf-8")
    if kind == "csv":
        data, records = csv_dataset(seed, RECORDS)
    else:
        data, records = json_dataset(seed, RECORDS, array=kind == "json")
    name = f"data.{kind}"
    (tmp_path / name).write_bytes(data)
    first = _check_run(tmp_path, name, records, counted=kind != "csv")  # csv: a row may span lines
    again = _openjudge(tmp_path, name)
    assert "Traceback" not in again.stderr and again.returncode == 0, again.stderr
    assert "0 samples graded" in again.stdout
    assert (tmp_path / "out.jsonl").read_bytes() == first


def test_a_dataset_of_only_hostile_records_exits_3_with_its_report(
    tmp_path: Path, judge: JudgeServerProcess
) -> None:
    (tmp_path / "job.yaml").write_text(_job(judge.base_url), encoding="utf-8")
    deep = b'{"id": "x", "answer": ' + b"[" * 2_000 + b"]" * 2_000 + b"}"
    (tmp_path / "data.jsonl").write_bytes(b'{"id": "a\\udc00", "answer": "1"}\n[1]\n' + deep + b"\n\xff\n")
    done = _openjudge(tmp_path, "data.jsonl")
    assert "Traceback" not in done.stderr
    assert done.returncode == 3  # documented: every grader result in the results file is an error
    assert "error: every grader result failed: 12 of 12 grader results" in done.stderr
    assert "0 samples graded, 4 malformed records" in done.stdout
    assert "holds a lone surrogate" in (tmp_path / "report.html").read_bytes().decode("utf-8")


def test_fail_on_bad_records_stops_at_the_first_hostile_record_with_its_line(
    tmp_path: Path, judge: JudgeServerProcess
) -> None:
    (tmp_path / "job.yaml").write_text(_job(judge.base_url), encoding="utf-8")
    (tmp_path / "data.jsonl").write_bytes(
        b'{"id": "g0", "answer": "1", "expected": "1", "score": 1}\n{"id": "a\\udc00", "answer": "1"}\n'
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "XDG_CACHE_HOME": str(tmp_path),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "openjudge",
            "run",
            "job.yaml",
            "--data",
            "data.jsonl",
            "--fail-on-bad-records",
            "--no-progress",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr
    assert done.returncode == 1  # documented: invalid dataset, the message names file and line
    assert done.stderr.startswith("error: data.jsonl: line 2: id 'a\\udc00' holds a lone surrogate")
