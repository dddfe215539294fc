"""Hostile records in each dataset format cost one record, never the file.

A record past ``max_record_bytes`` is a bad record and is read past in bounded memory;
bytes that are not UTF-8 cost their line or element; an id holding a lone surrogate is
refused (it could not round-trip through the results file), while a surrogate elsewhere in
a record keeps it usable, with a stable content id.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from openjudge.jobs._datasets import BadRecord, SampleRecord, iter_samples, sample_id
from openjudge.jobs._engine import count_records

_CAP = 64 * 1024
_HUGE = 4 * 1024 * 1024  # a line 64 times the cap; reading it stays under 8 times the cap (file buffers)


def _read(path: Path, **kwargs: object) -> list[SampleRecord | BadRecord]:
    return list(iter_samples(path, max_record_bytes=_CAP, **kwargs))  # type: ignore[arg-type]  # test kwargs


def _peak_while_reading(path: Path) -> tuple[list[SampleRecord | BadRecord], int]:
    tracemalloc.start()
    try:
        records = _read(path)
        return records, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_jsonl_line_past_the_cap_is_a_bad_record_read_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(
        '{"id": "a", "q": 1}\n{"id": "big", "q": "' + "x" * _HUGE + '"}\n{"id": "b", "q": 2}\n',
        encoding="utf-8",
    )
    records, peak = _peak_while_reading(path)
    assert [r.id for r in records] == ["a", "invalid-line-2", "b"]
    assert records[1] == BadRecord(
        2,
        "line 2: longer than the 65,536-byte limit (data.max_record_bytes; max_record_bytes= in "
        "iter_samples): raise the limit or shorten the record",
    )
    assert peak < 8 * _CAP, f"peak {peak:,} bytes for a {_HUGE:,}-byte line"


def test_a_line_exactly_at_the_cap_is_read(tmp_path: Path) -> None:
    line = json.dumps({"q": "y" * 100})
    path = tmp_path / "data.jsonl"
    path.write_text(line + "\n" + line.replace("y", "z") + "x\n", encoding="utf-8")
    records = list(iter_samples(path, max_record_bytes=len(line)))
    assert isinstance(records[0], SampleRecord) and records[0].data == {"q": "y" * 100}
    assert isinstance(records[1], BadRecord) and "longer than the" in records[1].message


def test_a_json_element_past_the_cap_is_a_bad_record_read_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text(
        '[{"id": "a"},\n {"id": "big", "q": "' + "x" * _HUGE + '"},\n {"id": "b"}]', encoding="utf-8"
    )
    records, peak = _peak_while_reading(path)
    assert [r.id for r in records] == ["a", "invalid-line-2", "b"]
    assert isinstance(records[1], BadRecord)
    assert records[1].message.startswith("element 2 (line 2): longer than the 65,536-character limit")
    assert peak < 8 * _CAP, f"peak {peak:,} bytes for a {_HUGE:,}-character element"


def test_a_csv_line_past_the_cap_is_a_bad_record_read_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("id,q\na,1\nbig," + "x" * _HUGE + "\nb,2\n", encoding="utf-8")
    records, peak = _peak_while_reading(path)
    assert [r.id for r in records] == ["a", "invalid-line-3", "b"]
    assert isinstance(records[1], BadRecord)
    assert records[1].message.startswith("line 3: longer than the 65,536-character limit")
    assert peak < 8 * _CAP, f"peak {peak:,} bytes for a {_HUGE:,}-character line"


@pytest.mark.parametrize(
    ("name", "raw", "bad"),
    [
        ("data.jsonl", b'{"id": "a"}\n{"id": "b", "q": "\xff"}\n{"id": "c"}\n', "line 2: not valid UTF-8"),
        (
            "data.json",
            b'[{"id": "a"},\n {"id": "b", "q": "\xed\xa0\x80"},\n {"id": "c"}]',
            "element 2 (line 2): not valid UTF-8",
        ),
        ("data.csv", b"id,q\na,1\nb,\xc3\nc,3\n", "line 3: not valid UTF-8"),
    ],
)
def test_bytes_that_are_not_utf8_cost_their_record_only(
    tmp_path: Path, name: str, raw: bytes, bad: str
) -> None:
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + raw)  # behind a byte order mark, too
    records = _read(path)
    assert [r.id for r in records if isinstance(r, SampleRecord)] == ["a", "c"]
    (bad_record,) = [r for r in records if isinstance(r, BadRecord)]
    assert bad_record.message.startswith(bad)


def test_a_csv_header_that_is_not_utf8_stops_the_file(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_bytes(b"id,q\xff\na,1\n")
    with pytest.raises(Exception, match="the CSV header is not valid UTF-8"):
        _read(path)


def test_an_id_with_a_lone_surrogate_is_refused_and_other_surrogates_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(
        '{"id": "a\\udc00", "q": 1}\n{"q": "x\\ud800y"}\n{"q": "x\\ud801y"}\n{"id": "ok", "r": "\\udfff"}\n',
        encoding="utf-8",
    )
    records = _read(path)
    assert records[0] == BadRecord(
        1,
        "line 1: id 'a\\udc00' holds a lone surrogate (a \\u escape of half a UTF-16 pair), which is not "
        "text and cannot be written as an id; give this record an id of valid text",
    )
    second, third, fourth = records[1:]
    assert isinstance(second, SampleRecord) and second.data == {"q": "x\ud800y"}
    assert isinstance(third, SampleRecord) and second.id != third.id  # two surrogates, two ids
    assert second.id == sample_id({"q": "x\ud800y"}) and len(second.id) == 16  # stable: rerun-safe
    assert isinstance(fourth, SampleRecord) and fourth.id == "ok"


def test_counting_records_reads_long_lines_in_pieces(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"q": 1}\n\n   \n{"q": "' + "x" * 300_000 + '"}\n{"q": 3}', encoding="utf-8")
    assert count_records(path, "auto") == 3
