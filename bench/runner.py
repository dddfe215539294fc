"""Runner and chat-core benchmarks: per-call CPU, wall time against the physical limit, memory.

    python -m bench.runner            # all
    python -m bench.runner ratios     # one or more of the names below

Each line prints the measured figure, its target and what bounds it. "ideal" is the
physical limit for a judge of fixed latency L at concurrency C: ceil(N / C) * L.
Client CPU is the CPU time of this process only (the judge server runs in a child
process). Figures are noisy on a shared machine: print ``uptime`` beside them.

``ratios`` holds the speed goals: absolute figures differ ~3x between machines of the
same kind, so each goal is a ratio to raw aiohttp measured in the same run (bench/floor.py
says what each side does per call). Each benchmark lives in the module named below.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

BENCHES = {
    "overhead": "bench.framework:bench_overhead",
    "census": "bench.collector:bench_census",
    "keeping": "bench.collector:bench_keeping",
    "layers": "bench.layers:bench_layers",
    "ratios": "bench.ratios:bench_ratios",
    "sdk": "bench.ratios:bench_sdk",
    "scale": "bench.wall_time:bench_scale",
    "waves": "bench.wall_time:bench_waves",
    "memory": "bench.framework:bench_memory",
    "instructions": "bench.framework:bench_instructions",
    "bytecodes": "bench.layers:bench_bytecodes",
}
"""Each subcommand's function, as ``module:function``."""

CHILDREN = {
    "_memory_child": "bench.framework:memory_child",
    "_instructions_child": "bench.framework:instructions_child",
}
"""Processes the benchmarks start (``python -m bench.runner _memory_child N``), measured apart."""


def _load(target: str) -> Callable[..., None]:
    module, _, name = target.partition(":")
    function: Callable[..., None] = getattr(importlib.import_module(module), name)
    return function


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] and args[0] in CHILDREN:
        _load(CHILDREN[args[0]])(int(args[1]))
        return
    unknown = [name for name in args if name not in BENCHES]
    if unknown:
        sys.exit(f"unknown benchmark {', '.join(unknown)}: choose from {', '.join(BENCHES)}")
    for name in args or list(BENCHES):
        _load(BENCHES[name])()


if __name__ == "__main__":
    main()
