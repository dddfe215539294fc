"""The value codec between sandbox and grader: plain data both ways, bounded, lie-proof."""

from __future__ import annotations

import json
import math

import pytest

from openjudge.graders.code.harness.main import dumps as harness_dumps
from openjudge.graders.code.harness.values import MAX_DEPTH, Opaque, ValueTooLarge, decode, encode


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        -7,
        2**64 + 1,
        pytest.param(-(10**5000), id="5001-digit int"),  # beyond the 4300-digit limit of int <-> str
        1.5,
        "héllo \ud800",
        [1, [2, [3]]],
        (1, "a", (None,)),
        frozenset({1, (2, 3)}),
        {"a": 1, 2: [3], (4, 5): None},
        b"\x00\xff",
        complex(1, -2),
    ],
)
def test_round_trip_through_json(value: object) -> None:
    assert decode(json.loads(json.dumps(encode(value)))) == value


def test_special_floats_and_json_sequences() -> None:
    back = decode(json.loads(json.dumps(encode([math.inf, -math.inf]))))
    assert back == [math.inf, -math.inf]
    assert math.isnan(decode(encode(math.nan)))  # type: ignore[arg-type]  # decode of a float is a float
    assert decode(encode((1, (2,))), json_sequences=True) == [1, [2]]


class Liar(int):
    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0

    def __int__(self) -> int:
        return 999


def test_subclasses_are_sent_as_their_real_value() -> None:
    assert encode(Liar(3)) == 3
    assert encode([Liar(5)]) == [5]


def test_objects_that_are_not_data_equal_nothing() -> None:
    opaque = decode(encode(object()))
    assert isinstance(opaque, Opaque) and opaque.type_name == "object"
    assert opaque != opaque and opaque != 1 and [opaque] != [decode(encode(object()))]


def test_too_deep_or_too_large() -> None:
    deep: list[object] = []
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(ValueTooLarge):
        encode(deep)
    with pytest.raises(ValueTooLarge):
        encode(list(range(200_000)))


@pytest.mark.parametrize(
    "tree",
    [
        {"a": 1, "b": 2},
        {"$what": 1},
        {"$set": [[1]]},
        {"$dict": [[[1], 2]]},
        {"$dict": [1]},
        {"$complex": ["a", 1]},
    ],
)
def test_malformed_trees_are_refused(tree: object) -> None:
    with pytest.raises(ValueError, match=r"encoded value|unknown value tag|not hashable|pair|two numbers"):
        decode(tree)


@pytest.mark.parametrize(
    "value",
    [
        {"event": "call", "index": 0, "ok": True, "value": None},
        ["tab\there", 'quote " and \\ backslash', "\x00\x1f\x7f", "lone \ud800 surrogate", "北京👍"],
        [1.5, -0.0, 1e300, 2**63, -(2**63), False],
        encode({"k": (1, 2.5, "x"), 3: [None, True]}),
    ],
)
def test_the_harness_writes_json_that_json_reads(value: object) -> None:
    assert json.loads(harness_dumps(value)) == value


P61 = 2**61 - 1  # hash(k * P61) == 0 for every int k


@pytest.mark.parametrize(
    "colliding",
    [
        pytest.param([k * P61 for k in range(1, 50_000)], id="ints"),
        pytest.param([{"$tuple": [k * P61]} for k in range(1, 50_000)], id="tuples of ints"),
        pytest.param([{"$int": format(k * P61 + (1 << 70) * P61, "x")} for k in range(1, 50_000)], id="$int"),
    ],
)
def test_sets_and_dicts_whose_members_collide_are_not_read(colliding: list[object]) -> None:
    """Members sharing a hash make a set quadratic to build: the decoder stops after a few."""
    members = decode(colliding)
    assert isinstance(members, list) and len({hash(v) for v in members}) == 1  # they do collide
    with pytest.raises(ValueTooLarge, match="share one hash value"):
        decode({"$set": colliding})
    with pytest.raises(ValueTooLarge, match="share one hash value"):
        decode({"$dict": [[member, 0] for member in colliding]})


def test_a_few_colliding_members_are_still_data() -> None:
    few = [k * P61 for k in range(1, 9)]
    assert decode({"$set": few}) == frozenset(few)
    assert decode({"$dict": [[k, k] for k in few]}) == {k: k for k in few}
    assert decode({"$set": [-1, -2]}) == frozenset({-1, -2})  # hash(-1) == hash(-2) in CPython
