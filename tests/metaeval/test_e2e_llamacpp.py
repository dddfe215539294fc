"""``openjudge meta-eval`` against a real OpenAI-compatible server: llama.cpp with a tiny random model.

Marked ``e2e`` (needs ``llama-cpp-python[server]`` and ``gguf``, as tests/e2e does). The
model's weights are random, so its verdicts mean nothing: the test checks that the
command runs end to end through the real client and server and that every count adds up.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from pydantic import BaseModel, Field

from openjudge.cli import main
from openjudge.graders.llm_grader import LLMGrader
from openjudge.metaeval._items import PairItem, PairLabel, PairwiseSet
from openjudge.metaeval._metrics import summarize
from openjudge.metaeval._runs import collect
from openjudge.metaeval._verdicts import NONE
from openjudge.providers.openai import OpenAIChatModel
from openjudge.runner.grading_runner import GradingRunner

pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python[server] (scripts/test.sh installs it)")
pytest.importorskip("gguf")

from tests.e2e.tiny_gguf import write_tiny_gguf

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

CONFIG = """
providers:
  tiny:
    kind: openai
    model: tiny
    base_url: ${LLAMA_URL}
    api_key: sk-none
    structured_output: json_object   # llama.cpp rejects response_format json_schema
    sampling: {temperature: 0, max_tokens: 48}
    price: {prompt_per_1k: 0.0001, completion_per_1k: 0.0002}
graders:
  prefer:
    type: pairwise_preference
    provider: tiny
  rate:
    type: llm
    provider: tiny
    params: {template: "Rate the answer to {query}: {response}", score_range: [1, 5]}
runner: {max_concurrency: 4}
"""

PAIRS: list[tuple[str, str, str, PairLabel]] = [
    ("What is 2 + 2?", "4", "5", "A"),
    ("Capital of France?", "Lyon", "Paris", "B"),
    ("Say hi.", "hi", "hello", "tie"),
    ("Largest planet?", "Jupiter", "Mars", "A"),
    ("Boiling point of water at sea level?", "90 C", "100 C", "B"),
    ("Colour of the sky on a clear day?", "blue", "green", "A"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    model = write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--n_ctx", "4096", "--model_alias", "tiny"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("llama.cpp server did not start") from None
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_meta_eval_runs_against_llama_cpp_with_consistent_counts(
    llama_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LLAMA_URL", llama_url)
    config = tmp_path / "tiny.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    data = tmp_path / "pairs.jsonl"
    rows = [{"prompt": p, "response_a": a, "response_b": b, "label": label} for p, a, b, label in PAIRS]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out.json"
    args = [
        "meta-eval",
        str(config),
        "--data",
        str(data),
        "--json",
        str(out),
        "--report",
        str(tmp_path / "r.html"),
    ]
    assert main([*args, "--bootstrap", "200", "--no-progress"]) == 0
    assert "6 pairs (pairwise; labels A 3, B 2, tie 1)" in capsys.readouterr().out

    (report,) = json.loads(out.read_text(encoding="utf-8"))["reports"]
    assert report["data"]["items"] == 6 and report["swap"] is True
    graders = {g["name"]: g for g in report["graders"]}
    assert set(graders) == {"prefer", "rate"}
    for name, calls_per_judgement in (("prefer", 2), ("rate", 1)):
        g = graders[name]
        cost = g["cost"]
        failed = sum(cost["failures"].values())
        assert cost["judgements"] == 12  # prefer: 6 pairs x 2 orders; rate: 6 pairs x 2 responses
        assert 0 <= failed <= 12
        assert cost["failure_rate"] == pytest.approx(failed / 12)
        assert set(cost["failures"]) <= {"parse_error", "provider_error", "timeout", "no_verdict"}
        assert cost["requests"] >= 12 * calls_per_judgement  # re-asks add more
        assert cost["prompt_tokens"] > 0 and cost["completion_tokens"] > 0
        assert cost["cost"] == pytest.approx(cost["prompt_tokens"] / 1e7 + cost["completion_tokens"] / 5e6)
        # Every verdict in the stored order is in the confusion table and nowhere else.
        agreement = g["agreement"]
        verdicts = sum(sum(row.values()) for row in agreement["confusion"].values())
        assert agreement["tie_rate"]["n"] == verdicts <= 6
        decisive = sum(agreement["confusion"][label][v] for label in ("A", "B") for v in ("A", "B", "tie"))
        assert agreement["pairwise_accuracy"]["n"] == decisive
        if name == "prefer" and g["position"]["flip_rate"] is not None:
            assert g["position"]["flip_rate"]["n"] <= verdicts
    assert 'data-metric="pairwise_accuracy"' in (tmp_path / "r.html").read_text(encoding="utf-8")


class TinyVerdict(BaseModel):
    """Bounded so a random model under a JSON grammar finishes its reply (as in tests/e2e)."""

    score: Literal[1, 2, 3, 4, 5]
    reason: str = Field(max_length=8)


async def test_real_verdicts_through_the_api_add_up(llama_url: str) -> None:
    # The config's built-in graders ask for an unbounded reason, which this random model never
    # closes (every reply above is a parse error). With a bounded verdict it answers for real.
    judge = OpenAIChatModel(
        "tiny",
        api_key="sk-none",
        base_url=llama_url,
        temperature=0.0,
        max_tokens=48,
        structured_output="json_object",
    )
    pair = LLMGrader(
        judge,
        name="pair",
        template="{query}\nA: {response_a}\nB: {response_b}\n5 if A is better, 1 if B is.",
        structured_model=TinyVerdict,
        score_range=(1, 5),
    )
    single = LLMGrader(
        judge, name="single", template="Rate: {response}", structured_model=TinyVerdict, score_range=(1, 5)
    )
    items = tuple(
        PairItem(id=str(k), line=k + 1, prompt=p, response_a=a, response_b=b, label=label)
        for k, (p, a, b, label) in enumerate(PAIRS)
    )
    run = await collect(
        GradingRunner({"pair": pair, "single": single}, max_concurrency=4), PairwiseSet(items)
    )
    pair_run, single_run = run.graders
    assert pair_run.verdict is not None and single_run.score is not None
    answered = int((pair_run.verdict != NONE).sum())
    assert answered > 0  # the server really judged some pairs
    assert answered + sum(pair_run.failures.values()) == pair_run.judgements == 12
    scored = int((~np.isnan(single_run.score)).sum())
    assert scored + sum(single_run.failures.values()) == single_run.judgements == 12
    assert set(np.unique(single_run.score[~np.isnan(single_run.score)])) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    report = summarize(run, bootstrap=100)
    accuracy = report.graders[0].agreement.pairwise_accuracy
    assert accuracy is not None and accuracy.n == int(
        ((pair_run.verdict[0, 0] != NONE) & np.array([p[3] != "tie" for p in PAIRS])).sum()
    )
