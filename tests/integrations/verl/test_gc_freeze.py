"""Asked to, a worker's long-lived objects leave the collector's full passes once its graders are built."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openjudge.integrations.verl._gc_freeze import GC_FREEZE_ENV

pytestmark = pytest.mark.slow  # VERL reward workers built in a fresh interpreter

# Run in a child: freezing is once per process, and the test process's state is not ours.
PROBE = """
import gc, json, weakref
class Node: pass
cycle = Node(); cycle.me = cycle            # garbage the freeze must not keep
dead = weakref.ref(cycle); del cycle
before = gc.get_freeze_count()
from openjudge.integrations.verl._scoring import shared_scorer
from openjudge.integrations.verl._settings import OpenJudgeVerlSettings
shared_scorer(OpenJudgeVerlSettings(config={config!r}))
after_first = gc.get_freeze_count()
from openjudge.integrations.verl._gc_freeze import freeze_long_lived_objects
again = freeze_long_lived_objects()
print(json.dumps({{"before": before, "after": after_first, "again": again,
                   "after_again": gc.get_freeze_count(), "cycle_freed": dead() is None}}))
"""


def probe(tmp_path: Path, env_value: str | None) -> dict[str, object]:
    config = tmp_path / "graders.yaml"
    config.write_text(
        "graders:\n  exact: {type: string_match, mapper: {response: response, reference: ground_truth}}\n"
    )
    env = {k: v for k, v in os.environ.items() if k != GC_FREEZE_ENV}
    if env_value is not None:
        env[GC_FREEZE_ENV] = env_value
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(config=str(config))],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("value", ["1", "on"])
def test_asked_to_building_the_scorer_collects_then_freezes_once(tmp_path: Path, value: str) -> None:
    result = probe(tmp_path, value)
    assert result["before"] == 0
    assert isinstance(result["after"], int) and result["after"] > 10_000  # the imports, the graders
    assert result["again"] is False and result["after_again"] == result["after"]  # once per process
    assert result["cycle_freed"] is True  # collected first: garbage is never frozen


@pytest.mark.parametrize("value", [None, "0", "off"])
def test_unasked_the_host_process_collector_is_left_alone(tmp_path: Path, value: str | None) -> None:
    """The worker process is VERL's: nothing is frozen unless its owner asks."""
    result = probe(tmp_path, value)
    assert result["after"] == 0 and result["after_again"] == 0 and result["again"] is False
