"""One look-alike folding for every place that must read text as a reader sees it.

The folding is Unicode's confusables *skeleton* (UTS #39, https://www.unicode.org/reports/tr39):
each character is mapped to the prototype of the characters drawn like it (Cyrillic ``е`` and
Greek ``ο`` to Latin ``e`` and ``o``, ``‹`` and ``ᐸ`` to ``<``, ``∕`` to ``/``, ``0`` to ``O``,
``1`` and ``|`` to ``l``, ``m`` to ``rn``), from the data in :mod:`openjudge._confusables_data`
(generated from Unicode's ``confusables.txt``; version in ``UNICODE_VERSION``). Two users:

* the data-block escaper (:mod:`openjudge.models.schema._data_blocks`) folds tag names and
  text with :func:`fold_char`: invisible characters dropped, NFKC, case-folded, marks dropped,
  then the skeleton, so ``</rеsponse>`` with a Cyrillic ``е``, ``‹/response›`` or
  ``</resp0nse>`` read as the ``</response>`` they look like, and are escaped;
* the counting graders (:mod:`openjudge.graders.text._tokens`) fold, with
  :func:`latin_lookalikes`, only what counting needs: letters of other scripts whose
  skeleton is Latin letters (``Раris`` with a Cyrillic ``Р`` counts as ``Paris``). ASCII is
  never changed there (``rn`` and ``m`` are different words to a counter; ``1`` is a digit).

Both read one table, so a look-alike the escaper reads as a Latin letter is the letter the
counters count. Folding is per character, so a caller can keep each folded character's source
position (the escaper must put its backslash in the source text).
"""

from __future__ import annotations

import unicodedata
from functools import cache, lru_cache

__all__ = ["fold_char", "folding_to", "latin_lookalikes", "prototypes"]

# Characters a reader does not see: format controls (zero-width space/joiners, bidi marks,
# soft hyphen, tags), combining and enclosing marks, and the default-ignorable letters.
_IGNORABLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u180b\u180c\u180d\u180e\u180f")


def _invisible(char: str) -> bool:
    category = unicodedata.category(char)
    return category in ("Cf", "Mn", "Me") or char in _IGNORABLE_LETTERS


@cache
def prototypes() -> dict[str, str]:
    """Each confusable character and its prototype (read from the generated data on first use)."""
    from openjudge._confusables_data import RECORDS

    table: dict[str, str] = {}
    for record in RECORDS.split("\x1e"):
        if record:
            source, prototype = record.split("\x1f")
            table[source] = prototype
    return table


def _skeleton(text: str) -> str:
    """The skeleton of ``text``: NFD, each character's prototype, NFD again (marks dropped)."""
    table = prototypes()
    mapped = "".join(table.get(c, c) for c in unicodedata.normalize("NFD", text) if not _invisible(c))
    return "".join(c for c in unicodedata.normalize("NFD", mapped) if not _invisible(c))


@lru_cache(maxsize=8192)
def fold_char(char: str) -> str:
    """What one character reads as, for matching tags: ``""`` for an invisible one; else its
    NFKC form, case-folded, marks dropped, skeleton, lower-cased (stable under folding again)."""
    if _invisible(char):
        return ""
    folded = unicodedata.normalize("NFKC", char).casefold()
    for _ in range(3):  # a prototype may itself fold further (case, compatibility forms)
        again = unicodedata.normalize("NFKC", _skeleton(folded)).casefold()
        if again == folded:
            break
        folded = again
    return folded


@cache
def folding_to(target: str) -> frozenset[str]:
    """Every character whose folding (:func:`fold_char`) contains ``target``: the confusables
    whose prototype holds it, and the BMP characters whose NFKD form does (scanned once)."""
    found = {target}
    found.update(c for c, p in prototypes().items() if len(c) == 1 and target in p)
    found.update(c for c in map(chr, range(0x80, 0x10000)) if target in unicodedata.normalize("NFKD", c))
    return frozenset(c for c in found if target in fold_char(c))


@cache
def latin_lookalikes() -> dict[int, str]:
    """A ``str.translate`` table: each non-ASCII letter that folds to Latin letters, to them.

    The letters are the ones :func:`fold_char` reads as Latin letters, in the letter's own case
    (``А`` to ``A``, ``а`` to ``a``), so counting and the escaper read a look-alike the same;
    characters that are not letters (digits of other scripts, symbols) are left alone.
    """
    table: dict[int, str] = {}
    for source in prototypes():
        if len(source) != 1 or source.isascii() or not unicodedata.category(source).startswith("L"):
            continue
        folded = fold_char(source)
        if folded and folded.isascii() and folded.isalpha():
            table[ord(source)] = folded.upper() if source.isupper() else folded
    return table
