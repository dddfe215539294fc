"""Tokenizers of every family a judge may bring, trained in milliseconds on judge-like text.

Each is a real ``tokenizers`` pipeline wrapped as a transformers fast tokenizer, trained
on verdicts so that its merges glue numbers to their neighbours (``Ġ4``, ``4}``,
``":▁4``), as real vocabularies do:

* ``byte_level``: GPT-2 / Llama 3 / Qwen style byte-level BPE;
* ``byte_level_gguf``: the same vocabulary with the decoder transformers writes when it
  converts a GGUF file (``Sequence[ByteFallback, Fuse, Replace, ByteLevel]``, SmolLM2's);
* ``sentencepiece``: Llama 2 / Mistral style pieces with ``▁`` and ``<0xNN>`` byte fallback;
* ``metaspace``: a ``Metaspace`` pre-tokenizer and decoder (after ``ByteFallback``);
* ``tiny``: the character-level BPE of :mod:`tests.providers.transformers.tiny`;
* ``word_level``: whole words only; it cannot spell arbitrary text (no constrained decoding).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

from tokenizers import (  # type: ignore[import-untyped]  # no stubs
    Regex,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    trainers,
)
from transformers import PreTrainedTokenizerFast

from tests.providers.transformers import tiny

EOS = "<|end|>"
SPECIALS = ["<pad>", EOS]
BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]

CORPUS = [
    f'{{"reason": "{reason}", "score": {score}}}'
    for reason in ("fine", "wrong answer", "très bien", "partly right; see 2 + 2 = 4", "ok")
    for score in (1, 2, 3, 4, 5, 10, 45)
] * 20 + ["Score: 4", "Rating = 3/5", "The answer is 42.", "日本語 🙂 naïve café"] * 20


def _wrap(tokenizer: Tokenizer) -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tokenizer, pad_token="<pad>", eos_token=EOS, unk_token=None
    )


def _train(tokenizer: Tokenizer, trainer: object) -> Tokenizer:
    tokenizer.train_from_iterator(CORPUS, trainer=trainer)
    return tokenizer


def _bytes_in_vocabulary(trained: Tokenizer) -> str:
    """The trainer adds ``<0xNN>`` as added tokens; SentencePiece models have them in the vocabulary."""
    spec = json.loads(trained.to_str())
    assert all(spec["model"]["vocab"].get(b) is not None for b in BYTE_TOKENS)
    spec["added_tokens"] = [t for t in spec["added_tokens"] if t["content"] not in BYTE_TOKENS]
    return json.dumps(spec)


@functools.cache
def _byte_level_json() -> str:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    return str(_train(tokenizer, trainer).to_str())


def byte_level() -> PreTrainedTokenizerFast:
    return _wrap(Tokenizer.from_str(_byte_level_json()))


def byte_level_gguf() -> PreTrainedTokenizerFast:
    spec = json.loads(_byte_level_json())
    spec["decoder"] = {
        "type": "Sequence",
        "decoders": [
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        ],
    }
    spec["model"]["byte_fallback"] = True  # as the GGUF conversion sets it
    return _wrap(Tokenizer.from_str(json.dumps(spec)))


@functools.cache
def _sentencepiece_json() -> str:
    tokenizer = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tokenizer.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=[*SPECIALS, "<unk>", *BYTE_TOKENS])
    return _bytes_in_vocabulary(_train(tokenizer, trainer))


def sentencepiece() -> PreTrainedTokenizerFast:
    return _wrap(Tokenizer.from_str(_sentencepiece_json()))


@functools.cache
def _metaspace_json() -> str:
    tokenizer = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tokenizer.decoder = decoders.Sequence(
        [
            decoders.ByteFallback(),
            decoders.Fuse(),
            decoders.Metaspace(replacement="▁", prepend_scheme="first"),
        ]
    )
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=[*SPECIALS, "<unk>", *BYTE_TOKENS])
    return _bytes_in_vocabulary(_train(tokenizer, trainer))


def metaspace() -> PreTrainedTokenizerFast:
    return _wrap(Tokenizer.from_str(_metaspace_json()))


def word_level() -> PreTrainedTokenizerFast:
    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"\s+"), behavior="removed")
    trainer = trainers.WordLevelTrainer(special_tokens=[*SPECIALS, "<unk>"])
    return _wrap(_train(tokenizer, trainer))


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    return tiny.tokenizer()


READABLE: dict[str, Callable[[], PreTrainedTokenizerFast]] = {
    "byte_level": byte_level,
    "byte_level_gguf": byte_level_gguf,
    "sentencepiece": sentencepiece,
    "metaspace": metaspace,
    "tiny": tiny_tokenizer,
}
"""The families constrained decoding must read (every one a real judge may bring)."""


def eos_id(tokenizer: PreTrainedTokenizerFast) -> int:
    token_id = tokenizer.eos_token_id
    assert isinstance(token_id, int)
    return token_id
