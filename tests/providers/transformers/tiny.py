"""Tiny models built in code, saved as real checkpoints (no download).

* A character-level BPE tokenizer with byte fallback and a chat template, whose merges
  make the judge's verdict pieces single tokens, so a bigram model can write a whole
  JSON verdict (and llguidance can spell any text with it, as with real tokenizers).
* :func:`wired_judge`: a 2-layer Llama whose attention and MLP weights stay random but
  whose embeddings and LM head are wired as a bigram table, so greedy decoding after
  the generation prompt writes ``{"reason": "fine", "score": 4}`` and the score step
  spreads probability over "1".."5" (its exact distribution still depends on the random
  layers, and so on the context).
* :func:`random_causal_lm` and :func:`random_reward_model`: plain random 2-layer Llamas.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models  # type: ignore[import-untyped]  # no stubs
from transformers import (
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
    LlamaForSequenceClassification,
    PreTrainedTokenizerFast,
)

SPECIALS = ["<pad>", "<unk>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
VERDICT = ['{"reason": "', "fine", '", "score": ']
DIGITS = ["1", "2", "3", "4", "5"]
CHARS = [chr(c) for c in range(32, 127)]
BYTES = [f"<0x{b:02X}>" for b in range(256)]


def _chains(words: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """The BPE merges that build each word left to right, and the tokens they make."""
    tokens: list[str] = []
    merges: list[tuple[str, str]] = []
    for word in words:
        for end in range(2, len(word) + 1):
            merges.append((word[: end - 1], word[end - 1]))
            tokens.append(word[:end])
    return tokens, merges


_MERGED, _MERGES = _chains(VERDICT)
VOCAB = list(dict.fromkeys(SPECIALS + CHARS + _MERGED + BYTES))
IDS = {w: i for i, w in enumerate(VOCAB)}
WIRED = ["<|assistant|>", *VERDICT, *DIGITS, "}", "</s>"]
"""Tokens with their own embedding dimension in the wired judge."""
HIDDEN = 64
SCORE_WEIGHTS = (0.5, 0.7, 0.9, 1.1, 0.8)
"""LM-head weights from the score key to "1".."5": greedy picks 4."""

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} <|end|> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
VERDICT_TEXT = '{"reason": "fine", "score": 4}'


def tokenizer() -> PreTrainedTokenizerFast:
    """A character BPE with byte fallback (any text encodes) whose verdict pieces are single tokens."""
    bpe = Tokenizer(models.BPE(IDS, _MERGES, unk_token="<unk>", byte_fallback=True))
    bpe.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=bpe,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        additional_special_tokens=SPECIALS[4:],
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok


def _config(num_labels: int = 1) -> LlamaConfig:
    return LlamaConfig(
        vocab_size=len(VOCAB),
        hidden_size=HIDDEN,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        pad_token_id=IDS["<pad>"],
        bos_token_id=IDS["<s>"],
        eos_token_id=IDS["</s>"],
        tie_word_embeddings=False,
        num_labels=num_labels,  # type: ignore[call-arg]  # a PretrainedConfig keyword
    )


def _save(model: torch.nn.Module, path: Path) -> Path:
    model.save_pretrained(path)  # type: ignore[operator]  # a PreTrainedModel
    tokenizer().save_pretrained(path)
    return path


def wired_judge(path: Path) -> Path:
    """A judge that writes the verdict above (see the module docstring)."""
    torch.manual_seed(0)
    model = LlamaForCausalLM(_config())  # type: ignore[no-untyped-call]
    model.generation_config = GenerationConfig(eos_token_id=IDS["</s>"], pad_token_id=IDS["<pad>"])  # type: ignore[no-untyped-call]
    bigrams = {
        "<|assistant|>": '{"reason": "',
        '{"reason": "': "fine",
        "fine": '", "score": ',
        **dict.fromkeys(DIGITS, "}"),
        "}": "</s>",
    }
    scale = 1.5 * math.sqrt(HIDDEN) / 8  # ~12 logits for the wired successor after the final norm
    with torch.no_grad():
        # Wired tokens get one-hot embeddings; the others keep their small random ones.
        dim = {token: i for i, token in enumerate(WIRED)}
        for token, i in dim.items():
            model.model.embed_tokens.weight[IDS[token]] = torch.nn.functional.one_hot(torch.tensor(i), HIDDEN)
        model.lm_head.weight.zero_()
        for current, successor in bigrams.items():
            model.lm_head.weight[IDS[successor], dim[current]] = scale
        for digit, weight in zip(DIGITS, SCORE_WEIGHTS, strict=True):
            model.lm_head.weight[IDS[digit], dim['", "score": ']] = weight
    return _save(model, path)


def random_causal_lm(path: Path) -> Path:
    torch.manual_seed(1)
    model = LlamaForCausalLM(_config())  # type: ignore[no-untyped-call]
    model.generation_config = GenerationConfig(eos_token_id=IDS["</s>"], pad_token_id=IDS["<pad>"])  # type: ignore[no-untyped-call]
    return _save(model, path)


def random_reward_model(path: Path, num_labels: int = 1) -> Path:
    torch.manual_seed(2)
    model = LlamaForSequenceClassification(_config(num_labels=num_labels))  # type: ignore[no-untyped-call]
    with torch.no_grad():
        model.score.weight.normal_(0.0, 1.0)  # rewards of order 1, not 0.01
    return _save(model, path)
