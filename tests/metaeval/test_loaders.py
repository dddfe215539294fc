"""Labelled-data loaders: our formats, the benchmarks' formats, and errors that name file, line, field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openjudge.jobs._datasets import DatasetError
from openjudge.metaeval._items import PairwiseSet, PointwiseSet
from openjudge.metaeval._loaders import LabelledDataError, load_labelled


def write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_native_pairs_with_extra_fields_and_ids(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "pairs.jsonl",
        [
            {
                "id": "p1",
                "prompt": "2+2?",
                "response_a": "4",
                "response_b": "5",
                "label": "a",
                "topic": "math",
            },
            {"query": "capital of France?", "response_a": "Lyon", "response_b": "Paris", "label": "B"},
            {"prompt": "hi", "response_a": "hello", "response_b": "hey", "label": "Tie", "reference": "hi!"},
        ],
    )
    data = load_labelled(path)
    assert isinstance(data, PairwiseSet) and data.format == "pairwise" and data.source == str(path)
    first, second, third = data.items
    assert (first.id, first.label, first.extra) == ("p1", "A", {"topic": "math"})
    assert (second.prompt, second.label, len(second.id)) == ("capital of France?", "B", 16)
    assert (third.label, third.reference, third.line) == ("tie", "hi!", 3)
    sample = first.pair_sample(swapped=True)
    assert sample["response_a"] == "5" and sample["response_b"] == "4" and sample["responses"] == ["5", "4"]
    assert sample["query"] == sample["prompt"] == "2+2?" and sample["topic"] == "math"
    assert first.single_sample("B")["response"] == "5"


def test_native_pointwise_from_csv(tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    path.write_text("prompt,response,label\nq1,r1,4\nq2,r2,2.5\n", encoding="utf-8")
    data = load_labelled(path)
    assert isinstance(data, PointwiseSet)
    assert [(i.prompt, i.response, i.label) for i in data.items] == [("q1", "r1", 4.0), ("q2", "r2", 2.5)]
    assert data.items[0].single_sample() == {"prompt": "q1", "query": "q1", "response": "r1"}


def test_judgebench(tmp_path: Path) -> None:
    record = {
        "pair_id": "e302",
        "original_id": 1420,
        "source": "mmlu-pro-law",
        "question": "Q?",
        "response_model": "gpt-4o",
        "response_A": "FFFFF",
        "response_B": "AAAAA",
        "label": "A>B",
    }
    data = load_labelled(
        write_jsonl(tmp_path / "jb.jsonl", [record, {**record, "pair_id": "x", "label": "B>A"}])
    )
    assert data.format == "judgebench"
    assert [(i.id, i.label) for i in data.items] == [("e302", "A"), ("x", "B")]
    assert isinstance(data, PairwiseSet)
    item = data.items[0]
    assert (item.prompt, item.response_a) == ("Q?", "FFFFF")
    assert item.extra == {"original_id": 1420, "source": "mmlu-pro-law", "response_model": "gpt-4o"}


def test_llmbar_json_array(tmp_path: Path) -> None:
    path = tmp_path / "dataset.json"
    path.write_text(
        json.dumps(
            [
                {"input": "Summarize.", "output_1": "good", "output_2": "bad", "label": 1},
                {"input": "Count.", "output_1": "19", "output_2": "9", "label": 2},
            ]
        ),
        encoding="utf-8",
    )
    data = load_labelled(path)
    assert data.format == "llmbar" and [i.label for i in data.items] == ["A", "B"]


def test_pandalm_majority_ties_and_nan_input(tmp_path: Path) -> None:
    base = {"instruction": "Rewrite it.", "response1": "r1", "response2": "r2"}
    path = tmp_path / "testset-v1.json"
    # The real file writes a missing input as a bare NaN.
    path.write_text(
        "["
        + ", ".join(
            [
                json.dumps(
                    {
                        **base,
                        "idx": 0,
                        "input": "The text.",
                        "annotator1": 2,
                        "annotator2": 2,
                        "annotator3": 1,
                    }
                ),
                json.dumps({**base, "idx": 1, "annotator1": 0, "annotator2": 0, "annotator3": 1})[:-1]
                + ', "input": NaN}',
                json.dumps(
                    {**base, "idx": 2, "input": "", "annotator1": 1, "annotator2": 2, "annotator3": 0}
                ),
            ]
        )
        + "]",
        encoding="utf-8",
    )
    data = load_labelled(path)
    assert data.format == "pandalm"
    assert [(i.id, i.label) for i in data.items] == [
        ("0", "B"),
        ("1", "tie"),
        ("2", "A"),
    ]  # no majority: annotator1
    assert isinstance(data, PairwiseSet)
    assert data.items[0].prompt == "Rewrite it.\n\nThe text."
    assert data.items[1].prompt == data.items[2].prompt == "Rewrite it."


def conversation(question_1: str, answer_1: str, question_2: str, answer_2: str) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": question_1},
        {"role": "assistant", "content": answer_1},
        {"role": "user", "content": question_2},
        {"role": "assistant", "content": answer_2},
    ]


def test_mtbench_human_turns(tmp_path: Path) -> None:
    vote = {
        "question_id": 81,
        "model_a": "alpaca-13b",
        "model_b": "gpt-4",
        "judge": "expert_0",
        "conversation_a": conversation("Write a blog.", "a1", "Rewrite it.", "a2"),
        "conversation_b": conversation("Write a blog.", "b1", "Rewrite it.", "b2"),
    }
    path = write_jsonl(
        tmp_path / "mt.jsonl",
        [{**vote, "turn": 1, "winner": "model_b"}, {**vote, "turn": 2, "winner": "tie (bothbad)"}],
    )
    data = load_labelled(path)
    assert data.format == "mtbench-human" and isinstance(data, PairwiseSet)
    one, two = data.items
    assert (one.prompt, one.response_a, one.response_b, one.label) == ("Write a blog.", "a1", "b1", "B")
    assert "context_a" not in one.extra and one.extra["judge"] == "expert_0"
    assert (two.prompt, two.response_a, two.response_b, two.label) == ("Rewrite it.", "a2", "b2", "tie")
    assert two.extra["context_a"] == "User: Write a blog.\n\nAssistant: a1"
    assert two.extra["context_b"] == "User: Write a blog.\n\nAssistant: b1"


def test_bad_records_name_file_line_and_field(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "pairs.jsonl",
        [
            {"prompt": "q", "response_a": "a", "response_b": "b", "label": "A"},
            {"prompt": "q", "response_a": "a", "response_b": "b", "label": "C"},
            {"prompt": "q", "response_a": 3, "response_b": "b", "label": "B"},
        ],
    )
    with pytest.raises(LabelledDataError) as caught:
        load_labelled(path)
    assert isinstance(caught.value, DatasetError)  # the CLI reports it and exits 1
    assert caught.value.problems == [
        f"{path}:2: label: expected 'A', 'B' or 'tie' (got 'C')",
        f"{path}:3: response_a: expected a string, got int",
    ]
    skipped = load_labelled(path, skip_bad=True)
    assert len(skipped.items) == 1 and len(skipped.skipped) == 2


def test_invalid_json_line_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(
        '{"prompt": "q", "response_a": "a", "response_b": "b", "label": "A"}\n{"prompt": \n', encoding="utf-8"
    )
    with pytest.raises(LabelledDataError, match=r"pairs\.jsonl: line 2: invalid JSON"):
        load_labelled(path)


def test_unknown_fields_ask_for_a_format(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "x.jsonl", [{"question": "q", "answer": "a"}])
    with pytest.raises(LabelledDataError, match=r"x\.jsonl:1: cannot tell the format .* pass --format"):
        load_labelled(path)


def test_explicit_format_and_limit(tmp_path: Path) -> None:
    rows = [{"prompt": f"q{i}", "response": "r", "label": i} for i in range(5)]
    data = load_labelled(write_jsonl(tmp_path / "s.jsonl", rows), format="pointwise", limit=3)
    assert [i.label for i in data.items] == [0.0, 1.0, 2.0]
    with pytest.raises(LabelledDataError, match="label: expected 'A', 'B' or 'tie'"):
        load_labelled(tmp_path / "s.jsonl", format="pairwise")


def test_a_missing_file_is_a_dataset_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file"):
        load_labelled(tmp_path / "absent.jsonl")
