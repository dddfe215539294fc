"""The Ray engine on a local Ray instance, against the local test judge server.

The suite's Ray session and judge server (tests/_fixtures): starting Ray costs ~6 s, and
each Ray Data execution starts its two grading actors (~3 s).
"""

from __future__ import annotations

import json
import os
import signal
from functools import partial
from pathlib import Path

import anyio
import pytest

from openjudge.cli import main
from openjudge.config._build import build_job
from openjudge.config._loader import load_config
from openjudge.distributed import RayBackend, grade_on_ray
from openjudge.jobs._engine import run_job
from openjudge.jobs._fingerprint import job_fingerprint
from openjudge.jobs._records import HeaderLine, OutcomeLine, ResultsHeader
from openjudge.jobs._results import ResultsWriter, SampleOutcome
from openjudge.models.policy import ProviderLimits
from openjudge.testing.judge_server import JudgeServerProcess
from tests.distributed.helpers import graded, ids_in, judge_score, write_job, write_samples

pytestmark = pytest.mark.slow  # Ray: a local cluster, 10,000 samples (2-3 minutes)

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 8  # the provider's max_concurrency: 4 per worker


@pytest.fixture
def judge_latency_s() -> float:
    return 0.01


def test_ten_thousand_samples_on_two_workers_match_the_local_engine(
    ray_session: None, judge_server: JudgeServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n = 10_000
    config = write_job(tmp_path / "job.yaml", base_url=judge_server.base_url, limit=LIMIT)
    data = write_samples(tmp_path / "data.jsonl", n)

    judge_server.reset_stats()
    local_out = tmp_path / "local.jsonl"
    assert main(["run", str(config), "--data", str(data), "--out", str(local_out), "--no-progress"]) == 0
    local_stats = judge_server.stats()
    assert local_stats.chat_requests == n and local_stats.peak_in_flight <= LIMIT

    judge_server.reset_stats()
    ray_out = tmp_path / "ray.jsonl"
    argv = ["run", str(config), "--data", str(data), "--out", str(ray_out), "--no-progress"]
    assert main([*argv, "--engine", "ray", "--workers", "2"]) == 0
    stats = judge_server.stats()
    printed = capsys.readouterr().out

    # Nothing lost, nothing repeated; the limit held across both workers, which both ran.
    ids = ids_in(ray_out)
    assert len(ids) == n and set(ids) == {f"s{i:05d}" for i in range(n)}
    assert stats.chat_requests == n and stats.by_outcome["200"] == n
    assert LIMIT // 2 < stats.peak_in_flight <= LIMIT
    assert f"\n{n:,} samples graded\nresults: {ray_out}\n" in printed  # nothing skipped or malformed

    # Per-id results identical to the single-process run.
    ray_results, local_results = graded(ray_out), graded(local_out)
    assert ray_results == local_results
    assert ray_results["s00004"]["quality"] == (
        "score",
        4.0,
        0.75,
        "The response is acceptable.",
    )  # 1 + 28 % 5
    assert ray_results["s00003"]["exact"][:2] == ("score", 0.0)
    assert {row["quality"][1] for row in ray_results.values()} == {1.0, 2.0, 3.0, 4.0, 5.0}

    # A rerun finds everything done.
    judge_server.reset_stats()
    assert main([*argv, "--engine", "ray"]) == 0
    assert f"0 samples graded, {n:,} samples already complete in {ray_out}" in capsys.readouterr().out
    assert judge_server.stats().chat_requests == 0


def test_resumes_a_partial_results_file_without_regrading_or_duplicates(
    ray_session: None, judge_server: JudgeServerProcess, tmp_path: Path
) -> None:
    n, done = 1_000, 300
    config = write_job(tmp_path / "job.yaml", base_url=judge_server.base_url, limit=LIMIT)
    data = write_samples(tmp_path / "data.jsonl", n, bad_lines=(10, 500))
    out = tmp_path / "results.jsonl"
    job_config = load_config(config)
    job = build_job(job_config, use_cache=False)
    header = HeaderLine(openjudge=ResultsHeader(job=job_fingerprint(job_config, job)))
    # A previous run of this job wrote the first 300 samples (marked with a score the judge
    # never gives), one malformed record, then crashed in the middle of a line.
    with out.open("w", encoding="utf-8") as f:
        f.write(header.model_dump_json() + "\n")
        for i in range(done):
            marker = {"type": "score", "score": 9.0, "normalized_score": 1.0, "reason": "earlier run"}
            results = {"quality": marker, "exact": marker}
            line = {"id": f"s{i:05d}", "line": i + 1, "results": results, "aggregates": {"reward": 1.0}}
            f.write(json.dumps(line) + "\n")
        f.write(json.dumps({"id": "invalid-line-12", "line": 12, "results": {}, "aggregates": {}}) + "\n")
        f.write('{"id": "s00300", "line": 30')

    judge_server.reset_stats()
    backend = RayBackend(job_config, workers=2, batch_size=100, window=400, base_dir=tmp_path)
    run = partial(run_job, job_config, job, data_path=data, out_path=out, backend=backend)
    stats = anyio.run(run)

    assert judge_server.stats().chat_requests == n - done  # earlier samples were not sent again
    assert (stats.graded, stats.skipped_done, stats.bad_records, stats.interrupted) == (
        n - done,
        done,
        1,
        False,
    )
    assert backend.windows == 2  # 700 samples in windows of 400
    assert stats.workers == 2 and backend.worker_limits == {"judge": ProviderLimits(max_concurrency=4)}
    ids = ids_in(out)
    assert len(ids) == len(set(ids)) == n + 2
    assert set(ids) == {f"s{i:05d}" for i in range(n)} | {"invalid-line-12", "invalid-line-503"}
    rows = graded(out)
    assert all(rows[f"s{i:05d}"]["quality"][1] == 9.0 for i in range(done))  # kept as written
    assert all(rows[f"s{i:05d}"]["quality"][1] == judge_score(i) for i in range(done, n))
    assert rows["invalid-line-503"]["quality"][0] == "error"

    # Rerun: nothing left to do.
    again = grade_on_ray(config, data, out, workers=2)
    assert (again.graded, again.skipped_done, again.bad_records) == (0, n, 0)
    assert len(ids_in(out)) == n + 2


def test_sigterm_mid_run_stops_cleanly_and_a_rerun_completes(
    ray_session: None, judge_server: JudgeServerProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 600
    config = write_job(tmp_path / "job.yaml", base_url=judge_server.base_url, limit=LIMIT)
    data = write_samples(tmp_path / "data.jsonl", n)
    out = tmp_path / "results.jsonl"
    write = ResultsWriter.write
    calls = [0]

    def write_then_terminate(self: ResultsWriter, outcome: SampleOutcome | OutcomeLine) -> None:
        if calls[0] == 120:  # as `kill` or a scheduler would, while the 121st outcome arrives
            os.kill(os.getpid(), signal.SIGTERM)
        write(self, outcome)
        calls[0] += 1

    monkeypatch.setattr(ResultsWriter, "write", write_then_terminate)
    before = signal.getsignal(signal.SIGTERM)
    first = grade_on_ray(config, data, out, workers=2, batch_size=50)
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is put back
    assert first.interrupted and 120 < first.graded < n  # outcomes already in hand are kept
    written = ids_in(out)
    assert len(written) == len(set(written)) == first.graded

    monkeypatch.setattr(ResultsWriter, "write", write)
    second = grade_on_ray(config, data, out, workers=2, batch_size=50)  # the actors were released
    assert not second.interrupted
    assert (second.graded, second.skipped_done) == (n - first.graded, first.graded)
    final = ids_in(out)
    assert sorted(final) == [f"s{i:05d}" for i in range(n)]  # no gaps, no duplicates
    assert all(row["quality"][1] == judge_score(int(i[1:])) for i, row in graded(out).items())


def test_a_grader_added_to_the_config_is_graded_on_the_workers_and_the_rest_replayed(
    ray_session: None, judge_server: JudgeServerProcess, tmp_path: Path
) -> None:
    n = 60
    config = write_job(tmp_path / "job.yaml", base_url=judge_server.base_url, limit=LIMIT)
    data = write_samples(tmp_path / "data.jsonl", n)
    out = tmp_path / "results.jsonl"
    assert grade_on_ray(config, data, out, workers=2, batch_size=20).graded == n
    before = graded(out)

    added = "  format:\n    type: reasoning_format\n    mapper: {response: answer}\naggregators:"
    config.write_text(config.read_text(encoding="utf-8").replace("aggregators:", added), encoding="utf-8")
    judge_server.reset_stats()
    stats = grade_on_ray(config, data, out, workers=2, batch_size=20)
    assert judge_server.stats().chat_requests == 0  # the stored judge results crossed to the workers
    assert stats.changes is not None and stats.changes.added == ("format",)
    assert (stats.graded, stats.regraded, stats.pairs) == (n, n, n)
    after = graded(out)
    assert after.keys() == before.keys()
    for sample_id, row in after.items():
        assert row["quality"] == before[sample_id]["quality"] and row["exact"] == before[sample_id]["exact"]
        assert row["format"][:2] == ("score", 0.0)  # no <think>/<answer> in these answers
        quality, exact = row["quality"][2], row["exact"][2]
        assert quality is not None and exact is not None
        assert row["reward"][1] == pytest.approx((quality + exact + 0.0) / 3)  # recomputed over all three
