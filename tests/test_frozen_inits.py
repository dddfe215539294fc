"""Frozen dataclasses with a hand-written ``__init__`` (hot-path types) still take every field."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from openjudge.graders.judge_grader import PreparedCall
from openjudge.models.chat_model import ChatRequest
from openjudge.results import TokenUsage


@pytest.mark.parametrize("cls", [TokenUsage, ChatRequest, PreparedCall])
def test_the_init_takes_exactly_the_fields_and_sets_each(cls: type) -> None:
    fields = [f.name for f in dataclasses.fields(cls)]
    assert list(inspect.signature(cls).parameters) == fields
    values = {name: object() for name in fields}
    made = cls(**values)
    assert all(getattr(made, name) is value for name, value in values.items())
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, fields[0], 1)


def test_a_parametrized_prepared_call_builds_as_the_plain_one() -> None:
    """The typed idiom a subclass's prepare_call writes: no __dict__, still frozen."""
    typed = PreparedCall[tuple[str, ...]]([{"role": "user", "content": "x"}], ("a", "b"))
    assert typed == PreparedCall([{"role": "user", "content": "x"}], ("a", "b"))
    assert not hasattr(typed, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        typed.context = ("c",)  # type: ignore[misc]
