"""Batched chat generation with a causal LM: left-padded ``generate``, per-row results.

:class:`Generator` runs on the inference thread. For each batch it applies the chat
template per request (a request that cannot be encoded fails alone), left-pads the
batch, runs one ``model.generate`` with the grammar mask and the logprob recorder as
logits processors, and splits the output back into one :class:`Generation` per row:
text, token counts, finish reason and, when asked, per-token logprobs.

Constrained decoding that cannot start for this model (llguidance cannot read its
tokenizer, e.g. "can't determine decoder type", or the tokenizer is not a fast one) is
a property of the model, not of a request: the generator logs one warning and generates
freely from then on, leaving the grader to parse the reply tolerantly, instead of failing
every call.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from openjudge.errors import ContextOverflow
from openjudge.providers.transformers._constraints import GrammarCompiler, GrammarLogitsProcessor
from openjudge.providers.transformers._errors import InferenceError
from openjudge.providers.transformers._loading import LoadedModel
from openjudge.providers.transformers._logprobs import StepRecorder, TokenChoice, decode, token_pieces
from openjudge.providers.transformers._requests import GenerationRequest

__all__ = ["Generation", "Generator"]

logger = logging.getLogger(__name__)

FinishReason = Literal["stop", "length"]


@dataclass(frozen=True, slots=True)
class Generation:
    """What one request generated."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: FinishReason
    tokens: tuple[TokenChoice, ...] = ()


class Generator:
    """Runs batches of :class:`GenerationRequest` on one loaded causal LM."""

    def __init__(self, loaded: LoadedModel) -> None:
        self.loaded = loaded
        self._compiler: GrammarCompiler | None = None
        self.unconstrained_reason: str | None = None
        """Why constrained decoding is off for this model (``None`` while it works or is untried)."""
        self._vocab_size = int(loaded.model.config.get_text_config().vocab_size)
        self._names: dict[int, str] = {}
        self._anchor = [int(i) for i in loaded.tokenizer.encode("a", add_special_tokens=False)]

    def encode(self, request: GenerationRequest) -> list[int]:
        """The prompt's token ids (chat template with the generation prompt).

        Raises:
            InferenceError: No chat template, or the prompt is too long (``invalid_input``).
        """
        token_ids = self.loaded.chat_ids(
            request.messages,
            add_generation_prompt=True,
            what="messages",
            without_template="; set chat_template in the provider's settings",
        )
        limit = self.loaded.max_input_tokens
        if limit is not None and len(token_ids) + request.max_new_tokens > limit:
            raise InferenceError(
                f"{self.loaded.name}: the prompt has {len(token_ids)} tokens; with max_new_tokens "
                f"{request.max_new_tokens} that exceeds the model's {limit}",
                kind="invalid_input",
                error_type="PromptTooLong",
                context_overflow=ContextOverflow(limit, len(token_ids), request.max_new_tokens),
            )
        return token_ids

    def run(self, requests: Sequence[GenerationRequest]) -> list[Generation | BaseException]:
        """One result (or a per-request error) per request; raises if the batch itself fails."""
        outcomes: dict[int, Generation | BaseException] = {}
        runnable: list[tuple[int, GenerationRequest, list[int], object | None]] = []
        for index, request in enumerate(requests):
            try:
                ids = self.encode(request)
                matcher = self._matcher(request.json_schema) if request.json_schema is not None else None
            except InferenceError as exc:
                outcomes[index] = exc
                continue
            runnable.append((index, request, ids, matcher))
        if runnable:
            results = self._generate([(r, ids, m) for _, r, ids, m in runnable])
            for (index, *_), result in zip(runnable, results, strict=True):
                outcomes[index] = result
        return [outcomes[i] for i in range(len(requests))]

    def _matcher(self, json_schema: str) -> object | None:
        if self.unconstrained_reason is not None:
            return None
        if self._compiler is None:
            try:
                self._compiler = GrammarCompiler(
                    self.loaded.tokenizer, self._vocab_size, self.loaded.eos_token_ids
                )
            except ImportError:
                raise InferenceError(
                    "constrained decoding needs llguidance: pip install 'openjudge-graders[transformers]'",
                    error_type="ImportError",
                ) from None
            except Exception as exc:  # llguidance cannot read this tokenizer: the same for every call
                self.unconstrained_reason = f"{type(exc).__name__}: {exc}"
                logger.warning(
                    "%s: constrained decoding cannot start with this model's tokenizer (%s); generating "
                    "freely and parsing the replies instead (set structured_output: prompt to say so "
                    "and skip this warning)",
                    self.loaded.name,
                    self.unconstrained_reason,
                )
                return None
        try:
            return self._compiler.matcher(json_schema)
        except ValueError as exc:
            raise InferenceError(f"{self.loaded.name}: {exc}", error_type="SchemaError") from None

    def _generate(
        self, batch: Sequence[tuple[GenerationRequest, list[int], object | None]]
    ) -> list[Generation]:
        loaded = self.loaded
        first = batch[0][0]
        width = max(len(ids) for _, ids, _ in batch)
        pad = loaded.pad_token_id
        input_ids = torch.tensor(
            [[pad] * (width - len(ids)) + ids for _, ids, _ in batch], device=loaded.device
        )
        attention = torch.tensor(
            [[0] * (width - len(ids)) + [1] * len(ids) for _, ids, _ in batch], device=loaded.device
        )
        processors: list[LogitsProcessor] = []
        if any(m is not None for _, _, m in batch):
            processors.append(GrammarLogitsProcessor([m for _, _, m in batch], width, loaded.eos_token_ids))
        want = max(r.top_logprobs for r, _, _ in batch)
        recorder = StepRecorder(max(want, 0)) if want != 0 else None
        if recorder is not None:
            processors.append(recorder)
        options: dict[str, Any] = {
            "max_new_tokens": first.max_new_tokens,
            "do_sample": first.temperature > 0,
            "pad_token_id": pad,
            "eos_token_id": list(loaded.eos_token_ids) or None,
        }
        if first.temperature > 0:
            options["temperature"] = first.temperature
            if first.top_p is not None:
                options["top_p"] = first.top_p
        if first.stop:
            options["stop_strings"] = list(first.stop)
            options["tokenizer"] = loaded.tokenizer
        with torch.inference_mode(), _seeded(first.seed if first.temperature > 0 else None, loaded.device):
            sequences = loaded.model.generate(  # type: ignore[operator]  # GenerationMixin's, untyped on PreTrainedModel
                input_ids=input_ids,
                attention_mask=attention,
                logits_processor=LogitsProcessorList(processors),
                **options,
            )
        recorded = recorder.finish(sequences) if recorder is not None else None
        generated = sequences[:, width:].cpu()
        return [
            self._row(request, len(ids), generated[row].tolist(), recorded, row)
            for row, (request, ids, _) in enumerate(batch)
        ]

    def _row(
        self,
        request: GenerationRequest,
        prompt_tokens: int,
        new_ids: list[int],
        recorded: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None,
        row: int,
    ) -> Generation:
        tokenizer = self.loaded.tokenizer
        eos = set(self.loaded.eos_token_ids)
        end = next((i for i, t in enumerate(new_ids) if t in eos), None)
        finish: FinishReason = "stop" if end is not None else "length"
        if end is None:
            end = len(new_ids)
            pad = self.loaded.pad_token_id
            while end > 0 and new_ids[end - 1] == pad and end < request.max_new_tokens:
                end -= 1  # a row stopped by a stop string is padded to the batch's length
        spent = end + 1 if finish == "stop" else end
        content = new_ids[:end]
        text = decode(tokenizer, content)
        cut = _first_stop(text, request.stop)
        if cut is not None:
            text, finish = text[:cut], "stop"
        tokens: tuple[TokenChoice, ...] = ()
        if recorded is not None and request.top_logprobs != 0:
            tokens = self._choices(request, content, recorded, row, cut)
        return Generation(text, prompt_tokens, spent, finish, tokens)

    def _alternative_names(self, token_id: int) -> str:
        """A token's text as it reads after other text, as :func:`token_pieces` cuts the reply.

        Decoded after an anchor token and cut after the anchor's own text: SentencePiece
        decoders drop a leading space from the first token of a text, so ``▁4`` alone decodes
        as ``4`` while in a reply it reads `` 4``, which the score reader must compare.
        """
        name = self._names.get(token_id)
        if name is None:
            tokenizer = self.loaded.tokenizer
            anchor = decode(tokenizer, self._anchor, skip_special_tokens=False)
            both = decode(tokenizer, [*self._anchor, token_id], skip_special_tokens=False)
            name = both[len(anchor) :] if both.startswith(anchor) else both
            self._names[token_id] = name
        return name

    def _choices(
        self,
        request: GenerationRequest,
        content: list[int],
        recorded: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
        row: int,
        cut: int | None,
    ) -> tuple[TokenChoice, ...]:
        chosen, top_values, top_ids = recorded
        k = max(request.top_logprobs, 0)
        name = self._alternative_names

        out: list[TokenChoice] = []
        offset = 0
        for step, piece in enumerate(token_pieces(self.loaded.tokenizer, content)):
            if cut is not None and offset >= cut:
                break
            offset += len(piece)
            alternatives = tuple(
                (name(int(i)), float(v))
                for v, i in zip(
                    top_values[row, step, :k].tolist(), top_ids[row, step, :k].tolist(), strict=True
                )
                if v != float("-inf")
            )
            out.append(TokenChoice(piece, float(chosen[row, step]), alternatives))
        return tuple(out)


def _first_stop(text: str, stops: Sequence[str]) -> int | None:
    found = [i for s in stops if s and (i := text.find(s)) >= 0]
    return min(found) if found else None


@contextlib.contextmanager
def _seeded(seed: int | None, device: torch.device) -> Iterator[None]:
    """Seed torch's RNG for one sampled batch and restore it after (a trainer's RNG stays untouched)."""
    if seed is None:
        yield
        return
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        yield
