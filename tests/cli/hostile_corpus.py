"""Generators of hostile dataset records for the CLI fuzz test (``tests/cli/test_fuzz.py``).

Each generator makes the text of one record (a JSON Lines line without its newline, which
is also a JSON array element; or a CSV row) from a seeded ``random.Random`` and an index.
A dataset mixes good records (``{"id": "g<n>", ...}``, which must each be graded exactly
once) with hostile ones, every one of which must cost at most its own result.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import JsonValue

from openjudge.jobs._datasets import sample_id

__all__ = ["CAP", "CSV_HEADER", "CSV_HOSTILE", "HOSTILE", "Record", "csv_dataset", "good", "json_dataset"]

CAP = 256 * 1024
"""The fuzz job's ``data.max_record_bytes``."""


@dataclass(frozen=True)
class Record:
    """One record's text and, for a good one, its id."""

    text: bytes
    good_id: str | None = None
    in_arrays: bool = True  # false: would stop a JSON array (it never closes)


Generator = Callable[[random.Random, int], Record]


def _obj(**fields: object) -> bytes:
    return json.dumps(fields).encode()  # ASCII: \u escapes, lone surrogates included


def good(rng: random.Random, i: int) -> Record:
    answer = rng.choice(["1", "2", "yes"])
    return Record(_obj(id=f"g{i}", answer=answer, expected="1", score=rng.random()), good_id=f"g{i}")


def _surrogate(rng: random.Random) -> str:
    return chr(rng.randint(0xD800, 0xDFFF))


def surrogate_in_id(rng: random.Random, i: int) -> Record:
    return Record(_obj(id=f"h{i}{_surrogate(rng)}", answer="1", expected="1", score=1))


def surrogate_in_response(rng: random.Random, i: int) -> Record:
    return Record(_obj(id=f"h{i}", answer=f"x{_surrogate(rng)}y", expected="1", score=0))


def surrogate_in_a_key_and_no_id(rng: random.Random, i: int) -> Record:
    return Record(json.dumps({f"k{_surrogate(rng)}": i, "answer": "1", "expected": "1", "score": 1}).encode())


def surrogate_in_reference(rng: random.Random, i: int) -> Record:
    return Record(_obj(id=f"h{i}", answer="1", expected=_surrogate(rng) * 3, score=1))


_NUMBERS = [
    "1.7e308", "-1.7e308", "1e308", "-1e308", "5e-324", "-0.0", "1e400", "-1e400", "NaN", "Infinity",
    "-Infinity", "9" * 4300, "9" * 5000, "0." + "0" * 5000 + "1", "1" + "0" * 400 + ".0", "true", '"1e308"',
]  # fmt: skip


def odd_score(rng: random.Random, i: int) -> Record:
    number = rng.choice(_NUMBERS)
    return Record(f'{{"id": "h{i}", "answer": "1", "expected": "1", "score": {number}}}'.encode())


def deep(rng: random.Random, i: int) -> Record:
    depth = rng.choice([900, 990, 1_500, 20_000])
    opener, closer = rng.choice([("[", "]"), ('{"a": ', "}"), ('["]},{\\"", ', "]")])
    return Record(f'{{"id": "h{i}", "answer": {opener * depth}1{closer * depth}, "expected": "1"}}'.encode())


def huge_line(rng: random.Random, i: int) -> Record:
    size = rng.choice([CAP - 200, CAP + 1, 12 * CAP])
    return Record(_obj(id=f"h{i}", answer="x" * size, expected="1", score=1))


def control_characters(rng: random.Random, i: int) -> Record:
    raw = rng.choice(["\x00", "\x1b[31m", "\r", "\x0b", "\u2028", "\u202e", "\ufeff", "\x7f"])
    if rng.random() < 0.5:  # escaped: valid JSON
        return Record(_obj(id=f"h{i}{raw}", answer=f"a{raw}b", expected=raw, score=1))
    return Record(f'{{"id": "h{i}", "answer": "a{raw}b", "expected": "1"}}'.encode())  # raw: invalid JSON


def bom_inside(rng: random.Random, i: int) -> Record:
    return Record(b"\xef\xbb\xbf" + _obj(id=f"h{i}", answer="1", expected="1"))


def invalid_utf8(rng: random.Random, i: int) -> Record:
    junk = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"])
    return Record(b'{"id": "h' + str(i).encode() + b'", "answer": "a' + junk + b'b", "expected": "1"}')


def odd_ids(rng: random.Random, i: int) -> Record:
    value = rng.choice(
        [
            '""',
            "true",
            "1.5",
            "{}",
            "[]",
            "null",
            '"invalid-line-1"',
            f'"{"i" * 10_000}{i}"',
            f'"<script>{i}"',
            str(10**30 + i),
        ]
    )
    return Record(f'{{"id": {value}, "answer": "1", "expected": "1"}}'.encode())


def duplicate_of_a_good_id(rng: random.Random, i: int) -> Record:
    return Record(_obj(id="g0", answer="2", expected="1", score=1))  # g0 is always the first record


def not_an_object(rng: random.Random, i: int) -> Record:
    return Record(rng.choice([b"[]", b'"text"', b"null", b"5", b"[1, {}]"]))


def odd_fields(rng: random.Random, i: int) -> Record:
    answer = rng.choice(["5", "[1, 2]", "null", '{"a": [[[[]]]]}', "true", json.dumps("y" * 50_000)])
    return Record(f'{{"id": "h{i}", "answer": {answer}, "expected": 1, "score": "high"}}'.encode())


def malformed_but_closed(rng: random.Random, i: int) -> Record:
    return Record(rng.choice([b'{"id": "x", }', b'{"id" "x"}', b"{'id': 'x'}", b'{"a": tru}', b"{,}"]))


def truncated(rng: random.Random, i: int) -> Record:
    return Record(b'{"id": "h' + str(i).encode() + b'", "answer": "never closed', in_arrays=False)


def colliding_content_id(rng: random.Random, i: int) -> Record:
    # An explicit id equal to the content id another record (without an id) would get.
    twin: dict[str, JsonValue] = {"answer": "twin", "expected": "1"}
    return Record(_obj(id=sample_id(twin), answer="1", expected="1") + b"\n" + json.dumps(twin).encode())


HOSTILE: list[Generator] = [
    surrogate_in_id,
    surrogate_in_response,
    surrogate_in_a_key_and_no_id,
    surrogate_in_reference,
    odd_score,
    deep,
    huge_line,
    control_characters,
    bom_inside,
    invalid_utf8,
    odd_ids,
    duplicate_of_a_good_id,
    not_an_object,
    odd_fields,
    malformed_but_closed,
    truncated,
]


def _records(rng: random.Random, count: int, hostile: list[Generator]) -> list[Record]:
    records = [good(rng, 0)]
    for i in range(1, count):
        records.append(good(rng, i) if rng.random() < 0.4 else rng.choice(hostile)(rng, i))
    return records


def json_dataset(seed: int, count: int, *, array: bool) -> tuple[bytes, list[Record]]:
    """A JSON Lines file (or a JSON array) of ``count`` records, behind a byte order mark."""
    rng = random.Random(seed)
    hostile = [g for g in HOSTILE if not array or g(random.Random(0), 0).in_arrays]
    records = _records(rng, count, hostile)
    if not array:
        records.append(colliding_content_id(rng, count))  # two lines: one record each
        return b"\xef\xbb\xbf" + b"".join(r.text + b"\n" for r in records), records
    body = b",\n ".join(r.text for r in records)
    return b"\xef\xbb\xbf[" + body + b"\n]\n", records


CSV_HEADER = b"id,answer,expected,score"


def _csv_good(rng: random.Random, i: int) -> Record:
    return Record(f"g{i},{rng.choice(['1', '2'])},1,0.5".encode(), good_id=f"g{i}")


CSV_HOSTILE: list[Generator] = [
    lambda rng, i: Record(f"h{i},a".encode() + rng.choice([b"\xff", b"\xc3("]) + b",1,1"),  # not UTF-8
    lambda rng, i: Record(f'h{i},"two\nlines, and ""quotes""",1,1'.encode()),
    lambda rng, i: Record(f"h{i},1,1".encode()),  # a field short
    lambda rng, i: Record(f"h{i},1,1,1,1".encode()),  # a field over
    lambda rng, i: Record(f"h{i},a\x00b,1,1".encode()),  # NUL
    lambda rng, i: Record(f"h{i},{'x' * (CAP + 10)},1,1".encode()),  # past the cap
    lambda rng, i: Record(f'h{i},"{"y" * 150_000}",1,1'.encode()),  # past csv's field limit only
    lambda rng, i: Record(f"h{i},=HYPERLINK(1),\u202e,1e400".encode()),
    lambda rng, i: Record(b"g0,dup,1,1"),  # a duplicate id
    lambda rng, i: Record(f"h{i},a\rb,1,1".encode()),  # a bare carriage return: a line break to csv
]


def csv_dataset(seed: int, count: int) -> tuple[bytes, list[Record]]:
    rng = random.Random(seed)
    records = [_csv_good(rng, 0)]
    for i in range(1, count):
        records.append(_csv_good(rng, i) if rng.random() < 0.4 else rng.choice(CSV_HOSTILE)(rng, i))
    return b"\xef\xbb\xbf" + CSV_HEADER + b"\n" + b"".join(r.text + b"\n" for r in records), records
