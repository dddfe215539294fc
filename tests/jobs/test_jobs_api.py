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
        "OutcomeLine",
        "Price",
        "RankEntry",
        "ResultEntry",
        "ResultsFileError",
        "ResultsWriter",
        "RunSummary",
        "SampleOutcome",
        "SampleRecord",
        "SummaryBuilder",
        "iter_samples",
        "read_outcomes",
        "read_results",
        "render_table",
        "result_to_json",
        "sample_id",
        "write_report",
    ]
    for name in openjudge.jobs.__all__:
        assert getattr(openjudge.jobs, name) is not None
