"""Language-neutral text normalisation and tokenisation for the rule graders.

Graders that *count* (tokens, n-grams, overlaps) count what a reader sees, so text a
policy can make look different to a counter but not to a reader is normalised first
(:func:`normalize_for_counting`):

* NFKC: full-width forms, ligatures, mathematical alphanumerics and superscripts become
  their plain forms (``ｗｏｒｄ``, ``𝐰𝐨𝐫𝐝`` and ``word`` are one token);
* invisible characters are dropped: format controls (zero-width space and joiners, bidi
  marks, soft hyphen, tag characters), the combining grapheme joiner U+034F, variation
  selectors and the Hangul fillers; a zero-width joiner is kept only between two emoji;
* letters of other scripts drawn like Latin letters are folded to them (``Раris`` with a
  Cyrillic ``Р`` is ``Paris``): the letters whose confusables skeleton (UTS #39) is Latin,
  from the one look-alike folding the data-block escaper uses too
  (:func:`openjudge._confusables.latin_lookalikes`); within one language this folding is
  consistent, so it only merges words that a reader could not tell apart;
* with ``strip_diacritics`` (the repetition penalty), combining marks on Latin, Greek and
  Cyrillic letters are dropped too, so ``the`` with an appended accent is still ``the``;
  marks of other scripts (Devanagari, Thai, kana) carry meaning and are kept.

The tokeniser needs no model files and no optional dependency:

* text is normalised first (above), so a precomposed ``é`` and ``e`` + combining acute
  give the same tokens;
* runs of letters, digits and ``_`` form one token (``"don't"`` is ``don`` ``'`` ``t``);
* each CJK ideograph, hiragana and katakana character is its own token, since those
  scripts do not separate words with spaces (Hangul is written with spaces and
  is treated as letters);
* every other visible character (punctuation, symbols, emoji) is its own token;
* combining marks, variation selectors and zero-width joiners stay attached to the
  token they follow, so ``"👍🏽"`` and ``"👨‍👩‍👧"`` are single tokens.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from openjudge._confusables import latin_lookalikes

__all__ = ["counted", "is_cjk", "normalize_for_counting", "normalize_for_match", "tokenize"]

_ASCII_TOKEN = re.compile(r"[A-Za-z0-9_]+|[^A-Za-z0-9_]")
_ZWJ = "\u200d"

# Hiragana + katakana, CJK extension A, CJK unified ideographs, compatibility
# ideographs, and the supplementary ideograph planes (extensions B-F, compat supplement).
_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2FA1F),
)


def is_cjk(char: str) -> bool:
    """Whether ``char`` is a CJK ideograph or kana (a character that is a word on its own)."""
    cp = ord(char)
    return any(low <= cp <= high for low, high in _CJK_RANGES)


# Default-ignorable characters that are not format controls (Cf): combining grapheme joiner,
# Hangul fillers, Mongolian free variation selectors and vowel separator, variation selectors.
_IGNORABLE = frozenset(
    "\u034f\u115f\u1160\u3164\uffa0\u180b\u180c\u180d\u180e\u180f"
    + "".join(chr(c) for c in range(0xFE00, 0xFE10))
    + "".join(chr(c) for c in range(0xE0100, 0xE01F0))
)

_DIACRITIC_SCRIPTS = ("LATIN", "GREEK", "CYRILLIC")


def _pictographic(char: str) -> bool:
    return unicodedata.category(char) == "So" or 0x1F000 <= ord(char) <= 0x1FAFF


class _CharTable(dict[int, "str | None"]):
    """A ``str.translate`` table filled on first sight of each character (lookups stay in C).

    Bounded: past :data:`_TABLE_LIMIT` characters, new ones are computed without being kept.
    """

    def __init__(self, compute: Callable[[str], str | None]) -> None:
        super().__init__()
        self._compute = compute

    def __missing__(self, code: int) -> str | None:
        value = self._compute(chr(code))
        if len(self) < _TABLE_LIMIT:
            self[code] = value
        return value


_TABLE_LIMIT = 100_000


def _visible_or_none(char: str) -> str | None:
    if char != _ZWJ and (char in _IGNORABLE or unicodedata.category(char) == "Cf"):
        return None
    return char


def _seen_as(char: str) -> str | None:
    visible = _visible_or_none(char)
    return visible if visible is None else latin_lookalikes().get(ord(char), visible)


# Every character seen, dropped (invisible), folded to Latin (a look-alike) or itself, in one
# str.translate pass: a plain table would raise (and catch) a KeyError for each character it
# does not hold, ~25 ms per 100 kB.
_VISIBLE = _CharTable(_visible_or_none)
_SEEN = _CharTable(_seen_as)
_ZWJ_RUN = re.compile(f"{_ZWJ}+")


def _drop_invisible(text: str, table: _CharTable = _VISIBLE) -> str:
    """``text`` without invisible characters (through ``table``, which may fold others too); a
    zero-width joiner stays only between two emoji."""
    text = text.translate(table)
    if _ZWJ not in text:
        return text

    def joiner(match: re.Match[str]) -> str:
        start, end = match.span()
        between_emoji = (
            start > 0 and end < len(text) and _pictographic(text[start - 1]) and _pictographic(text[end])
        )
        return _ZWJ if between_emoji else ""

    return _ZWJ_RUN.sub(joiner, text)


def _kind(char: str) -> str:
    """``m`` for a combining mark, ``b`` for a character whose marks are diacritics (ASCII, Latin,
    Greek, Cyrillic), ``o`` for any other character (whose marks carry meaning)."""
    if unicodedata.category(char) in ("Mn", "Me"):
        return "m"
    return "b" if char.isascii() or unicodedata.name(char, "").startswith(_DIACRITIC_SCRIPTS) else "o"


_KINDS = _CharTable(_kind)
_NO_MARKS = _CharTable(lambda char: None if unicodedata.category(char) in ("Mn", "Me") else char)
_MARKS_AFTER_A_BASE = re.compile("bm+")


def _strip_marks(text: str) -> str:
    """NFKD, combining marks after ASCII, Latin, Greek and Cyrillic letters dropped, NFC.

    Each character's kind is read through one ``str.translate`` (a character-by-character loop
    held the event loop ~30 ms per 100 kB); only text that mixes other scripts' marks in is
    walked run by run.
    """
    decomposed = unicodedata.normalize("NFKD", text)
    kinds = decomposed.translate(_KINDS)
    if "m" not in kinds:
        return unicodedata.normalize("NFC", decomposed)
    first = len(kinds) - len(kinds.lstrip("m"))  # marks before the first base character are kept
    if "o" not in kinds:  # every later mark follows a base whose marks are diacritics
        return unicodedata.normalize("NFC", decomposed[:first] + decomposed[first:].translate(_NO_MARKS))
    pieces: list[str] = []
    last = 0
    for run in _MARKS_AFTER_A_BASE.finditer(kinds):
        pieces.append(decomposed[last : run.start() + 1])
        last = run.end()
    pieces.append(decomposed[last:])
    return unicodedata.normalize("NFC", "".join(pieces))


def normalize_for_counting(text: str, *, strip_diacritics: bool = False) -> str:
    """The text as counting graders see it (see the module docstring).

    Example:
        >>> normalize_for_counting("ｗｏｒｄ wo\u200brd w\u043erd")
        'word word word'
        >>> normalize_for_counting("the\u034f thé", strip_diacritics=True)
        'the the'
    """
    if text.isascii():
        return text
    text = _drop_invisible(unicodedata.normalize("NFKC", text), _SEEN)
    # Dropping an invisible character can leave a letter and its mark apart: compose again.
    return _strip_marks(text) if strip_diacritics else unicodedata.normalize("NFC", text)


def counted(text: str) -> str:
    """Lower-cased text as the agent graders compare signatures: identical to ``text.lower()``
    on ASCII (so OpenJudge's scores are reproduced), normalised for counting otherwise."""
    if text.isascii():
        return text.lower()
    return normalize_for_counting(text, strip_diacritics=True).lower()


def _is_joining(char: str, category: str) -> bool:
    # Combining marks (Mn, Mc, Me), emoji skin-tone modifiers (Sk 1F3FB-1F3FF) and ZWJ.
    return category[0] == "M" or char == _ZWJ or 0x1F3FB <= ord(char) <= 0x1F3FF


def _tokenize_chunk(chunk: str, out: list[str]) -> None:
    """Tokenise one whitespace-free chunk that contains non-ASCII characters."""
    start = len(out)
    word: list[str] = []
    join_next = False
    for char in chunk:
        category = unicodedata.category(char)
        if join_next or _is_joining(char, category):
            join_next = char == _ZWJ
            if word:
                word.append(char)
            elif len(out) > start:
                out[-1] += char
            else:
                word.append(char)
            continue
        if is_cjk(char):
            if word:
                out.append("".join(word))
                word = []
            out.append(char)
        elif category[0] in "LN" or char == "_":
            word.append(char)
        else:
            if word:
                out.append("".join(word))
                word = []
            out.append(char)
    if word:
        out.append("".join(word))


def tokenize(text: str, *, lowercase: bool = False, strip_diacritics: bool = False) -> list[str]:
    """Split ``text`` into word, CJK-character and symbol tokens (see the module docstring).

    Args:
        text: Any text; normalised with :func:`normalize_for_counting` first.
        lowercase: Case-fold before splitting (Unicode ``casefold``, so ``"Straße"`` -> ``"strasse"``).
        strip_diacritics: Also drop combining marks on Latin, Greek and Cyrillic letters.

    Returns:
        The tokens in order; whitespace is never part of a token.

    Example:
        >>> tokenize("Hello, 世界! 👍🏽")
        ['Hello', ',', '世', '界', '!', '👍🏽']
    """
    text = normalize_for_counting(text, strip_diacritics=strip_diacritics)
    if lowercase:
        text = text.casefold()
    tokens: list[str] = []
    for chunk in text.split():
        if chunk.isascii():
            tokens.extend(_ASCII_TOKEN.findall(chunk))
        else:
            _tokenize_chunk(chunk, tokens)
    return tokens


def normalize_for_match(text: str) -> str:
    """Normalise for a case-, whitespace- and punctuation-insensitive comparison.

    NFKC (full-width forms and ligatures become their plain forms), case-fold, delete
    punctuation (Unicode categories ``P*``; symbols such as ``+``, ``$`` and emoji are
    kept), then collapse whitespace runs to one space and strip the ends.

    Example:
        >>> normalize_for_match("  Hello,   WORLD!! ")
        'hello world'
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "P")
    return " ".join(text.split())
