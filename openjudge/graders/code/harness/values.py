"""Plain data between the grader and the sandbox: values travel as tagged JSON, never as objects.

Runs on both sides (the sandbox loads it with only the standard library). The child
*encodes* what a solution's function returned; the grader *decodes* it into fresh
built-in values (``int``, ``str``, ``tuple``, ``frozenset`` ...) and compares those
with the expected value itself. Whatever the solution returns (an object whose
``__eq__`` is always true, a subclass that lies about its value), the grader only ever
compares data it built, so a return value cannot claim to equal something it is not.

Tags: JSON scalars and lists stand for themselves; ``{"$tuple": [...]}``,
``{"$set": [...]}``, ``{"$dict": [[k, v], ...]}``, ``{"$int": "<hex>"}`` (beyond 64
bits, so no decimal digit limit applies), ``{"$float": "nan" | "inf" | "-inf"}``,
``{"$complex": [re, im]}``, ``{"$bytes": "<hex>"}``, ``{"$type": "int"}`` (a built-in
type, such as ``int`` passed as an argument), and ``{"$opaque": "<type>"}`` for anything
else (it equals nothing). Between the verifier and the solution's process, objects that
are not data travel as ``{"$handle": [id, "<type>"]}`` instead: a reference into a table
the solution's process keeps (see :mod:`.verifier`).
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # typing costs start-up time in the sandbox; mypy reads this name as True
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["MAX_DEPTH", "MAX_NODES", "MAX_SHARED_HASH", "Opaque", "ValueTooLarge", "decode", "encode"]

MAX_DEPTH = 64
MAX_NODES = 100_000
MAX_SHARED_HASH = 8
"""Most members of one decoded set (or keys of one dict) that may share a hash value.

Integers' hashes are not randomised (``hash(k * (2**61 - 1)) == 0`` for every ``k``), so a
forged report could send a set of 50,000 members that all collide, and building it would
take quadratic time in the grader's event loop. Real data does not collide: a set that does
is not read (the check it is compared in fails, as for any value the grader cannot read)."""
_INT_BITS = 64
_TYPES = {t.__name__: t for t in (int, float, complex, bool, str, bytes, list, tuple, dict, set, frozenset)}


class ValueTooLarge(ValueError):
    """The value nests deeper than ``MAX_DEPTH`` or has more than ``MAX_NODES`` parts."""


class Opaque:
    """A value the sandbox could not express as data: equal to nothing, not even another Opaque."""

    __slots__ = ("type_name",)

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        raise TypeError(f"the truth of a {self.type_name} object that is not data is unknown")

    def __repr__(self) -> str:
        return f"<{self.type_name} object>"


class _Budget:
    __slots__ = ("nodes", "register", "resolve")

    def __init__(
        self,
        register: Callable[[object], object] | None = None,
        resolve: Callable[[object], object] | None = None,
    ) -> None:
        self.nodes = 0
        self.register = register
        self.resolve = resolve

    def spend(self, depth: int) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES or depth > MAX_DEPTH:
            raise ValueTooLarge(f"value larger than {MAX_NODES} parts or deeper than {MAX_DEPTH}")


def encode(value: object, *, register: Callable[[object], object] | None = None) -> object:
    """A JSON-ready tree for ``value``. Base-class methods are used, so subclasses cannot lie.

    Args:
        value: What to send.
        register: Turns an object that is not data into the body of a ``$handle`` tag
            (otherwise it becomes ``$opaque``).

    Raises:
        ValueTooLarge: The value is too big or too deep to send.
    """
    return _encode(value, _Budget(register), 0)


def _encode(value: object, budget: _Budget, depth: int) -> object:
    budget.spend(depth)
    if value is None or isinstance(value, bool):  # bool cannot be subclassed
        return value
    if isinstance(value, int):
        number = int.__int__(value)
        return number if number.bit_length() <= _INT_BITS else {"$int": format(number, "x")}
    if isinstance(value, float):
        real = float.__float__(value)
        return real if math.isfinite(real) else {"$float": repr(real)}
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, list):
        return [_encode(item, budget, depth + 1) for item in list.__iter__(value)]
    if isinstance(value, tuple):
        return {"$tuple": [_encode(item, budget, depth + 1) for item in tuple.__iter__(value)]}
    if isinstance(value, set | frozenset):
        items = set.__iter__(value) if isinstance(value, set) else frozenset.__iter__(value)
        return {"$set": [_encode(item, budget, depth + 1) for item in items]}
    if isinstance(value, dict):
        return {
            "$dict": [
                [_encode(k, budget, depth + 1), _encode(v, budget, depth + 1)] for k, v in dict.items(value)
            ]
        }
    if isinstance(value, complex):
        return {"$complex": [_encode(value.real, budget, depth), _encode(value.imag, budget, depth)]}
    if isinstance(value, bytes | bytearray):
        return {"$bytes": bytes(value).hex()}
    if isinstance(value, type):
        for name, known in _TYPES.items():
            if value is known:
                return {"$type": name}
    if budget.register is not None:
        return {"$handle": budget.register(value)}
    return {"$opaque": type(value).__name__[:80]}


def decode(
    tree: object, *, json_sequences: bool = False, resolve: Callable[[object], object] | None = None
) -> object:
    """Fresh built-in values for an encoded tree.

    Args:
        tree: What :func:`encode` produced (after a JSON round trip).
        json_sequences: Decode tuples as lists (JSON has no tuples), for tests whose
            expected value is JSON.
        resolve: Turns the body of a ``$handle`` tag into an object (without it, the tag
            is malformed).

    Raises:
        ValueError: The tree is malformed (e.g. an unhashable set element) or too large.
    """
    return _decode(tree, json_sequences, _Budget(resolve=resolve), 0)


class _HashCounts:
    """Counts members by hash value; raises once more than ``MAX_SHARED_HASH`` share one (or one is unhashable).

    Fed as members are decoded, so a colliding set fails after a few members. Linear: the
    counts are keyed by hash values, whose own hashes collide at most a few ways (a 64-bit
    value reduced modulo ``2**61 - 1``), whatever the members are.
    """

    __slots__ = ("counts", "what")

    def __init__(self, what: str) -> None:
        self.counts: dict[int, int] = {}
        self.what = what

    def add(self, item: object) -> object:
        try:
            key = hash(item)
        except TypeError as exc:
            raise ValueError(f"{self.what} is not hashable") from exc
        seen = self.counts.get(key, 0) + 1
        if seen > MAX_SHARED_HASH:
            raise ValueTooLarge(
                f"more than {MAX_SHARED_HASH} of its members share one hash value ({self.what})"
            )
        self.counts[key] = seen
        return item


def _decode(tree: object, json_sequences: bool, budget: _Budget, depth: int) -> object:
    budget.spend(depth)
    if tree is None or isinstance(tree, bool | int | float | str):
        return tree
    if isinstance(tree, list):
        return [_decode(item, json_sequences, budget, depth + 1) for item in tree]
    if not isinstance(tree, dict) or len(tree) != 1:
        raise ValueError(f"not an encoded value: {type(tree).__name__}")
    [(tag, body)] = tree.items()
    if tag == "$tuple" and isinstance(body, list):
        items = [_decode(item, json_sequences, budget, depth + 1) for item in body]
        return items if json_sequences else tuple(items)
    if tag == "$set" and isinstance(body, list):
        members = _HashCounts("a set element")
        return frozenset([members.add(_decode(item, json_sequences, budget, depth + 1)) for item in body])
    if tag == "$dict" and isinstance(body, list):
        pairs = []
        keys = _HashCounts("a dict key")
        for pair in body:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise ValueError("a $dict entry must be a [key, value] pair")
            pairs.append(
                (
                    keys.add(_decode(pair[0], json_sequences, budget, depth + 1)),
                    _decode(pair[1], json_sequences, budget, depth + 1),
                )
            )
        return dict(pairs)
    if tag == "$int" and isinstance(body, str):
        return int(body, 16)
    if tag == "$float" and body in ("nan", "inf", "-inf"):
        return float(str(body))
    if tag == "$complex" and isinstance(body, list) and len(body) == 2:
        real, imag = (_decode(part, json_sequences, budget, depth) for part in body)
        if not (isinstance(real, int | float) and isinstance(imag, int | float)):
            raise ValueError("a $complex needs two numbers")
        try:
            return complex(real, imag)
        except OverflowError as exc:  # a part too large for a float
            raise ValueError("a $complex part is too large") from exc
    if tag == "$bytes" and isinstance(body, str):
        return bytes.fromhex(body)
    if tag == "$opaque":
        return Opaque(str(body)[:80])
    if tag == "$type" and isinstance(body, str) and body in _TYPES:
        return _TYPES[body]
    if tag == "$handle" and budget.resolve is not None:
        return budget.resolve(body)
    raise ValueError(f"unknown value tag {tag!r}")
