"""``runner.tune_collector``: unset, the collector is tuned only where the process is openjudge's own."""

from __future__ import annotations

import pytest

from openjudge.config._build import build_job
from openjudge.config._loader import parse_config

GRADERS = "graders:\n  exact: {type: string_match, mapper: {response: answer, reference: expected}}\n"


@pytest.mark.parametrize(
    ("runner", "own_process", "tuned"),
    [
        ("", False, False),  # a trainer's worker, a program that builds the job: the host's collector
        ("", True, True),  # openjudge run, its Ray workers
        ("runner: {tune_collector: false}\n", True, False),
        ("runner: {tune_collector: true}\n", False, True),
    ],
)
def test_the_runner_tunes_the_collector_where_the_process_is_ours_or_when_asked(
    runner: str, own_process: bool, tuned: bool
) -> None:
    config = parse_config(GRADERS + runner)
    job = build_job(config, use_cache=False, own_process=own_process)
    assert job.runner.settings.tune_collector is tuned
