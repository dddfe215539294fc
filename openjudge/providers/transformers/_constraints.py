"""Constrained decoding: JSON-schema grammars applied token by token with llguidance.

llguidance (a Rust library behind vLLM's and SGLang's ``guidance`` backend) computes,
per generated token, the set of vocabulary tokens that keep the output inside the
grammar. :class:`GrammarLogitsProcessor` turns that set into a ``-inf`` mask on each
row's logits inside ``model.generate``; rows without a schema are left alone.

Chosen by install footprint and by trying each with transformers 5 and torch 2.13 (CPU):
llguidance is one 8 MB wheel with no dependencies and works; xgrammar 0.2.8 pulls triton
(hundreds of MB) and apache-tvm-ffi; outlines 1.3 pulls outlines-core, genson and pillow;
lm-format-enforcer 0.11.3's transformers integration does not import under transformers 5
(it imports ``transformers.tokenization_utils``, which is gone). ``bench/transformers_local.py``
prints what the mask costs per verdict.

Measured again on SmolLM2-135M's 49k-token vocabulary with the verdict schema (one mask
and one advance per token, 2 shared cores): llguidance 37 us of CPU per row and token,
xgrammar 0.2.9 about 5 us, against 50 to 200 ms for the model's own decode step of a
ten-row batch: under 1 % either way, so the footprint decides. Both read that model's
tokenizer once :mod:`._vocabulary` hands llguidance a decoder it reads right (xgrammar
finds the byte-level decoder inside the GGUF conversion's decoder sequence by itself).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from transformers import LogitsProcessor, PreTrainedTokenizerBase

from openjudge.providers.transformers._vocabulary import llguidance_tokenizer

if TYPE_CHECKING:
    from llguidance._lib import JsonCompileOptions

__all__ = ["JSON_LAYOUT", "GrammarCompiler", "GrammarLogitsProcessor"]

JSON_LAYOUT: JsonCompileOptions = {
    "whitespace_flexible": False,
    "item_separator": ", ",
    "key_separator": ": ",
    "lenient": True,
}
"""llguidance's JSON options (a schema's own ``x-guidance`` overrides them); ``lenient``
ignores keywords llguidance does not implement instead of refusing the schema."""


class GrammarCompiler:
    """Matchers for JSON schemas over one tokenizer (the tokenizer is converted once)."""

    def __init__(
        self, tokenizer: PreTrainedTokenizerBase, vocab_size: int, eos_token_ids: Sequence[int]
    ) -> None:
        import llguidance

        self._llguidance = llguidance
        n_vocab = max(vocab_size, len(tokenizer))
        self.vocab_size = n_vocab
        self._tokenizer = llguidance_tokenizer(tokenizer, n_vocab, eos_token_ids)
        self._grammar = functools.lru_cache(maxsize=128)(self._compile)

    def _compile(self, json_schema: str) -> str:
        # One fixed layout, as json.dumps writes it: with flexible whitespace a model can
        # wander in spaces and newlines until it runs out of tokens.
        return str(self._llguidance.LLMatcher.grammar_from_json_schema(json_schema, defaults=JSON_LAYOUT))

    def matcher(self, json_schema: str) -> object:
        """A fresh matcher for one generation constrained to ``json_schema``.

        Raises:
            ValueError: The schema cannot be compiled (the message says why).
        """
        grammar = self._grammar(json_schema)
        matcher = self._llguidance.LLMatcher(self._tokenizer, grammar)
        if matcher.is_error():
            raise ValueError(
                f"the output schema cannot be used for constrained decoding: {matcher.get_error()}"
            )
        return matcher


def _unpack(bitmask: torch.Tensor, width: int) -> torch.Tensor:
    """Bit-packed int32 words (rows × words) as a boolean mask (rows × width)."""
    shifts = torch.arange(32, dtype=torch.int32)
    bits = (bitmask.unsqueeze(-1) >> shifts) & 1
    return bits.reshape(bitmask.shape[0], -1)[:, :width].bool()


class GrammarLogitsProcessor(LogitsProcessor):
    """Masks each constrained row's logits to the tokens its grammar allows next.

    Args:
        matchers: One llguidance matcher per row, or ``None`` for an unconstrained row.
        prompt_length: Columns of the (padded) prompt; later columns are generated tokens.
        eos_token_ids: Tokens that end a row (after one, the row is left alone).
    """

    def __init__(
        self, matchers: Sequence[object | None], prompt_length: int, eos_token_ids: Sequence[int]
    ) -> None:
        self._matchers = list(matchers)
        self._prompt_length = prompt_length
        self._eos = frozenset(eos_token_ids)
        self._done = [m is None for m in self._matchers]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        rows, width = scores.shape
        bitmask = torch.full((rows, (width + 31) // 32), -1, dtype=torch.int32)
        generated = input_ids.shape[1] - self._prompt_length
        constrained = False
        for row, matcher in enumerate(self._matchers):
            if matcher is None or self._done[row]:
                continue
            if generated > 0:
                token = int(input_ids[row, -1])
                if token in self._eos:
                    self._done[row] = True
                    continue
                if not matcher.consume_token(token):  # type: ignore[attr-defined]  # llguidance.LLMatcher
                    # Cannot happen for a masked row; if it does, the row goes on unconstrained
                    # and the grader's parse decides.
                    self._done[row] = True
                    continue
            # What llguidance.torch.fill_next_token_bitmask does, without importing that module
            # (it compiles a kernel with torch.compile at import: seconds, and unused here).
            words = bitmask[row]
            matcher.unsafe_compute_mask_ptr(words.data_ptr(), words.numel() * words.element_size())  # type: ignore[attr-defined]  # llguidance.LLMatcher
            constrained = True
        if not constrained:
            return scores
        allowed = _unpack(bitmask, width).to(scores.device)
        return scores.masked_fill(~allowed, float("-inf"))  # type: ignore[return-value]  # a FloatTensor still
