"""A tokenizer's vocabulary as llguidance must read it: the bytes each token stands for.

llguidance's bridge for transformers (``llguidance.hf.from_tokenizer``) hands the Rust
tokenizer's JSON to llguidance, which decides how token strings map to bytes from the
*decoder* alone: a top-level ``ByteLevel`` decoder means byte-level BPE (GPT-2, Llama 3,
Qwen, SmolLM), a ``Sequence`` holding ``ByteFallback`` means SentencePiece with ``<0xNN>``
byte tokens (Llama 2, Mistral, Gemma). Anything else is refused ("can't determine decoder
type"), and a decoder that says one thing while the vocabulary is another is read wrongly
without complaint. transformers' GGUF conversion writes exactly that for byte-level models
such as SmolLM2: ``Sequence[ByteFallback, Fuse, Replace, ByteLevel]``. llguidance then
takes ``Ġ`` (byte-level's space) for the two bytes of U+0120, every grammar that contains
a space fails after its first one, and the judge writes ``{"reason"::...``.

:func:`llguidance_tokenizer` decides the encoding from what produces the tokens (the
pre-tokenizer first, then the model's ``byte_fallback`` and byte tokens, then the decoder),
gives the bridge a copy of the tokenizer whose decoder says so, and then checks the result:
a probe text (spaces, newlines, digits, punctuation, accents, CJK, an emoji) encoded by the
tokenizer must decode through llguidance to the same bytes. A tokenizer that cannot be read
(word-level vocabularies, which cannot spell arbitrary text) or fails the check raises
``ValueError``; the generator then decodes freely rather than under a misread grammar.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

if TYPE_CHECKING:
    from llguidance import LLTokenizer

__all__ = ["PROBE", "VocabularyKind", "llguidance_tokenizer", "vocabulary_kind"]

VocabularyKind = Literal["byte_level", "byte_fallback"]

PROBE = 'Verdict {"reason": "très bien — 日本語 🙂\\n\\tok", "score": 4.5, "n": [-10, 2e3]}\n  end.'
"""Text every usable tokenizer must round-trip through llguidance."""

_SPACE = "▁"  # SentencePiece's word-boundary mark


def _types(node: object) -> list[Mapping[str, object]]:
    """``node`` and, for a ``Sequence``, its members (pre-tokenizers and decoders nest this way)."""
    if not isinstance(node, Mapping):
        return []
    members = node.get("pretokenizers", node.get("decoders"))
    nested = [m for m in members if isinstance(m, Mapping)] if isinstance(members, list) else []
    return [node, *nested]


def _has(node: object, kind: str) -> bool:
    return any(part.get("type") == kind for part in _types(node))


def vocabulary_kind(tokenizer_json: Mapping[str, object]) -> VocabularyKind | None:
    """How the tokens of a ``tokenizer.json`` spell bytes, or ``None`` if they cannot spell any text.

    A byte-level pre-tokenizer decides (it maps every input byte to a printable character
    before the model sees it), whatever the decoder says; so does a byte-level decoder
    alone. Otherwise ``<0xNN>`` byte tokens, the model's ``byte_fallback`` flag or a
    SentencePiece decoder mean SentencePiece-style pieces.
    """
    pre, decoder, model = (tokenizer_json.get(k) for k in ("pre_tokenizer", "decoder", "model"))
    if isinstance(model, Mapping) and model.get("type") in ("WordLevel", "WordPiece"):
        return None  # whole words (and word pieces) cannot spell an arbitrary string
    if _has(pre, "ByteLevel"):
        return "byte_level"
    if _has(decoder, "ByteLevel") and not _has(decoder, "ByteFallback"):
        return "byte_level"
    vocab = model.get("vocab") if isinstance(model, Mapping) else None
    byte_tokens = isinstance(vocab, Mapping) and "<0x00>" in vocab and "<0xFF>" in vocab
    byte_fallback = isinstance(model, Mapping) and model.get("byte_fallback") is True
    sentencepiece = _has(decoder, "ByteFallback") or _has(decoder, "Metaspace") or _has(pre, "Metaspace")
    if byte_tokens or byte_fallback or sentencepiece:
        return "byte_fallback"
    return None


def _space_mark(decoder: object) -> str:
    """The character the pieces use for a space (SentencePiece's ``▁`` unless a Replace says else)."""
    for part in _types(decoder):
        if part.get("type") == "Replace" and part.get("content") == " ":
            pattern = part.get("pattern")
            mark = pattern.get("String") if isinstance(pattern, Mapping) else None
            if isinstance(mark, str) and len(mark) == 1:
                return mark
        if part.get("type") == "Metaspace" and isinstance(part.get("replacement"), str):
            return str(part["replacement"])
    return _SPACE


def _decoder_for(kind: VocabularyKind, decoder: object) -> dict[str, object]:
    """A decoder llguidance reads as ``kind`` (it only looks at the decoder's JSON)."""
    if kind == "byte_level":
        return {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    replace = {"type": "Replace", "pattern": {"String": _space_mark(decoder)}, "content": " "}
    return {"type": "Sequence", "decoders": [replace, {"type": "ByteFallback"}, {"type": "Fuse"}]}


def llguidance_tokenizer(
    tokenizer: PreTrainedTokenizerBase, n_vocab: int, eos_token_ids: Sequence[int]
) -> LLTokenizer:
    """llguidance's tokenizer for ``tokenizer``, built by its transformers bridge and checked.

    Raises:
        ValueError: Not a fast tokenizer, a vocabulary that cannot spell arbitrary text, or one
            llguidance still reads wrongly (the message names the probe's two decodings).
    """
    import llguidance.hf

    if not isinstance(tokenizer, PreTrainedTokenizerFast):
        raise ValueError("constrained decoding needs a fast (Rust) tokenizer; use structured_output: prompt")
    backend = tokenizer.backend_tokenizer
    spec = json.loads(backend.to_str())
    kind = vocabulary_kind(spec)
    if kind is None:
        raise ValueError(
            f"its {spec.get('model', {}).get('type', 'unknown')} vocabulary has no byte-level or byte-fallback "
            "tokens, so it cannot spell every JSON string"
        )
    spec["decoder"] = _decoder_for(kind, spec.get("decoder"))
    # A new tokenizer object: the model's own keeps its decoder.
    bridged = PreTrainedTokenizerFast(tokenizer_object=type(backend).from_str(json.dumps(spec)))  # type: ignore[no-untyped-call]
    eos = list(eos_token_ids) or None
    ll = llguidance.hf.from_tokenizer(bridged, n_vocab=n_vocab, eos_token=eos)
    ids = [int(i) for i in tokenizer.encode(PROBE, add_special_tokens=False)]
    read = ll.decode_bytes(ids)
    if read not in (PROBE.encode(), b" " + PROBE.encode()):  # SentencePiece may prepend one space
        raise ValueError(
            f"llguidance reads this {kind} vocabulary wrongly: the probe {PROBE!r} decodes to {read!r}"
        )
    return ll
