"""Constrained decoding reads every tokenizer family right, or refuses it: never a misread grammar.

The property: whatever the model's logits, a decode under the grammar mask ends in JSON
that the tokenizer itself decodes to a schema-valid verdict. Random logits stand in for
every model (they wander through every token the mask allows, including byte tokens
and numbers merged with punctuation); the schema is bounded so each walk ends.
"""

from __future__ import annotations

import functools
import json
from typing import Literal

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from transformers import PreTrainedTokenizerFast

from openjudge.models.chat_model import OutputSpec
from openjudge.providers.transformers._chat import _schema_text
from openjudge.providers.transformers._constraints import GrammarCompiler, GrammarLogitsProcessor
from openjudge.providers.transformers._vocabulary import PROBE, llguidance_tokenizer, vocabulary_kind
from tests.providers.transformers import vocabularies

ROWS = 4
MAX_STEPS = 160


class BoundedVerdict(BaseModel):
    reason: str = Field(max_length=10)
    score: Literal[1, 2, 3, 4, 5]


SCHEMA = _schema_text(OutputSpec.for_model(BoundedVerdict))


@functools.cache
def tokenizer_of(family: str) -> PreTrainedTokenizerFast:
    return vocabularies.READABLE[family]()


@functools.cache
def compiler_of(family: str) -> GrammarCompiler:
    tokenizer = tokenizer_of(family)
    return GrammarCompiler(tokenizer, len(tokenizer), [vocabularies.eos_id(tokenizer)])


def constrained_walk(family: str, seed: int) -> list[list[int]]:
    """``ROWS`` sampled decodes of random logits under the grammar, each up to (not including) EOS."""
    tokenizer = tokenizer_of(family)
    eos = vocabularies.eos_id(tokenizer)
    compiler = compiler_of(family)
    processor = GrammarLogitsProcessor([compiler.matcher(SCHEMA) for _ in range(ROWS)], 1, [eos])
    generator = torch.Generator().manual_seed(seed)
    ids = torch.zeros(ROWS, 1, dtype=torch.long)
    rows: list[list[int]] = [[] for _ in range(ROWS)]
    finished = [False] * ROWS
    for _ in range(MAX_STEPS):
        logits = torch.randn(ROWS, compiler.vocab_size, generator=generator) * 4
        masked = processor(ids, logits)  # type: ignore[arg-type]  # a LongTensor at run time
        probabilities = torch.softmax(masked, dim=-1)
        assert not torch.isnan(probabilities).any(), "the grammar allowed no token at all"
        chosen = torch.multinomial(probabilities, 1, generator=generator)
        for row in range(ROWS):
            token = int(chosen[row, 0])
            if finished[row]:
                chosen[row, 0] = eos
            elif token == eos:
                finished[row] = True
            else:
                rows[row].append(token)
        ids = torch.cat([ids, chosen], dim=1)
        if all(finished):
            return rows
    raise AssertionError(f"{family}: rows still open after {MAX_STEPS} tokens: {finished}")


@pytest.mark.parametrize("family", sorted(vocabularies.READABLE))
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_constrained_decode_is_always_a_schema_valid_verdict(family: str, seed: int) -> None:
    tokenizer = tokenizer_of(family)
    for row in constrained_walk(family, seed):
        text = tokenizer.decode(row, skip_special_tokens=True)
        assert isinstance(text, str)
        verdict = BoundedVerdict.model_validate(json.loads(text))  # no parse error, ever
        assert verdict.score in (1, 2, 3, 4, 5)


@pytest.mark.parametrize(
    ("family", "kind"),
    [
        ("byte_level", "byte_level"),
        ("byte_level_gguf", "byte_level"),
        ("sentencepiece", "byte_fallback"),
        ("metaspace", "byte_fallback"),
        ("tiny", "byte_fallback"),
    ],
)
def test_each_family_is_read_as_what_spells_its_tokens(family: str, kind: str) -> None:
    tokenizer = tokenizer_of(family)
    assert vocabulary_kind(json.loads(tokenizer.backend_tokenizer.to_str())) == kind
    ll = llguidance_tokenizer(tokenizer, len(tokenizer), [vocabularies.eos_id(tokenizer)])
    ids = tokenizer.encode(PROBE, add_special_tokens=False)
    assert ll.decode_bytes(ids).removeprefix(b" ") == PROBE.encode()


def test_the_gguf_decoder_misleads_llguidance_own_bridge_and_not_ours() -> None:
    import llguidance.hf

    tokenizer = tokenizer_of("byte_level_gguf")
    eos = vocabularies.eos_id(tokenizer)
    ids = tokenizer.encode('{"score": 4}', add_special_tokens=False)
    as_is = llguidance.hf.from_tokenizer(tokenizer, n_vocab=len(tokenizer), eos_token=eos)
    assert as_is.decode_bytes(ids) != b'{"score": 4}'  # "Ġ" read as U+0120: the bug this module fixes
    assert llguidance_tokenizer(tokenizer, len(tokenizer), [eos]).decode_bytes(ids) == b'{"score": 4}'
    # The model's own tokenizer keeps its decoder: only the copy handed to llguidance changes.
    assert "ByteFallback" in tokenizer.backend_tokenizer.to_str()


def test_a_word_level_vocabulary_is_refused_with_the_reason() -> None:
    tokenizer = vocabularies.word_level()
    with pytest.raises(ValueError, match="WordLevel vocabulary has no byte-level or byte-fallback tokens"):
        llguidance_tokenizer(tokenizer, len(tokenizer), [vocabularies.eos_id(tokenizer)])
