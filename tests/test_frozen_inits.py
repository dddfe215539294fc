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
