"""Splitting provider limits across workers (no Ray needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from openjudge.cli import main
from openjudge.config._loader import parse_config
from openjudge.distributed import plan_workers
from openjudge.distributed._limits import worker_limits
from openjudge.models.policy import ProviderLimits

CONFIG = """
providers:
  big: {kind: openai, model: m, base_url: "http://127.0.0.1:1/v1", limits: {max_concurrency: 64, rpm: 600, tpm: 90000}}
  small: {kind: openai, model: m, base_url: "http://127.0.0.1:1/v1", limits: {max_concurrency: 3, adaptive: false}}
graders:
  a: {type: llm, provider: big, params: {template: "{x}"}}
  b: {type: llm, provider: small, params: {template: "{x}"}}
"""


@pytest.mark.parametrize(
    ("limit", "workers", "share"), [(16, 2, 8), (17, 2, 8), (7, 3, 2), (5, 5, 1), (1, 1, 1)]
)
def test_shares_floor_and_never_sum_above_the_limit(limit: int, workers: int, share: int) -> None:
    split = worker_limits(ProviderLimits(max_concurrency=limit), workers)
    assert split.max_concurrency == share
    assert split.max_concurrency * workers <= limit


def test_rates_are_divided_and_adaptive_kept() -> None:
    split = worker_limits(ProviderLimits(max_concurrency=10, rpm=3000, tpm=1000, adaptive=False), 4)
    assert (split.max_concurrency, split.rpm, split.tpm, split.adaptive) == (2, 750.0, 250.0, False)


def test_more_workers_than_slots_is_refused() -> None:
    with pytest.raises(ValueError, match=r"max_concurrency=3 across 4 workers"):
        worker_limits(ProviderLimits(max_concurrency=3), 4)
    with pytest.raises(ValueError, match="at least 1"):
        worker_limits(ProviderLimits(), 0)


def test_plan_caps_workers_at_the_smallest_provider_limit() -> None:
    config = parse_config(CONFIG)
    plan = plan_workers(config, 8)
    assert plan.workers == 3  # "small" has 3 slots: a 4th worker would exceed it
    assert plan.limits["big"] == ProviderLimits(max_concurrency=21, rpm=200.0, tpm=30000.0)
    assert plan.limits["small"] == ProviderLimits(max_concurrency=1, adaptive=False)
    assert {n: s.limits for n, s in plan.config.providers.items()} == plan.limits
    assert config.providers["big"].limits.max_concurrency == 64  # the input is not changed
    assert plan.config.graders == config.graders

    assert plan_workers(config, 2).limits["big"].max_concurrency == 32
    with pytest.raises(ValueError, match="at least 1"):
        plan_workers(config, 0)


def test_rule_only_jobs_keep_the_requested_workers() -> None:
    config = parse_config("graders:\n  loops: {type: action_loop_detection}\n")
    plan = plan_workers(config, 5)
    assert (plan.workers, plan.limits) == (5, {})


def test_importing_the_package_or_the_cli_does_not_import_ray() -> None:
    code = (
        "import json, sys; import openjudge, openjudge.cli, openjudge.distributed; "
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert {"ray", "pyarrow"}.isdisjoint(json.loads(out))


def test_a_missing_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from openjudge.distributed._ray_backend import import_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(ImportError, match=r'pip install "openjudge-graders\[ray\]"'):
        import_ray()


def test_the_cli_reports_a_missing_ray_as_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "job.yaml"
    config.write_text("graders:\n  loops: {type: action_loop_detection}\n", encoding="utf-8")
    data = tmp_path / "data.jsonl"
    data.write_text('{"messages": []}\n', encoding="utf-8")
    monkeypatch.setitem(sys.modules, "ray", None)
    argv = ["run", str(config), "--data", str(data), "--out", str(tmp_path / "r.jsonl"), "--engine", "ray"]
    assert main(argv) == 2
    assert 'pip install "openjudge-graders[ray]"' in capsys.readouterr().err
    assert main([*argv[:-2], "--engine", "ray", "--workers", "0"]) == 2
    assert "--workers must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()
