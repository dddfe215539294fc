"""The one exception local inference raises, classified for the caller's retry policy.

Torch-free, and independent of the chat core: the adapters (:mod:`._chat`,
:mod:`~openjudge.providers.transformers._reward`) translate it into the core's error type.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["InferenceError", "InferenceErrorKind", "is_device_fault", "is_out_of_memory"]

InferenceErrorKind = Literal["provider_error", "invalid_input"]

_OOM_MARKERS = ("out of memory", "CUDA_ERROR_OUT_OF_MEMORY", "MPS backend out of memory")
_DEVICE_MARKERS = ("CUDA error", "CUBLAS_STATUS", "CUDNN_STATUS", "device-side assert", "HIP error")


class InferenceError(Exception):
    """A local model call failed.

    Attributes:
        kind: ``invalid_input`` (this request cannot be run: too long, no chat template)
            or ``provider_error`` (the model, the device or the loader failed).
        retryable: Whether another attempt may succeed (out of memory: a smaller batch may fit).
        error_type: Name of the underlying exception class.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: InferenceErrorKind = "provider_error",
        retryable: bool = False,
        error_type: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind: InferenceErrorKind = kind
        self.retryable = retryable
        self.error_type = error_type or type(self).__name__

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (self.message, self.kind, self.retryable, self.error_type))

    def __str__(self) -> str:
        return self.message


def _rebuild(message: str, kind: InferenceErrorKind, retryable: bool, error_type: str) -> InferenceError:
    return InferenceError(message, kind=kind, retryable=retryable, error_type=error_type)


def is_out_of_memory(exc: BaseException) -> bool:
    """A device (or host) allocation failed: a smaller batch may fit."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    return isinstance(exc, RuntimeError) and any(m in str(exc) for m in _OOM_MARKERS)


def is_device_fault(exc: BaseException) -> bool:
    """Out of memory, or an error the accelerator's runtime reported."""
    if is_out_of_memory(exc):
        return True
    return isinstance(exc, RuntimeError) and any(m in str(exc) for m in _DEVICE_MARKERS)
