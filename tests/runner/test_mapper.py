"""Dict mappers: the one-lookup path for top-level fields reads what the dotted-path walk reads."""

from __future__ import annotations

from collections import defaultdict
from types import MappingProxyType
from typing import Any

import pytest

from openjudge.runner._mapper import CompiledMapper, MissingFieldError

FLAT = {"query": "question", "response": "answer"}
SAMPLE = {"question": "What is 2 + 2?", "answer": "4", "unused": 1}


@pytest.mark.parametrize("sample", [SAMPLE, MappingProxyType(SAMPLE)], ids=["dict", "mapping"])
def test_top_level_fields_are_renamed(sample: Any) -> None:
    assert CompiledMapper(FLAT)(sample) == {"query": "What is 2 + 2?", "response": "4"}


def test_a_missing_top_level_field_is_named() -> None:
    with pytest.raises(MissingFieldError) as missing:
        CompiledMapper(FLAT)({"question": "q"})
    assert str(missing.value) == "sample has no field 'answer'"


def test_a_dict_subclass_is_walked_so_a_default_is_never_invented() -> None:
    sample: defaultdict[str, str] = defaultdict(lambda: "made up", question="q")
    with pytest.raises(MissingFieldError):
        CompiledMapper(FLAT)(sample)
    assert "answer" not in sample


def test_dotted_and_flat_paths_mix() -> None:
    mapper = CompiledMapper({"query": "question", "first": "turns.0.text", "all": "turns.text"})
    sample = {"question": "q", "turns": [{"text": "a"}, {"text": "b"}]}
    assert mapper(sample) == {"query": "q", "first": "a", "all": ["a", "b"]}


def test_a_single_top_level_field_is_renamed() -> None:
    assert CompiledMapper({"response": "answer"})(SAMPLE) == {"response": "4"}
