"""GGUF checkpoints in ``kind: transformers``: dequantized once per machine, then loaded like any other.

On the tiny random llama GGUF of the llama.cpp tests (0.5 MB, a SentencePiece vocabulary
with byte tokens): conversion into the cache directory, reuse by later providers and
processes, one conversion under concurrent loads, and constrained decoding on what the
conversion produced. The real model's GGUF goes through the same path in test_real_model.py.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from openjudge.config import ConfigError, build_job, parse_config
from openjudge.graders.llm_grader import LLMGrader
from openjudge.models._errors import ChatModelError
from openjudge.providers.transformers import (
    TransformersChatModel,
    TransformersRewardModel,
    TransformersSettings,
    _gguf,
)
from openjudge.results import GraderScore
from tests.e2e.tiny_gguf import write_tiny_gguf

pytestmark = pytest.mark.anyio


class TinyVerdict(BaseModel):
    """Bounded, so random weights under the grammar finish within the token budget."""

    score: Literal[1, 2, 3, 4, 5]
    reason: str = Field(max_length=6)


@pytest.fixture(scope="module")
def gguf_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every conversion run in this test (the targets)."""
    seen: list[Path] = []
    convert = _gguf._convert

    def counting(source: Path, target: Path, *, trust_remote_code: bool) -> None:
        seen.append(target)
        convert(source, target, trust_remote_code=trust_remote_code)

    monkeypatch.setattr(_gguf, "_convert", counting)
    return seen


def test_the_first_load_converts_and_later_loads_read_the_copy(
    gguf_path: Path, tmp_path: Path, conversions: list[Path]
) -> None:
    cache = tmp_path / "cache"
    first = TransformersChatModel(str(gguf_path), device="cpu", cache_dir=str(cache))
    loaded = first.local_model.load()
    assert len(conversions) == 1
    (target,) = conversions
    assert target.parent == cache and target.name.startswith("tiny-")
    record = json.loads((target / _gguf.MARKER).read_text(encoding="utf-8"))
    assert record["source"] == str(gguf_path) and record["seconds"] >= 0
    assert (target / "model.safetensors").is_file() and (target / "tokenizer.json").is_file()
    assert loaded.name == str(gguf_path)
    # A new provider (as a new process would) and the file named by gguf_file: no second conversion.
    again = TransformersChatModel(
        str(gguf_path.parent), gguf_file=gguf_path.name, device="cpu", cache_dir=str(cache)
    )
    again.local_model.load()
    assert len(conversions) == 1
    assert sorted(p.name for p in cache.iterdir()) == [target.name, f"{target.name}.lock"]  # no staging left
    assert first.checkpoint_dir() == str(target)  # what a trainer loads to get the same weights
    # transformers' conversion takes another EOS than the one the file declares (id 2, "</s>").
    assert record["special_tokens_set"] == {"eos_token": "</s>"}
    assert loaded.tokenizer.eos_token == "</s>" and loaded.eos_token_ids == (2,)
    first.close()
    again.close()


def test_concurrent_loads_convert_once(gguf_path: Path, tmp_path: Path, conversions: list[Path]) -> None:
    settings = TransformersSettings(model=str(gguf_path), device="cpu", cache_dir=str(tmp_path))
    targets: list[Path] = []
    threads = [
        threading.Thread(target=lambda: targets.append(_gguf.converted_checkpoint(settings)))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(conversions) == 1 and len(set(targets)) == 1


def test_a_changed_file_is_converted_again(gguf_path: Path, tmp_path: Path, conversions: list[Path]) -> None:
    other = write_tiny_gguf(tmp_path / "tiny.gguf", seed=1)  # same name, other weights
    for path in (gguf_path, other):
        _gguf.converted_checkpoint(TransformersSettings(model=str(path), cache_dir=str(tmp_path / "cache")))
    assert len(conversions) == 2 and conversions[0] != conversions[1]


async def test_constrained_decoding_on_the_converted_sentencepiece_vocabulary(
    gguf_path: Path, tmp_path: Path
) -> None:
    judge = TransformersChatModel(str(gguf_path), device="cpu", cache_dir=str(tmp_path), max_new_tokens=48)
    grader = LLMGrader(
        judge, template="Rate: {response}", structured_model=TinyVerdict, score_range=(1, 5), max_reasks=0
    )
    results = [await grader.aevaluate(response=text) for text in ("fine", "très bien", "4 + 4 = 8")]
    for result in results:
        assert isinstance(result, GraderScore), result  # random weights, yet always a valid verdict
        assert result.score in (1.0, 2.0, 3.0, 4.0, 5.0)
    judge.close()


def test_settings_name_the_gguf_file_once() -> None:
    with pytest.raises(ValueError, match="name the file in one of them"):
        TransformersSettings(model="/models/x.gguf", gguf_file="y.gguf")
    assert TransformersSettings(model="/models/x.Q4.gguf").gguf == ("/models", "x.Q4.gguf")
    assert TransformersSettings(model="org/repo-GGUF", gguf_file="x.gguf").gguf == ("org/repo-GGUF", "x.gguf")
    assert TransformersSettings(model="org/repo").gguf is None


def test_a_config_names_the_file_in_a_directory_and_the_cache(
    gguf_path: Path, tmp_path: Path, conversions: list[Path]
) -> None:
    cache = tmp_path / "cache"
    job = build_job(
        parse_config(
            f"providers:\n  p:\n    kind: transformers\n    model: {gguf_path.parent}\n"
            f"    gguf_file: {gguf_path.name}\n    cache_dir: {cache}\n    device: cpu\n"
            "graders:\n  g: {type: llm, provider: p, params: {template: '{q}'}}\n",
            source="job.yaml",
        )
    )
    judge = job.runner.grader_configs["g"].grader.model  # type: ignore[attr-defined]
    assert isinstance(judge, TransformersChatModel)
    assert judge.settings.gguf == (str(gguf_path.parent), gguf_path.name)
    checkpoint = Path(judge.checkpoint_dir())  # converts into the config's cache_dir
    assert conversions == [checkpoint] and checkpoint.parent == cache
    judge.close()


def test_a_config_naming_the_file_twice_is_a_config_error(gguf_path: Path) -> None:
    text = (
        f"providers:\n  p: {{kind: transformers, model: {gguf_path}, gguf_file: other.gguf}}\n"
        "graders:\n  g: {type: llm, provider: p, params: {template: '{q}'}}\n"
    )
    with pytest.raises(ConfigError, match=r"providers.p.*name the file in one of them"):
        build_job(parse_config(text, source="job.yaml"), source="job.yaml")
    with pytest.raises(
        ConfigError, match=r"job.yaml:2: providers.p.gguf_file: applies to kind 'transformers'"
    ):
        parse_config(text.replace("transformers", "openai"), source="job.yaml")


async def test_a_missing_file_and_a_gguf_reward_model_fail_with_the_reason(
    gguf_path: Path, tmp_path: Path
) -> None:
    missing = TransformersChatModel(str(tmp_path / "nowhere.gguf"), device="cpu", cache_dir=str(tmp_path))
    with pytest.raises(ChatModelError, match="no GGUF file"):
        missing.load()
    reward = TransformersRewardModel(str(gguf_path), device="cpu")
    with pytest.raises(Exception, match="a GGUF file holds a language model"):
        reward.local_model.load()


def test_a_checkpoint_directory_is_its_own_checkpoint(judge_path: Path) -> None:
    assert TransformersChatModel(str(judge_path), device="cpu").checkpoint_dir() == str(judge_path)
