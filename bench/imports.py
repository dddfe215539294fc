"""Import cost of ``import openjudge`` in a fresh interpreter: wall time and ``-X importtime``.

    python -m bench.imports [RUNS]

Target: ``import openjudge`` within 150 ms wall (interpreter start included) on the
project's 2-core machine. Each run times a bare interpreter and then the import, one after
the other, so both see the same load; the figures are the best and the median of RUNS.
What bounds it: pydantic and the result models (``openjudge.results``); every other public
name is a lazy export (openjudge/_lazy.py) that costs nothing until used.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 150.0


def _wall(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
    return (time.perf_counter() - start) * 1e3


def _importtime(module: str) -> dict[str, tuple[int, int]]:
    """Module -> (self, cumulative) microseconds, as ``python -X importtime`` reports them."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    out: dict[str, tuple[int, int]] = {}
    for line in err.splitlines()[1:]:
        own, cumulative, name = line.removeprefix("import time:").split("|")
        out[name.strip()] = (int(own), int(cumulative))
    return out


def main(runs: int = 15) -> None:
    bare, full = [], []
    for _ in range(runs):
        bare.append(_wall("pass"))
        full.append(_wall("import openjudge"))
    profiles = [_importtime("openjudge") for _ in range(5)]
    times = {m: min((p.get(m, (0, 0)) for p in profiles), key=lambda t: t[1]) for m in profiles[0]}
    print(f"import openjudge, fresh interpreter, {runs} runs (bare interpreter run just before each):")
    print(
        f"  wall, best:   {min(full):6.1f} ms (bare {min(bare):5.1f} ms, import {min(full) - min(bare):5.1f} ms)"
    )
    print(
        f"  wall, median: {statistics.median(full):6.1f} ms "
        f"(bare {statistics.median(bare):5.1f} ms; the machine's load moves the median)"
    )
    for module in ("openjudge", "openjudge.results", "pydantic", "openjudge._lazy"):
        own, cumulative = times.get(module, (0, 0))
        print(
            f"  -X importtime {module:<18} cumulative {cumulative / 1e3:6.1f} ms (self {own / 1e3:5.1f} ms), "
            "best of 5"
        )
    verdict = "met" if min(full) <= TARGET_MS else "NOT met"
    print(f"  target: {TARGET_MS:.0f} ms wall (best run): {verdict}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
