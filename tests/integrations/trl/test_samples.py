"""How TRL's arguments become samples: text and conversational formats, columns by name."""

from __future__ import annotations

import numpy as np
import pytest

from openjudge.integrations.trl._samples import message_text, plain, samples_from_batch


def test_standard_format_with_columns_and_ids() -> None:
    samples = samples_from_batch(
        ["2+2?", "3+3?"],
        ["4", "six"],
        [[7, 8], (9,)],
        {
            "answer": ["4", "6"],
            "level": [np.int64(1), np.int64(2)],
            "trainer_state": object(),
            "log_metric": print,
        },
    )
    assert samples[0] == {
        "prompt": "2+2?",
        "response": "4",
        "completion": "4",
        "messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}],
        "completion_ids": [7, 8],
        "answer": "4",
        "level": 1,
        "item": {"prompt": "2+2?", "answer": "4", "level": 1},
    }
    assert samples[1]["completion_ids"] == [9] and samples[1]["level"] == 2


def test_the_item_is_the_dataset_row_without_the_completion() -> None:
    deep: object = {}
    for _ in range(3000):  # past the interpreter's recursion limit
        deep = {"a": deep}
    completion = [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": deep}}]}]
    (sample,) = samples_from_batch(
        [[{"role": "user", "content": "q"}]], [completion], None, {"answer": ["4"]}
    )
    assert sample["item"] == {"prompt": [{"role": "user", "content": "q"}], "answer": "4"}
    (own,) = samples_from_batch(["q"], ["c"], None, {"item": [{"sku": 1}]})
    assert own["item"] == {"sku": 1}  # a column named item is the user's


def test_conversational_format() -> None:
    prompt: list[dict[str, object]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2+2?"},
    ]
    completion: list[dict[str, object]] = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "calc", "arguments": {"x": 2}}}],
        },
        {"role": "tool", "content": "4"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "It is "}, {"type": "text", "text": "4."}],
        },
    ]
    (sample,) = samples_from_batch([prompt], [completion])
    assert sample["prompt"] == "What is 2+2?"  # the last user message
    assert sample["response"] == "It is 4."  # the last assistant message, text parts joined
    assert sample["messages"] == [*prompt, *completion]
    assert sample["completion"] == completion
    assert "completion_ids" not in sample


def test_columns_cannot_shadow_derived_fields_and_odd_lengths_are_skipped() -> None:
    (sample,) = samples_from_batch(["p"], ["c"], None, {"response": ["spoof"], "scalar": 3, "pair": [1, 2]})
    assert sample["response"] == "c"
    assert "scalar" not in sample and "pair" not in sample


def test_mismatched_lengths_and_bad_items_are_programmer_errors() -> None:
    with pytest.raises(ValueError, match="2 prompts for 1 completions"):
        samples_from_batch(["a", "b"], ["c"])
    with pytest.raises(ValueError, match="completion_ids"):
        samples_from_batch(["a"], ["c"], [[1], [2]])
    with pytest.raises(TypeError, match=r"completions\[0\] must be a string or a list of message dicts"):
        samples_from_batch(["a"], [[1, 2]])  # type: ignore[list-item]  # deliberately wrong


def test_helpers() -> None:
    assert message_text({"role": "user"}) == ""
    assert message_text({"content": ["a", {"type": "image"}, {"type": "text", "text": "b"}]}) == "ab"
    assert plain({"a": (np.float32(0.5), None), 1: object}) == {"a": [0.5, None], "1": str(object)}
