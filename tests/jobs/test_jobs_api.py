from __future__ import annotations

import openjudge.jobs


def test_public_api_is_pinned() -> None:
    assert sorted(openjudge.jobs.__all__) == [
        "AggregateSummary",
        "BadRecord",
        "DatasetError",
        "DatasetFormat",
        "ErrorEntry",
        "GraderSummary",
        "GradingBackend",
        "JobChanges",
        "JobFingerprint",
        "JobMismatchError",
        "LocalBackend",
        "OutcomeLine",
        "Price",
        "RankEntry",
        "ResultEntry",
        "ResultsFileError",
        "ResultsHeader",
        "ResultsWriter",
        "RunStats",
        "RunSummary",
        "SampleOutcome",
        "SampleRecord",
        "SampleSource",
        "ScoreEntry",
        "SummaryBuilder",
        "iter_samples",
        "read_header",
        "read_outcomes",
        "read_results",
        "render_table",
        "result_to_json",
        "run_job",
        "sample_id",
        "write_report",
    ]
    for name in openjudge.jobs.__all__:
        assert getattr(openjudge.jobs, name) is not None
