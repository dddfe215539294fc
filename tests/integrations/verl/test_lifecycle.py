"""What the integration builds is closed at interpreter exit (Ray actors never get there)."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest

from openjudge.config._build import BuiltJob
from openjudge.graders.function_grader import FunctionGrader
from openjudge.integrations.verl.lifecycle import close_all, close_at_exit, close_job
from openjudge.models.cache import JudgeCache
from openjudge.models.chat_client import ChatClient
from openjudge.runner.grading_runner import GradingRunner


class LocalModel:
    """Stands in for an in-process provider (``kind: transformers``): it has a blocking close."""

    def __init__(self, fail: bool = False) -> None:
        self.closed, self.fail = 0, fail

    def close(self) -> None:
        self.closed += 1
        if self.fail:
            raise RuntimeError("device gone")


class HttpModel:
    """Stands in for an HTTP provider: only an async close, bound to its event loop."""

    async def aclose(self) -> None:
        raise AssertionError("never called outside its loop")


class RecordingCache(JudgeCache):
    closed = 0

    def close(self) -> None:
        self.closed += 1
        super().close()


def job(providers: dict[str, object], cache: JudgeCache | None = None) -> BuiltJob:
    runner = GradingRunner({"one": FunctionGrader(lambda response: 1.0)})
    return BuiltJob(runner, cast(dict[str, ChatClient], providers), {}, cache)


def test_close_job_closes_local_models_and_the_cache_and_survives_a_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken, local, http = LocalModel(fail=True), LocalModel(), HttpModel()
    cache = RecordingCache(tmp_path / "cache.sqlite")
    with caplog.at_level(logging.ERROR, logger="openjudge.integrations.verl.lifecycle"):
        close_job(job({"broken": broken, "local": local, "http": http}, cache))
    assert (broken.closed, local.closed, cache.closed) == (1, 1, 1)
    assert "closing provider 'broken' failed" in caplog.text


def test_close_all_closes_each_tracked_job_once() -> None:
    local = LocalModel()
    close_at_exit(job({"local": local}))
    close_all()
    close_all()
    assert local.closed == 1


def test_a_shared_scorer_is_closed_when_the_interpreter_exits(tmp_path: Path) -> None:
    graders = tmp_path / "graders.yaml"
    graders.write_text(
        "providers:\n  judge: {kind: openai, model: m, base_url: 'http://127.0.0.1:9/v1', api_key: k}\n"
        "graders:\n  q:\n    type: llm\n    provider: judge\n    params: {template: '{answer}', score_range: [1, 5]}\n"
        f"    mapper: {{answer: response}}\ncache: {{path: {tmp_path / 'cache.sqlite'}}}\n",
        encoding="utf-8",
    )
    marker = tmp_path / "closed"
    code = (
        "import sys\n"
        "from openjudge.models.cache import JudgeCache\n"
        "close = JudgeCache.close\n"
        "def recorded(self):\n"
        f"    open({str(marker)!r}, 'a').write('closed\\n')\n"
        "    close(self)\n"
        "JudgeCache.close = recorded\n"
        "from openjudge.integrations.verl._scoring import shared_scorer\n"
        "from openjudge.integrations.verl._settings import OpenJudgeVerlSettings\n"
        f"shared_scorer(OpenJudgeVerlSettings(config={str(graders)!r}, judge_cache=True))\n"
        "print('built')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "built"
    assert marker.read_text() == "closed\n"  # at exit, once
