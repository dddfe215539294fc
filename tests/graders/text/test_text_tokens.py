"""Tokeniser and match normalisation: exact tokens on hand-made multilingual text."""

from __future__ import annotations

import pytest

from openjudge.graders.text._tokens import is_cjk, normalize_for_match, tokenize


def test_ascii_words_and_punctuation() -> None:
    assert tokenize("Hello, world! It's 3.14.") == [
        "Hello",
        ",",
        "world",
        "!",
        "It",
        "'",
        "s",
        "3",
        ".",
        "14",
        ".",
    ]


def test_lowercase_uses_casefold() -> None:
    assert tokenize("Straße HELLO", lowercase=True) == ["strasse", "hello"]


def test_cjk_characters_are_single_tokens() -> None:
    assert tokenize("我爱北京天安门。") == ["我", "爱", "北", "京", "天", "安", "门", "。"]
    assert tokenize("ひらがなカタカナ") == list("ひらがなカタカナ")


def test_hangul_words_stay_whole() -> None:
    assert tokenize("안녕하세요 세계") == ["안녕하세요", "세계"]


def test_mixed_script_chunk() -> None:
    assert tokenize("GPT-4模型") == ["GPT", "-", "4", "模", "型"]


def test_combining_marks_are_normalised_and_attached() -> None:
    decomposed = "cafe\u0301"
    assert tokenize(decomposed) == ["café"]
    assert tokenize(decomposed) == tokenize("café")
    # A mark that has no precomposed form stays attached to its base letter.
    assert tokenize("x\u0331y") == ["x\u0331y"]
    # Devanagari vowel signs (category Mc/Mn) do not split the word.
    assert tokenize("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]


def test_emoji_sequences_are_single_tokens() -> None:
    assert tokenize("ok 👍🏽!") == ["ok", "👍🏽", "!"]
    assert tokenize("👨\u200d👩\u200d👧 family") == ["👨\u200d👩\u200d👧", "family"]
    assert tokenize("❤️") == ["❤"]  # a variation selector only picks a glyph style


def test_invisible_characters_and_lookalikes_do_not_make_new_tokens() -> None:
    plain = tokenize("the cat sat", lowercase=True)
    assert tokenize("the\u034f cat\u200b sat\ufe0f", lowercase=True) == plain
    assert tokenize("ｔｈｅ 𝐜𝐚𝐭 s\u0430t", lowercase=True) == plain  # full-width, math bold, Cyrillic а
    assert tokenize("\u2060the\u00ad c\u200dat sat\U000e0041", lowercase=True) == plain
    # Diacritics are meaning in general; the repetition penalty strips them on Latin letters.
    assert tokenize("thé") == ["thé"]
    assert tokenize("the\u0301 ca\u0335t", strip_diacritics=True) == ["the", "cat"]
    assert tokenize("नमस्ते", strip_diacritics=True) == ["नमस्ते"]


def test_empty_and_whitespace_only() -> None:
    assert tokenize("") == []
    assert tokenize(" \t\n\u3000 ") == []


@pytest.mark.parametrize(
    ("char", "expected"),
    [("中", True), ("か", True), ("カ", True), ("𠀀", True), ("한", False), ("a", False), ("。", False)],
)
def test_is_cjk(char: str, expected: bool) -> None:
    assert is_cjk(char) is expected


def test_normalize_for_match() -> None:
    assert normalize_for_match("  Hello,   WORLD!! ") == "hello world"
    assert normalize_for_match("ＨＥＬＬＯ") == "hello"
    assert normalize_for_match("你好，世界！") == "你好世界"
    assert normalize_for_match("don't") == "dont"
    assert normalize_for_match("1 + 1 = 2 $") == "1 + 1 = 2 $"
    assert normalize_for_match("...") == ""
