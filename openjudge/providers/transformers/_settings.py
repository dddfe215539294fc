"""What a local ``transformers`` model is, where it runs and how calls are batched.

Torch-free: settings are validated (and configs checked) without importing torch.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["DTYPES", "DType", "TransformersSettings", "checkpoint_fingerprint"]

DType = Literal["auto", "float32", "float16", "bfloat16"]
DTYPES: tuple[str, ...] = ("auto", "float32", "float16", "bfloat16")

_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


class TransformersSettings(BaseModel):
    """One in-process model.

    Attributes:
        model: A local directory, a Hugging Face hub id (downloaded by ``transformers``
            on first load, into its usual cache), or a ``.gguf`` file (dequantized once per
            machine; see ``gguf_file``).
        gguf_file: A GGUF checkpoint inside ``model`` (a directory or hub id), as
            ``from_pretrained(model, gguf_file=...)`` takes it. A GGUF checkpoint is
            dequantized to ``float32`` by transformers on its first load and saved as a
            regular checkpoint under ``cache_dir``; later loads, in any process, read that copy.
        cache_dir: Where dequantized GGUF checkpoints are kept (default
            ``$XDG_CACHE_HOME/openjudge/gguf``, ``~/.cache`` when unset).
        revision: The hub revision (branch, tag or commit) to load.
        device: ``auto`` (the first CUDA device if there is one, else CPU), ``cpu``,
            ``mps``, ``cuda`` or ``cuda:N``.
        dtype: ``auto`` (bfloat16 on a GPU that supports it, float16 on other GPUs,
            float32 on CPU) or an explicit dtype.
        max_batch_size: The most requests one forward pass (or one batched ``generate``)
            takes. It halves after an out-of-memory error and grows back after successes.
        batch_window_s: How long the first queued request waits for others to share its
            batch. Requests that queued while a batch ran go at once.
        max_new_tokens: Generation cap when a call names no ``max_tokens``.
        max_input_tokens: Longer inputs fail (``invalid_input``) instead of being cut;
            default: the model's ``max_position_embeddings`` when it declares one.
        trust_remote_code: Run the checkpoint's own Python code (off unless you trust it).
        chat_template: A Jinja chat template replacing the tokenizer's own (or supplying
            one the tokenizer lacks).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1)
    gguf_file: str | None = Field(default=None, min_length=1)
    cache_dir: str | None = None
    revision: str | None = None
    device: str = "auto"
    dtype: DType = "auto"
    max_batch_size: int = Field(default=8, ge=1, le=4096)
    batch_window_s: float = Field(default=0.01, ge=0, le=60)
    max_new_tokens: int = Field(default=512, ge=1)
    max_input_tokens: int | None = Field(default=None, ge=1)
    trust_remote_code: bool = False
    chat_template: str | None = None

    @field_validator("device")
    @classmethod
    def _known_device(cls, value: str) -> str:
        if not _DEVICE.match(value):
            raise ValueError(f"device must be 'auto', 'cpu', 'mps', 'cuda' or 'cuda:N', got {value!r}")
        return value

    @model_validator(mode="after")
    def _one_gguf(self) -> TransformersSettings:
        if self.gguf_file is not None and self.model.lower().endswith(".gguf"):
            raise ValueError(
                f"model names a .gguf file ({self.model!r}) and gguf_file is {self.gguf_file!r}: "
                "name the file in one of them (model: a directory or hub id, gguf_file: the file in it)"
            )
        return self

    @property
    def gguf(self) -> tuple[str, str] | None:
        """``(directory or hub id, file name)`` when the checkpoint is a GGUF file, else ``None``."""
        if self.gguf_file is not None:
            return self.model, self.gguf_file
        if self.model.lower().endswith(".gguf"):
            path = Path(self.model).expanduser()
            return str(path.parent), path.name
        return None


def checkpoint_fingerprint(model: str) -> str | None:
    """A digest of a local checkpoint's files (names, sizes, modification times).

    ``model`` is a directory or one file (a ``.gguf``). Part of cache keys, so a checkpoint
    saved again at the same path is a new model. ``None`` for a hub id: its ``revision``
    identifies it (pin a commit for a cache that follows it).
    """
    if os.path.isfile(model):
        stat = os.stat(model)
        name = os.path.basename(model)
        return hashlib.sha256(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode()).hexdigest()[:16]
    try:
        with os.scandir(model) as found:
            entries = sorted((e for e in found if e.is_file()), key=lambda e: e.name)
    except OSError:  # not a directory: a hub id (a missing path fails at load; failures are never cached)
        return None
    digest = hashlib.sha256()
    for entry in entries:
        stat = entry.stat()
        digest.update(f"{entry.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]
