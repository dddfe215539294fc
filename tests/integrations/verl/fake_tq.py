"""An in-memory ``transfer_queue`` so VERL's V1 code (``agent_loop_tq``, ``ReplayBuffer``) runs on CPU.

TransferQueue (a distributed key-value store) needs its controller actors on Ray; VERL's
V1 modules call only a handful of its functions, so in-process tests use this module,
which provides them over a dict, keeping
the tag-merging semantics the replay buffer relies on. Everything else is VERL's code.
Install it with :func:`installed` before importing ``verl.trainer.ppo.v1``.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class KVBatchMeta:
    partition_id: str
    keys: list[str]
    tags: list[dict[str, Any]]
    extra_info: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.keys)


@dataclass
class Store:
    """partition -> key -> (tag, fields)."""

    tags: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    values: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    lock: threading.RLock = field(default_factory=threading.RLock)
    """The trainer-loop tests write from an agent-loop thread while the driver polls."""

    def put(
        self, partition_id: str, key: str, tag: dict[str, Any] | None, fields: dict[str, Any] | None
    ) -> None:
        with self.lock:
            self._put(partition_id, key, tag, fields)

    def _put(
        self, partition_id: str, key: str, tag: dict[str, Any] | None, fields: dict[str, Any] | None
    ) -> None:
        self.tags.setdefault(partition_id, {}).setdefault(key, {}).update(tag or {})
        if fields is not None:
            self.values.setdefault(partition_id, {}).setdefault(key, {}).update(fields)


STORE = Store()


def _row(fields: Any, i: int) -> dict[str, Any]:
    row = {}
    for name in fields.keys():  # noqa: SIM118  # iterating a TensorDict walks its batch, not its keys
        value = fields.get(name)
        item = value[i]
        row[name] = getattr(item, "data", item)
    return row


def init(*args: Any, **kwargs: Any) -> None:
    return None


async def async_kv_put(
    key: str, partition_id: str, tag: dict[str, Any] | None = None, fields: Any = None
) -> None:
    STORE.put(partition_id, key, tag, fields)


def kv_put(key: str, partition_id: str, tag: dict[str, Any] | None = None, fields: Any = None) -> None:
    STORE.put(partition_id, key, tag, fields)


async def async_kv_batch_put(
    keys: list[str], partition_id: str, fields: Any = None, tags: Any = None
) -> None:
    kv_batch_put(keys, partition_id, fields, tags)


def kv_batch_put(keys: list[str], partition_id: str, fields: Any = None, tags: Any = None) -> None:
    for i, key in enumerate(keys):
        STORE.put(
            partition_id, key, tags[i] if tags else None, _row(fields, i) if fields is not None else None
        )


def kv_list(partition_id: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    with STORE.lock:
        return {
            p: {k: dict(t) for k, t in items.items()}
            for p, items in STORE.tags.items()
            if partition_id in (None, p)
        }


def kv_batch_get(keys: list[str], partition_id: str, select_fields: list[str] | None = None) -> Any:
    """A TensorDict as TransferQueue returns one: tensors of each field as one jagged nested
    tensor, other values as a ``NonTensorStack`` (``.tolist()``, indexing, iteration)."""
    import torch
    from verl.utils import tensordict_utils as tu

    with STORE.lock:
        values = STORE.values.get(partition_id, {})
        names = select_fields or sorted({n for k in keys for n in values.get(k, {})})
        columns = {name: [values[k][name] for k in keys] for name in names}
    out: dict[str, Any] = {}
    for name, column in columns.items():
        if column and all(isinstance(v, torch.Tensor) for v in column):
            out[name] = torch.nested.as_nested_tensor(column, layout=torch.jagged)
        else:
            out[name] = column
    return tu.get_tensordict(out)


def kv_clear(partition_id: str, keys: list[str]) -> None:
    with STORE.lock:
        for key in keys:
            STORE.tags.get(partition_id, {}).pop(key, None)
            STORE.values.get(partition_id, {}).pop(key, None)


@contextmanager
def installed() -> Iterator[Store]:
    """VERL's ``transfer_queue`` calls reach this in-memory store (and a fresh one) while active.

    When TransferQueue is installed, its functions are patched on the real module, so the
    store is used whichever of VERL's modules imported it first (the group tests import
    the real one at collection); otherwise ``import transfer_queue`` gives a stand-in module.
    """
    global STORE
    STORE = Store()
    names = (
        "KVBatchMeta",
        "init",
        "async_kv_put",
        "kv_put",
        "async_kv_batch_put",
        "kv_batch_put",
        "kv_list",
        "kv_batch_get",
        "kv_clear",
    )
    try:
        import transfer_queue as real  # type: ignore[import-untyped]  # no py.typed
    except ImportError:
        real = None
    if real is not None:
        saved = {name: getattr(real, name, None) for name in names}
        for name in names:
            setattr(real, name, globals()[name])
        try:
            yield STORE
        finally:
            for name, value in saved.items():
                setattr(real, name, value)
        return
    module = types.ModuleType("transfer_queue")
    for name in names:
        setattr(module, name, globals()[name])
    previous = sys.modules.get("transfer_queue")
    sys.modules["transfer_queue"] = module
    try:
        yield STORE
    finally:
        if previous is None:
            sys.modules.pop("transfer_queue", None)
        else:
            sys.modules["transfer_queue"] = previous
