"""Language-neutral text normalisation and tokenisation for the rule graders.

The tokeniser needs no model files and no optional dependency:

* text is NFC-normalised first, so a precomposed ``é`` and ``e`` + combining acute
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

__all__ = ["is_cjk", "normalize_for_match", "tokenize"]

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


def tokenize(text: str, *, lowercase: bool = False) -> list[str]:
    """Split ``text`` into word, CJK-character and symbol tokens (see the module docstring).

    Args:
        text: Any text.
        lowercase: Case-fold before splitting (Unicode ``casefold``, so ``"Straße"`` -> ``"strasse"``).

    Returns:
        The tokens in order; whitespace is never part of a token.

    Example:
        >>> tokenize("Hello, 世界! 👍🏽")
        ['Hello', ',', '世', '界', '!', '👍🏽']
    """
    text = unicodedata.normalize("NFC", text)
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
