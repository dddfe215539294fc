"""Untrusted text as data blocks a judge can tell apart from instructions.

Every value a judge prompt carries (a query, a response, a trajectory message) sits in a
``<name>...</name>`` block. The one rule that keeps a candidate from steering the judge:
*no text inside a block can open or close a block*. :func:`escape_tags` enforces it for
every tag name the prompt uses, the way a lenient reader (an HTML parser, or an LLM) would
read tags:

* case-insensitively and across whitespace: ``</Response>``, ``</RESPONSE >``,
  ``< / response>`` and ``<response\\n>`` are all tags;
* through compatibility forms and invisible characters: ``＜/ｒｅｓｐｏｎｓｅ＞`` (full-width),
  ``</re\\u200bsponse>`` (a zero-width space) and ``</response\\u034f>`` (a combining
  grapheme joiner) fold to the same tag (NFKC, case-folding, format and combining marks
  dropped);
* by prefix: ``</responses>`` is escaped too; being stricter than a parser costs nothing.

Escaping inserts a backslash after the ``<`` (``</response>`` becomes ``<\\/response>``), so
the judge still sees what the candidate wrote. Attribute values are HTML-escaped.

Nested data (the candidates of a ranking, the messages of a trajectory) is built as a tree
of :class:`Block` objects and rendered by :func:`render_blocks`, which escapes each leaf
against *every* tag name in the prompt, so a message cannot close its ``<message>`` block
nor the ``<trajectory>`` block around it.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

__all__ = ["Block", "block_names", "escape_tags", "fold_with_positions", "render_blocks"]

# Characters a reader does not see: format controls (zero-width space/joiners, bidi marks,
# soft hyphen, tags), combining and enclosing marks, and the default-ignorable letters.
_IGNORABLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u180b\u180c\u180d\u180e\u180f")


def _invisible(char: str) -> bool:
    category = unicodedata.category(char)
    return category in ("Cf", "Mn", "Me") or char in _IGNORABLE_LETTERS


@lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    if _invisible(char):
        return ""
    return unicodedata.normalize("NFKC", char).casefold()


def fold_with_positions(text: str) -> tuple[str, list[int]]:
    """``text`` folded as a lenient reader sees it, and the source index of each folded character.

    Folding is per character: NFKC, then case-folding, with invisible characters (format
    controls, combining marks) dropped. ASCII text is only lower-cased.
    """
    if text.isascii():
        return text.lower(), list(range(len(text)))
    out: list[str] = []
    where: list[int] = []
    for i, char in enumerate(text):
        folded = char.lower() if char.isascii() else _fold_char(char)
        out.append(folded)
        where.extend([i] * len(folded))
    return "".join(out), where


@lru_cache(maxsize=256)
def _tag_pattern(names: frozenset[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n.casefold()) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"<\s*/?\s*(?:{alternatives})")


def escape_tags(text: str, names: Iterable[str]) -> str:
    """Neutralise every opening or closing tag of ``names`` in ``text`` (see the module docstring).

    Example:
        >>> escape_tags("a</Response >b<RESPONSE>", {"response"})
        'a<\\\\/Response >b<\\\\RESPONSE>'
    """
    wanted = frozenset(names)
    if not wanted or not text:
        return text
    if text.isascii():
        # Lower-casing ASCII keeps every index, and only "<" itself folds to "<": no
        # position map to build (it cost ~90 us on a 3 kB prompt, per call).
        # Gate: python -m bench.runner ratios (long prompt over HTTP <= 1.25x raw aiohttp's CPU per call).
        if "<" not in text:
            return text
        starts = [m.start() for m in _tag_pattern(wanted).finditer(text.lower())]
    else:
        folded, where = fold_with_positions(text)
        if "<" not in folded:
            return text
        starts = [where[m.start()] for m in _tag_pattern(wanted).finditer(folded)]
    if not starts:
        return text
    parts: list[str] = []
    last = 0
    for start in starts:
        # The character at ``start`` folds to "<" (it may be a full-width or small form).
        parts.append(text[last:start])
        parts.append("<\\")
        last = start + 1
    parts.append(text[last:])
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class Block:
    """One delimited piece of data: ``<tag attr="...">body</tag>``.

    Attributes:
        tag: The block's tag name (a plain identifier; trusted, chosen by the grader).
        body: Untrusted text, or nested blocks.
        attrs: Attributes; values may be untrusted (they are HTML-escaped).
    """

    tag: str
    body: str | Sequence[Block]
    attrs: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", self.tag):
            raise ValueError(f"block tag must be a plain name such as 'message', got {self.tag!r}")


def block_names(blocks: Iterable[Block]) -> frozenset[str]:
    """Every tag name used in ``blocks``, at any depth."""
    names: set[str] = set()
    stack = list(blocks)
    while stack:
        block = stack.pop()
        names.add(block.tag)
        if not isinstance(block.body, str):
            stack.extend(block.body)
    return frozenset(names)


def _open(block: Block) -> str:
    attrs = "".join(f' {k}="{html.escape(v, quote=True)}"' for k, v in block.attrs.items())
    return f"<{block.tag}{attrs}>"


def render_blocks(blocks: Sequence[Block], names: Iterable[str] = ()) -> str:
    """Render ``blocks`` one per paragraph, escaping every leaf against ``names`` and their own tags."""
    every = frozenset(names) | block_names(blocks)
    return "\n\n".join(_render(b, every) for b in blocks)


def _render(block: Block, names: frozenset[str]) -> str:
    if isinstance(block.body, str):
        inner = escape_tags(block.body, names)
    else:
        inner = "\n".join(_render(child, names) for child in block.body)
    return f"{_open(block)}\n{inner}\n</{block.tag}>"
