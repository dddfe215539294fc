from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from openjudge.jobs._datasets import BadRecord, DatasetError, SampleRecord, iter_samples, sample_id


def _records(
    path: Path, *, chunk_size: int = 1 << 16, id_key: str | None = "id"
) -> list[SampleRecord | BadRecord]:
    return list(iter_samples(path, chunk_size=chunk_size, id_key=id_key))


def _good(items: list[SampleRecord | BadRecord]) -> list[SampleRecord]:
    return [r for r in items if isinstance(r, SampleRecord)]


def _bad(items: list[SampleRecord | BadRecord]) -> list[BadRecord]:
    return [r for r in items if isinstance(r, BadRecord)]


def _hash(data: dict[str, JsonValue]) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


# ---------------------------------------------------------------- JSON Lines


def test_jsonl_records_lines_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"q": "a"}\n\n   \n{"q": "b", "n": 2}\r\n{"q": "é"}\n', encoding="utf-8")
    records = _records(path)
    assert records == [
        SampleRecord(line=1, data={"q": "a"}, id=_hash({"q": "a"})),
        SampleRecord(line=4, data={"q": "b", "n": 2}, id=_hash({"q": "b", "n": 2})),
        SampleRecord(line=5, data={"q": "é"}, id=_hash({"q": "é"})),
    ]


def test_jsonl_malformed_lines_are_reported_with_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(b'{"q": 1}\n{"q": 1 "r": 2}\n[1, 2]\n"text"\n\xff\xfe\n{"q": 3}\n')
    records = _records(path)
    assert [r.id for r in _good(records)] == [_hash({"q": 1}), _hash({"q": 3})]
    assert _bad(records) == [
        BadRecord(2, "line 2: invalid JSON (Expecting ',' delimiter: column 9)"),
        BadRecord(3, "line 3: expected a JSON object, got list"),
        BadRecord(4, "line 4: expected a JSON object, got str"),
        BadRecord(5, "line 5: not valid UTF-8 (invalid start byte at byte 0)"),
    ]


def test_on_error_fail_raises_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"q": 1}\n{"q": 2}\n{"q": \n{"q": 4}\n')
    seen: list[SampleRecord | BadRecord] = []
    with pytest.raises(DatasetError) as info:
        seen.extend(iter_samples(path, on_error="fail"))
    assert len(seen) == 2
    assert str(info.value) == f"{path}: line 3: invalid JSON (Expecting value: column 7)"
    assert info.value.line == 3
    assert info.value.path == path
    assert isinstance(info.value, ValueError)
    copy = pickle.loads(pickle.dumps(info.value))
    assert (str(copy), copy.line, copy.path) == (str(info.value), 3, path)


def test_trailing_partial_line_is_a_bad_record(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"q": 1}\n{"q": 2, "r": "hal')
    records = _records(path)
    assert len(_good(records)) == 1
    assert _bad(records) == [
        BadRecord(
            2,
            "line 2: invalid JSON (Unterminated string starting at: column 15); "
            "the last line has no newline: is the file still being written?",
        )
    ]


def test_complete_last_line_without_newline_is_a_record(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"q": 1}\n{"q": 2}')
    assert [r.data for r in _good(_records(path))] == [{"q": 1}, {"q": 2}]


def test_utf8_bom_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"q": 1}\n')
    assert _records(path) == [SampleRecord(1, {"q": 1}, _hash({"q": 1}))]


# ---------------------------------------------------------------- ids


def test_ids_are_stable_across_reads_and_file_names(tmp_path: Path) -> None:
    rows = [{"q": f"question {i}", "n": i} for i in range(20)]
    first = tmp_path / "a.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in rows))
    second = tmp_path / "b.jsonl"
    second.write_bytes(first.read_bytes())
    ids = [r.id for r in _good(_records(first))]
    assert ids == [r.id for r in _good(_records(first))]
    assert ids == [r.id for r in _good(_records(second))]
    assert ids == [_hash(r) for r in rows]  # type: ignore[arg-type]  # rows hold JSON values
    assert len(set(ids)) == 20


def test_duplicate_content_gets_numbered_suffixes(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    # Key order does not matter: the hash is over canonical JSON.
    path.write_text('{"a": 1, "b": 2}\n{"c": 3}\n{"b": 2, "a": 1}\n{"a": 1, "b": 2}\n')
    base = _hash({"a": 1, "b": 2})
    assert [r.id for r in _good(_records(path))] == [base, _hash({"c": 3}), f"{base}-2", f"{base}-3"]
    assert sample_id({"b": 2, "a": 1}) == base


def test_explicit_ids_and_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    lines = [
        {"id": "alpha", "q": 1},
        {"id": 7, "q": 2},
        {"id": "alpha", "q": 3},
        {"id": "7", "q": 4},
        {"id": None, "q": 5},
        {"id": 1.5, "q": 6},
        {"id": "", "q": 7},
        {"id": True, "q": 8},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    records = _records(path)
    assert [(r.line, r.id) for r in _good(records)] == [(1, "alpha"), (2, "7")]
    assert [b.message for b in _bad(records)] == [
        "line 3: duplicate id 'alpha' (first seen at line 1)",
        "line 4: duplicate id '7' (first seen at line 2)",
        "line 5: field 'id' must be a non-empty string or an integer, got None",
        "line 6: field 'id' must be a non-empty string or an integer, got 1.5",
        "line 7: field 'id' must be a non-empty string or an integer, got ''",
        "line 8: field 'id' must be a non-empty string or an integer, got True",
    ]


def test_custom_id_key_and_no_id_key(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"uid": "u1", "id": "x"}\n{"uid": "u2", "id": "x"}\n')
    assert [r.id for r in _good(_records(path, id_key="uid"))] == ["u1", "u2"]
    no_key = _good(_records(path, id_key=None))
    assert [r.id for r in no_key] == [_hash({"uid": "u1", "id": "x"}), _hash({"uid": "u2", "id": "x"})]


def test_explicit_id_cannot_reuse_a_content_id(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    taken = _hash({"q": 1})
    path.write_text(f'{{"q": 1}}\n{{"id": "{taken}"}}\n')
    records = _records(path)
    assert [r.id for r in _good(records)] == [taken]
    assert _bad(records) == [BadRecord(2, f"line 2: duplicate id '{taken}'")]


# ---------------------------------------------------------------- JSON arrays

_ARRAY_ROWS: list[JsonValue] = [
    {"id": "first", "text": 'commas, ] brackets [ and "quotes" and \\ slashes'},
    {"n": 12345678901234567890, "f": -1.5e-7, "nested": [1, [2, {"deep": None}]], "ok": True},
    17,
    {"unicode": "naïve café — 漢字 🎉", "escape": "\u00e9\n\t"},
    {"n": 42},
    ["not", "an", "object"],
    {"long": "x" * 5000},
]


def _write_array(path: Path, rows: list[JsonValue]) -> None:
    body = ",\n\n  ".join(json.dumps(r, ensure_ascii=False) for r in rows)
    path.write_text(f"  [\n  {body}  \n]\n", encoding="utf-8")


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 7, 64, 1 << 16])
def test_json_array_elements_span_chunk_boundaries(tmp_path: Path, chunk_size: int) -> None:
    path = tmp_path / "data.json"
    _write_array(path, _ARRAY_ROWS)
    records = _records(path, chunk_size=chunk_size)
    good = _good(records)
    assert [r.data for r in good] == [row for row in _ARRAY_ROWS if isinstance(row, dict)]
    assert [r.line for r in good] == [1, 2, 4, 5, 7]  # the element's 1-based index
    assert good[0].id == "first"
    assert _bad(records) == [
        BadRecord(3, "element 3 (line 6): expected a JSON object, got int"),
        BadRecord(6, "element 6 (line 12): expected a JSON object, got list"),
    ]


@pytest.mark.parametrize("chunk_size", [1, 5, 1 << 16])
def test_json_array_number_at_chunk_edge_is_not_cut(tmp_path: Path, chunk_size: int) -> None:
    path = tmp_path / "data.json"
    path.write_text("[123456789, 1e10,-0.25]")
    assert [b.message for b in _bad(_records(path, chunk_size=chunk_size))] == [
        "element 1 (line 1): expected a JSON object, got int",
        "element 2 (line 1): expected a JSON object, got float",
        "element 3 (line 1): expected a JSON object, got float",
    ]


@pytest.mark.parametrize("text", ["[]", "  [ \n ]  \n", ""])
def test_json_empty_array(tmp_path: Path, text: str) -> None:
    path = tmp_path / "data.json"
    path.write_text(text)
    assert _records(path, chunk_size=1) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"a": 1}, {"a": 2}', "line 1: unexpected end of file: the JSON array is not closed"),
        ('[{"a": 1},', "line 1: unexpected end of file inside the JSON array"),
        ('[{"a": 1} {"a": 2}]', "line 1: expected ',' or ']' after element 1, got '{'"),
        ('[{"a": 1}]\n\n{"a": 2}', "line 3: unexpected data after the end of the JSON array"),
        ('[{"a": "unterminated', "line 1: element 1: invalid JSON (Unterminated string starting at)"),
    ],
)
@pytest.mark.parametrize("on_error", ["skip", "fail"])
def test_json_syntax_errors_always_raise(tmp_path: Path, text: str, message: str, on_error: str) -> None:
    path = tmp_path / "data.json"
    path.write_text(text)
    with pytest.raises(DatasetError) as info:
        list(iter_samples(path, chunk_size=4, on_error=on_error))  # type: ignore[arg-type]  # parametrized
    assert str(info.value) == f"{path}: {message}"


@pytest.mark.parametrize("chunk_size", [1, 4, 1 << 16])
def test_json_malformed_elements_that_close_are_bad_records(tmp_path: Path, chunk_size: int) -> None:
    path = tmp_path / "data.json"
    path.write_text('[{"a": 1},\n {"a": 2,},\n {"b": [1 2]}, {"c": tru},\n {"d": "}]\\"{" x}, ,\n {"a": 3}]')
    records = _records(path, chunk_size=chunk_size)
    assert [r.data for r in _good(records)] == [{"a": 1}, {"a": 3}]
    assert _bad(records) == [
        BadRecord(2, "element 2 (line 2): invalid JSON (Expecting property name enclosed in double quotes)"),
        BadRecord(3, "element 3 (line 3): invalid JSON (Expecting ',' delimiter)"),
        BadRecord(4, "element 4 (line 3): invalid JSON (Expecting value)"),
        BadRecord(5, "element 5 (line 4): invalid JSON (Expecting ',' delimiter)"),
        BadRecord(6, "element 6 (line 4): invalid JSON (Expecting value)"),
    ]
    with pytest.raises(DatasetError) as info:
        list(iter_samples(path, chunk_size=chunk_size, on_error="fail"))
    assert str(info.value) == (
        f"{path}: element 2 (line 2): invalid JSON (Expecting property name enclosed in double quotes)"
    )


def test_json_not_an_array(tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_text('"just a string"')
    with pytest.raises(DatasetError, match=r"expected a JSON array \('\['\) at the start of the file"):
        list(iter_samples(path, format="json"))


# ---------------------------------------------------------------- CSV


def test_csv_values_are_strings_and_lines_are_row_starts(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text('id,question,answer\n1,"two\nlines",42\n\n2,plain,\n3,short\n4,a,b,extra\n5,"x, y",z\n')
    records = _records(path)
    assert _good(records) == [
        SampleRecord(2, {"id": "1", "question": "two\nlines", "answer": "42"}, "1"),
        SampleRecord(5, {"id": "2", "question": "plain", "answer": ""}, "2"),
        SampleRecord(8, {"id": "5", "question": "x, y", "answer": "z"}, "5"),
    ]
    assert _bad(records) == [
        BadRecord(6, "line 6: expected 3 fields like the header, got 2"),
        BadRecord(7, "line 7: expected 3 fields like the header, got 4"),
    ]


def test_csv_without_id_column_uses_content_ids(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("q,a\nx,1\nx,1\n")
    assert [r.id for r in _good(_records(path))] == [
        _hash({"q": "x", "a": "1"}),
        _hash({"q": "x", "a": "1"}) + "-2",
    ]


def test_csv_duplicate_header_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("q,q\n1,2\n")
    with pytest.raises(DatasetError, match=r"duplicate CSV column names \['q'\]"):
        list(iter_samples(path))


def test_csv_unterminated_quote_is_a_bad_record(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text('q,a\nok,1\n"open,2\n')
    records = _records(path)
    assert [r.data for r in _good(records)] == [{"q": "ok", "a": "1"}]
    assert [b.line for b in _bad(records)] == [3]
    assert _bad(records)[0].message.startswith("line 3: invalid CSV (")


# ---------------------------------------------------------------- format detection


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("d.ndjson", '{"q": 1}\n', [{"q": 1}]),
        ("d.json", '{"q": 1}\n{"q": 2}\n', [{"q": 1}, {"q": 2}]),  # JSON Lines named .json
        ("d.json", '\n [{"q": 1}]', [{"q": 1}]),
        ("d.data", '[{"q": 1}]', [{"q": 1}]),
        ("d.data", '{"q": 1}\n', [{"q": 1}]),
        ("D.CSV", "q\n1\n", [{"q": "1"}]),
    ],
)
def test_auto_format(tmp_path: Path, name: str, text: str, expected: list[dict[str, JsonValue]]) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert [r.data for r in _good(_records(path))] == expected


def test_unknown_format_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "d.txt"
    path.write_text("q,a\n")
    with pytest.raises(DatasetError, match="cannot tell the dataset format"):
        list(iter_samples(path))
    with pytest.raises(DatasetError, match="cannot open the dataset: no such file"):
        iter_samples(tmp_path / "missing.jsonl", format="jsonl")  # raised at the call, not on iteration


def test_bad_arguments(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("")
    with pytest.raises(ValueError, match="chunk_size"):
        iter_samples(path, chunk_size=0)
    with pytest.raises(ValueError, match="on_error"):
        iter_samples(path, on_error="ignore")  # type: ignore[arg-type]  # deliberately wrong
    with pytest.raises(ValueError, match="format must be"):
        iter_samples(path, format="xml")  # type: ignore[arg-type]  # deliberately wrong


# ---------------------------------------------------------------- property: the array parser agrees with json

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(_json_values, max_size=8),
    chunk_size=st.integers(min_value=1, max_value=40),
    indent=st.sampled_from([None, 0, 2]),
    ascii_only=st.booleans(),
)
def test_json_array_parser_matches_json_loads(
    tmp_path: Path, rows: list[JsonValue], chunk_size: int, indent: int | None, ascii_only: bool
) -> None:
    path = tmp_path / "prop.json"
    path.write_text(json.dumps(rows, indent=indent, ensure_ascii=ascii_only), encoding="utf-8")
    records = list(iter_samples(path, chunk_size=chunk_size, id_key=None))
    assert len(records) == len(rows)
    for index, (record, row) in enumerate(zip(records, rows, strict=True), start=1):
        assert record.line == index
        if isinstance(row, dict):
            assert isinstance(record, SampleRecord)
            assert record.data == row
        else:
            assert isinstance(record, BadRecord)


# ---------------------------------------------------------------- records the parser cannot hold


_DEEP = "[" * 100_000 + "]" * 100_000


def test_jsonl_deep_nesting_and_huge_numbers_are_bad_records_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"q": ' + _DEEP + '}\n{"n": ' + "7" * 5000 + '}\n{"q": 1}\n', encoding="utf-8")
    records = _records(path)
    assert _bad(records) == [
        BadRecord(
            1, "line 1: JSON nested too deeply to read (about 1,000 levels or more); flatten the record"
        ),
        BadRecord(
            2,
            "line 2: a number has more than 4,300 digits (Python's limit for reading integers); "
            "write it as a string",
        ),
    ]
    assert [r.data for r in _good(records)] == [{"q": 1}]


@pytest.mark.parametrize("chunk_size", [1, 7, 4096, 1 << 16])
def test_json_array_skips_unreadable_elements_and_reads_the_rest(tmp_path: Path, chunk_size: int) -> None:
    path = tmp_path / "data.json"
    path.write_text(
        '[{"q": 1}, {"deep": '
        + _DEEP
        + '},\n {"n": '
        + "9" * 5000
        + '}, {"s": "]},[\\"x"}, '
        + "9" * 5000
        + ', {"q": 2}]',
        encoding="utf-8",
    )
    records = _records(path, chunk_size=chunk_size)
    assert [(type(r).__name__, r.line) for r in records] == [
        ("SampleRecord", 1),
        ("BadRecord", 2),
        ("BadRecord", 3),
        ("SampleRecord", 4),
        ("BadRecord", 5),
        ("SampleRecord", 6),
    ]
    bad = _bad(records)
    assert bad[0].message.startswith("element 2 (line 1): JSON nested too deeply")
    assert bad[1].message.startswith("element 3 (line 2): a number has more than 4,300 digits")
    assert [r.data for r in _good(records)] == [{"q": 1}, {"s": ']},["x'}, {"q": 2}]


def test_ids_of_bad_records_are_reserved(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(
        '{"id": "invalid-line-2", "q": 1}\n{broken\n{"id": "invalid-line-x", "q": 2}\n', encoding="utf-8"
    )
    records = _records(path)
    assert [r.id for r in records] == ["invalid-line-1", "invalid-line-2", "invalid-line-x"]
    assert records[0] == BadRecord(
        1,
        "line 1: id 'invalid-line-2' is reserved for malformed records (ids 'invalid-line-<number>'); "
        "give this record another id",
    )
