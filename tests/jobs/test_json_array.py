"""The JSON array reader yields what ``json.loads`` yields, element by element, and one bad
element never stops the others.

The property is checked on generated arrays mixing good elements (any JSON: deep-ish
nesting, long numbers, escapes, lone-surrogate escapes, non-ASCII) with bad ones of every
kind the reader reports: nested past the parser's limit, an integer past Python's digit
limit, malformed but closed, longer than the size cap, and holding bytes that are not
UTF-8. Elements are separated by random whitespace and newlines, read in random chunk
sizes, and each element's file line is checked too.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openjudge.jobs._json_array import (
    ElementTooLarge,
    JsonArrayReader,
    JsonArraySyntaxError,
    NotUtf8,
    UnreadableElement,
)

_CAP = 2_000  # characters: the reader's max_element in the property

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**300, max_value=10**1200)  # long, but under the 4,300-digit limit
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
_values = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@dataclass(frozen=True)
class _Element:
    text: bytes
    expected: object  # the json.loads value, or the type of error the reader reports

    def __repr__(self) -> str:  # elements run to megabytes: a failure report shows their start
        return f"_Element({self.text[:60]!r}... ({len(self.text):,} bytes), {self.expected!r:.60})"

    def allowed(self) -> tuple[type[BaseException], ...]:
        """The errors the reader may report for a bad element: its own, or "too large" past the cap."""
        assert isinstance(self.expected, type) and issubclass(self.expected, BaseException)
        return (self.expected, ElementTooLarge) if len(self.text) > _CAP else (self.expected,)


@st.composite
def _good(draw: st.DrawFn) -> _Element:
    value = draw(_values)
    depth = draw(st.integers(min_value=0, max_value=40))  # nested, but far from the recursion limit
    text = json.dumps(value, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 0, 1])))
    text = "[" * depth + text + "]" * depth
    if len(text) > _CAP:
        text = json.dumps(None)
    return _Element(text.encode("utf-8", "surrogatepass"), json.loads(text))


_TRICKY_STRING = json.dumps('"]},[{\\ \u00e9 \ud83d\ude00')  # brackets and escapes a skip must respect


@st.composite
def _deep(draw: st.DrawFn) -> _Element:
    depth = draw(st.integers(min_value=3_000, max_value=6_000))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"k":', "}"), (f"[{_TRICKY_STRING},", "]")]))
    return _Element((opener * depth + "0" + closer * depth).encode(), RecursionError)


@st.composite
def _long_integer(draw: st.DrawFn) -> _Element:
    digits = draw(st.integers(min_value=4_301, max_value=6_000))
    inside = draw(st.booleans())
    text = "9" * digits
    return _Element((f'{{"n": {text}}}' if inside else text).encode(), ValueError)


_MALFORMED = [
    '{"a": 1,}',
    '{"a" 1}',
    '{"a": tru}',
    "[1 2]",
    '{"s": "]}\\"{[", x}',
    "[1,,2]",
    "{'single': 1}",
    '{"a": [1, 2] "b"}',
    "nul",
    "-",
]


@st.composite
def _malformed(draw: st.DrawFn) -> _Element:
    return _Element(draw(st.sampled_from(_MALFORMED)).encode(), json.JSONDecodeError)


@st.composite
def _too_large(draw: st.DrawFn) -> _Element:
    size = draw(st.integers(min_value=_CAP + 1, max_value=4 * _CAP))
    shape = draw(st.sampled_from(["string", "list", "number"]))
    if shape == "string":
        text = json.dumps("x\\" * (size // 2))
    elif shape == "list":
        text = json.dumps(list(range(size // 2)))
    else:
        text = "1." + "5" * size
    return _Element(text.encode(), ElementTooLarge)


@st.composite
def _not_utf8(draw: st.DrawFn) -> _Element:
    junk = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]))
    return _Element(b'{"text": "a' + junk + b'b"}', NotUtf8)


_elements = st.one_of(
    _good(), _good(), _good(), _deep(), _long_integer(), _malformed(), _too_large(), _not_utf8()
)
_space = st.text(alphabet=" \t\n", max_size=3).map(str.encode)


@settings(max_examples=150, deadline=None)
@given(
    elements=st.lists(_elements, max_size=8),
    gaps=st.lists(_space, min_size=20, max_size=20),
    chunk_size=st.integers(min_value=1, max_value=64) | st.just(1 << 16),
    bom=st.booleans(),
)
def test_the_reader_yields_what_json_loads_yields_and_bad_elements_stop_nothing(
    elements: list[_Element], gaps: list[bytes], chunk_size: int, bom: bool
) -> None:
    data = (b"\xef\xbb\xbf" if bom else b"") + gaps[0] + b"["
    starts = []
    for i, element in enumerate(elements):
        data += (b"," if i else b"") + gaps[(2 * i + 1) % 20]
        starts.append(data.count(b"\n") + 1)
        data += element.text + gaps[(2 * i + 2) % 20]
    data += b"]" + gaps[-1]
    stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", errors="surrogateescape")
    read = list(JsonArrayReader(stream, chunk_size, max_element=_CAP))
    assert [(index, line) for index, line, _ in read] == [
        (i, starts[i - 1]) for i in range(1, len(elements) + 1)
    ]
    for (_, _, value), element in zip(read, elements, strict=True):
        if isinstance(element.expected, type):
            assert isinstance(value, UnreadableElement), element
            assert isinstance(value.error, element.allowed()), (element, value.error)
        else:
            assert not isinstance(value, UnreadableElement), (element, value.error)
            assert json.dumps(value) == json.dumps(element.expected)  # same values, same types


def _read(text: str, chunk_size: int = 7, cap: int | None = None) -> list[object]:
    return [v for _, _, v in JsonArrayReader(io.StringIO(text), chunk_size, max_element=cap)]


def test_a_deep_record_between_two_good_ones_costs_only_itself() -> None:
    deep = '{"id": "deep", "q": ' + "[" * 1_500 + "]" * 1_500 + ', "a": "1"}'
    read = _read(f'[{{"id": "g1"}}, {deep},\n {{"id": "g2"}}]', chunk_size=1 << 16)
    assert read[0] == {"id": "g1"} and read[2] == {"id": "g2"}
    assert isinstance(read[1], UnreadableElement) and isinstance(read[1].error, RecursionError)


def test_skipping_holds_no_more_than_the_cap() -> None:
    # A 4 MB element past a 1,000-character cap is skipped without growing the buffer past
    # about twice the cap plus a chunk: what reading it whole would hold is far larger.
    reader = JsonArrayReader(
        io.StringIO('[{"a": "' + "x" * 4_000_000 + '"}, {"b": 2}]'), 256, max_element=1_000
    )
    largest = 0
    values = []
    for _, _, value in reader:
        values.append(value)
        largest = max(largest, len(reader._buf))  # white-box: the buffer is what memory holds
    assert isinstance(values[0], UnreadableElement) and isinstance(values[0].error, ElementTooLarge)
    assert values[1] == {"b": 2}
    assert largest < 3_000


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            '[{"a": 1},\n {"a": "never closed}]',
            2,
            "element 2: invalid JSON (Unterminated string starting at)",
        ),
        # Brackets that never balance: the array's own "]" closes the element, then the file ends.
        ('[{"a": 1},\n {"b": [1, 2}, {"c": 3}]', 2, "unexpected end of file: the JSON array is not closed"),
    ],
)
def test_a_malformed_element_that_never_closes_stops_the_file(text: str, line: int, message: str) -> None:
    with pytest.raises(JsonArraySyntaxError) as info:
        _read(text)
    assert (info.value.line, str(info.value)) == (line, message)
