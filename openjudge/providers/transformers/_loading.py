"""Load a checkpoint and its tokenizer onto a device (imports torch and transformers).

Imported only when a model is first loaded, never by ``import openjudge.providers.transformers``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from openjudge.providers.transformers._errors import InferenceError
from openjudge.providers.transformers._settings import TransformersSettings

try:
    import torch
    import transformers
except ImportError as exc:  # pragma: no cover - the extra is installed in the test environment
    raise ImportError(
        "the 'transformers' provider needs torch and transformers: install torch for your platform first "
        "(e.g. pip install torch==2.13.0), then pip install 'openjudge-graders[transformers]'"
    ) from exc

__all__ = ["Head", "LoadedModel", "checkpoint_source", "load_model", "resolve_device", "resolve_dtype"]

logger = logging.getLogger(__name__)

Head = Literal["causal_lm", "sequence_classification"]

_LOADING = threading.Lock()
"""Held while a model loads: transformers' loading is not thread-safe. It builds modules under
process-wide init contexts (the meta device, skipped initialisation), so two models loading at
once in one process (a judge and a reward model, each loaded off its event loop) could leave
the other's tied weights on the meta device."""

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass(frozen=True, slots=True)
class LoadedModel:
    """A model ready for inference, with what batching needs to know about it.

    Attributes:
        model: The module, in eval mode, on ``device``.
        tokenizer: Its tokenizer (left padding; a pad token is always set).
        device: Where the model runs.
        dtype: The weights' dtype.
        eos_token_ids: Tokens that end a generation.
        max_input_tokens: The longest input accepted, if known.
        name: The checkpoint, for messages.
    """

    model: transformers.PreTrainedModel
    tokenizer: transformers.PreTrainedTokenizerBase
    device: torch.device
    dtype: torch.dtype
    eos_token_ids: tuple[int, ...]
    max_input_tokens: int | None
    name: str

    @property
    def pad_token_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        assert isinstance(pad, int)  # load_model always sets one
        return pad

    def chat_ids(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        add_generation_prompt: bool,
        what: str,
        without_template: str,
    ) -> list[int]:
        """The token ids of ``messages`` rendered by the tokenizer's chat template.

        Args:
            messages: Chat messages (``role``, ``content``).
            add_generation_prompt: End with the assistant's turn header (to generate a reply).
            what: What the messages are, for the error (``"messages"``, ``"conversation"``).
            without_template: The rest of the error when there is no template (what to do).

        Raises:
            InferenceError: No chat template, or the template rejected the messages
                (``invalid_input``: this request fails, the batch goes on).
        """
        if not self.tokenizer.chat_template:
            raise InferenceError(
                f"{self.name}: the tokenizer has no chat template{without_template}",
                kind="invalid_input",
                error_type="NoChatTemplate",
            )
        try:
            ids = cast(
                "list[int]",
                self.tokenizer.apply_chat_template(
                    [dict(m) for m in messages],
                    add_generation_prompt=add_generation_prompt,
                    tokenize=True,
                    return_dict=False,
                ),
            )
        except Exception as exc:  # the template's own checks (e.g. no system role) fail one request
            raise InferenceError(
                f"{self.name}: the chat template rejected the {what}: {exc}",
                kind="invalid_input",
                error_type=type(exc).__name__,
            ) from None
        return [int(i) for i in ids]


def resolve_device(spec: str) -> torch.device:
    """The device ``spec`` names; ``auto`` is the first CUDA device, else MPS, else CPU."""
    if spec == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    device = torch.device(spec)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {spec!r}: this torch build sees no CUDA device (use device: cpu)")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ValueError(f"device {spec!r}: only {torch.cuda.device_count()} CUDA device(s) are visible")
    return device


def resolve_dtype(spec: str, device: torch.device) -> torch.dtype:
    """The weights' dtype: ``auto`` is bfloat16 (or float16) on a GPU and float32 on CPU."""
    if spec != "auto":
        return _DTYPES[spec]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32


def _eos_ids(
    model: transformers.PreTrainedModel, tokenizer: transformers.PreTrainedTokenizerBase
) -> tuple[int, ...]:
    config = getattr(model, "generation_config", None)
    raw = getattr(config, "eos_token_id", None) if config is not None else None
    if raw is None:
        raw = tokenizer.eos_token_id
    ids = [raw] if isinstance(raw, int) else list(raw or [])
    return tuple(int(i) for i in ids)


def _max_input_tokens(settings: TransformersSettings, model: transformers.PreTrainedModel) -> int | None:
    if settings.max_input_tokens is not None:
        return settings.max_input_tokens
    config = model.config.get_text_config()
    limit = getattr(config, "max_position_embeddings", None)
    return limit if isinstance(limit, int) and limit > 0 else None


def checkpoint_source(settings: TransformersSettings, head: Head) -> tuple[str, str | None]:
    """What ``from_pretrained`` loads for ``settings``: a GGUF file's dequantized copy, or the model itself.

    Raises:
        ValueError: A GGUF checkpoint for a reward model (GGUF files hold language models).
    """
    if settings.gguf is None:
        return settings.model, settings.revision
    if head != "causal_lm":
        raise ValueError(
            f"{settings.model}: a GGUF file holds a language model, not a sequence-classification "
            "reward model; convert the reward model with its own head to a transformers directory"
        )
    from openjudge.providers.transformers._gguf import converted_checkpoint

    return str(converted_checkpoint(settings)), None  # the copy is local: no hub revision


def load_model(settings: TransformersSettings, head: Head) -> LoadedModel:
    """Load ``settings.model`` with a causal-LM or a sequence-classification head.

    A GGUF checkpoint is dequantized once per machine first (see :mod:`._gguf`).

    Raises:
        ValueError: The device is not available.
        OSError: The checkpoint or tokenizer cannot be found or read.
    """
    with _LOADING:
        return _load(settings, head)


def _load(settings: TransformersSettings, head: Head) -> LoadedModel:
    started = time.monotonic()
    device = resolve_device(settings.device)
    dtype = resolve_dtype(settings.dtype, device)
    source, revision = checkpoint_source(settings, head)
    common = {"revision": revision, "trust_remote_code": settings.trust_remote_code}
    tokenizer = transformers.AutoTokenizer.from_pretrained(source, **common)
    tokenizer.padding_side = "left"  # generation appends on the right; pooling reads the last real token
    if settings.chat_template is not None:
        tokenizer.chat_template = settings.chat_template
    auto = (
        transformers.AutoModelForCausalLM
        if head == "causal_lm"
        else transformers.AutoModelForSequenceClassification
    )
    model = auto.from_pretrained(source, dtype=dtype, **common)
    model.to(device)  # type: ignore[arg-type]  # transformers types .to() through a decorator wrapper
    model.eval()
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token is None:
            raise ValueError(
                f"{settings.model}: the tokenizer has neither a pad nor an EOS token to pad with"
            )
        tokenizer.pad_token = tokenizer.eos_token
    if head == "sequence_classification" and model.config.get_text_config().pad_token_id is None:
        # Without it the head cannot find each row's last token in a padded batch.
        model.config.get_text_config().pad_token_id = tokenizer.pad_token_id
        model.config.pad_token_id = tokenizer.pad_token_id
    loaded = LoadedModel(
        model=model,
        tokenizer=tokenizer,
        device=device,
        dtype=dtype,
        eos_token_ids=_eos_ids(model, tokenizer),
        max_input_tokens=_max_input_tokens(settings, model),
        name=settings.model,
    )
    logger.info(
        "loaded %s (%s) on %s as %s in %.1fs",
        settings.model,
        head,
        device,
        str(dtype).removeprefix("torch."),
        time.monotonic() - started,
    )
    return loaded
