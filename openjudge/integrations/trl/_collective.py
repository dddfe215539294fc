"""Every training process stops together: a reward function raises on all of them, or on none.

TRL gathers every process's rewards right after its reward functions return
(``gather(rewards_per_func)`` in ``_calculate_rewards``). A function that raised on one
process alone (its judge failed too often: :class:`~openjudge.errors.FailureRateExceeded`; a bad batch)
would leave the others waiting in that gather until NCCL's timeout, half an hour by
default. So, when ``torch.distributed`` runs more than one process, each call of a
reward function ends with an exchange between the processes: every process says
whether its call raised, and when one did, every process raises, at the same call:
its own exception, or the first failed process's (with a note naming it).

Every process calls every reward function once per batch, so every process makes the
same number of exchanges; they are made one at a time per process (a lock) in a worker
thread, off TRL's event loop, whose other judge calls keep running meanwhile. Which of
its functions a process's *k*-th exchange comes from may differ between processes (TRL
awaits them together); it does not matter, since every process draws the same
conclusion from the same exchanged values.

Nothing here imports torch: it is used only when the trainer has already imported it
and started ``torch.distributed``.
"""

from __future__ import annotations

import pickle
import sys
import threading
from typing import Any

import anyio.to_thread

from openjudge.errors import OpenJudgeError

__all__ = ["process_count", "raise_together"]

_LOCK = threading.Lock()


def _distributed() -> Any | None:
    """``torch.distributed`` when it runs several processes, else ``None``."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    dist = torch.distributed
    if not dist.is_available() or not dist.is_initialized() or dist.get_world_size() < 2:
        return None
    return dist


def process_count() -> int:
    """How many training processes score this batch's groups (1 without ``torch.distributed``)."""
    dist = _distributed()
    return 1 if dist is None else int(dist.get_world_size())


async def raise_together(error: BaseException | None) -> None:
    """Raise ``error`` (or another process's) on every process, or return on every process.

    Args:
        error: What this process's reward function raised, ``None`` when it returned.

    Raises:
        BaseException: ``error``; or, when only another process failed, that process's
            exception (unpicklable ones as an :class:`~openjudge.errors.OpenJudgeError`
            carrying its message).
    """
    dist = _distributed()
    if dist is None:
        if error is not None:
            raise error
        return
    peer = await anyio.to_thread.run_sync(_exchange, dist, error)
    if error is not None:
        raise error
    if peer is not None:
        raise peer


def _exchange(dist: Any, error: BaseException | None) -> BaseException | None:
    """The first other process's exception of this exchange (``None``: none failed)."""
    with _LOCK:
        _use_this_process_device(dist)
        failed: list[int] = [0] * dist.get_world_size()
        dist.all_gather_object(failed, 1 if error is not None else 0)
        if not any(failed):
            return None
        errors: list[BaseException | None] = [None] * len(failed)
        dist.all_gather_object(errors, _portable(error, dist.get_rank()) if error is not None else None)
    rank = dist.get_rank()
    for other, peer in enumerate(errors):
        if other != rank and peer is not None:
            peer.add_note(f"openjudge: raised by training process {other}; every process stops at this step")
            return peer
    return None


def _use_this_process_device(dist: Any) -> None:
    """NCCL's object exchange uses the thread's current CUDA device: make it this process's."""
    if dist.get_backend() != "nccl":
        return
    from accelerate import PartialState  # type: ignore[import-untyped]  # no py.typed; TRL depends on it

    torch = sys.modules["torch"]
    torch.cuda.set_device(PartialState().device)


def _portable(error: BaseException, rank: int) -> BaseException:
    """``error``, or an :class:`OpenJudgeError` with its message when it does not pickle."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return OpenJudgeError(f"process {rank}'s reward function raised {type(error).__name__}: {error}")
    return error
