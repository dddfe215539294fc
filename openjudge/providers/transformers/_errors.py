"""How a torch failure is classified for the one exception local inference raises.

:class:`~openjudge.errors.InferenceError` is defined with the exception tree in
:mod:`openjudge.errors`. Torch-free, and independent of the chat core: the adapters
(:mod:`._chat`, :mod:`~openjudge.providers.transformers._reward`) translate it into the core's error type.
"""

from __future__ import annotations

from openjudge.errors import InferenceError

__all__ = ["InferenceError", "is_device_fault", "is_out_of_memory"]

_OOM_MARKERS = ("out of memory", "CUDA_ERROR_OUT_OF_MEMORY", "MPS backend out of memory")
_DEVICE_MARKERS = ("CUDA error", "CUBLAS_STATUS", "CUDNN_STATUS", "device-side assert", "HIP error")


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
