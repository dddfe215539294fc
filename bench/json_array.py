"""Reading a JSON-array dataset: openjudge's streaming reader against json.load and ijson.

    python -m bench.json_array [N]

Writes N (default 60,000) agent-style records, pretty-printed (about 35 MB), and reads them
three times each way, printing the best CPU time and MB/s of each:

* ``JsonArrayReader`` (``openjudge/jobs/_json_array.py``): one element at a time, with the
  file line where each starts, as ``iter_samples`` runs it (undecodable bytes kept for a
  per-element check, the size cap on); memory O(largest element, at most the cap).
* ``json.load``: the whole file in memory at once; the floor for pure decoding.
* ``ijson.items(..., use_float=True)`` with its C backend (yajl2_c), when ijson is installed:
  the streaming library that could replace the reader. It gives no line numbers.

Target: the reader within 1.5x of json.load's CPU time and within 1.25x of ijson's (past
that, the line numbers would no longer pay for a hand-made reader). What bounds it: ``json.JSONDecoder.raw_decode`` does
the decoding (C); the reader adds a regex skip of whitespace and a line count per element.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from openjudge.config._spec import DEFAULT_MAX_RECORD_BYTES
from openjudge.jobs._json_array import JsonArrayReader


def _record(i: int, rng: random.Random) -> dict[str, object]:
    return {
        "id": f"s{i}",
        "question": "What is " + "x " * rng.randint(5, 60),
        "answer": str(i),
        "messages": [
            {"role": "user", "content": "hello " * 20},
            {"role": "assistant", "content": "ok " * 30},
        ],
        "score": i / 7,
        "meta": {"n": i, "ok": True, "nested": {"v": None}},
    }


def _best_cpu(read: Callable[[], int], expected: int) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        count = read()
        best = min(best, time.process_time() - start)
        assert count == expected, (count, expected)
    return best


def main(n: int) -> None:
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.json"
        path.write_text("[\n" + ",\n".join(json.dumps(_record(i, rng), indent=1) for i in range(n)) + "\n]\n")
        megabytes = path.stat().st_size / 1e6

        def reader() -> int:  # as iter_samples reads: bytes that are not UTF-8 kept, the size cap on
            with path.open(encoding="utf-8", errors="surrogateescape") as f:
                return sum(1 for _ in JsonArrayReader(f, 1 << 20, max_element=DEFAULT_MAX_RECORD_BYTES))

        def whole() -> int:
            with path.open(encoding="utf-8") as f:
                return len(json.load(f))

        ways: dict[str, Callable[[], int]] = {"JsonArrayReader": reader, "json.load": whole}
        try:
            import ijson  # type: ignore[import-not-found, unused-ignore]  # optional, not a dependency

            def library() -> int:
                with path.open("rb") as f:
                    return sum(1 for _ in ijson.items(f, "item", use_float=True))

            ways[f"ijson ({ijson.backend})"] = library
        except ImportError:
            print("ijson is not installed: pip install ijson to compare with it")
        print(f"{n:,} records, {megabytes:.0f} MB")
        times = {name: _best_cpu(read, n) for name, read in ways.items()}
        for name, seconds in times.items():
            print(f"  {name:24s} {seconds:6.2f} s CPU  {megabytes / seconds:5.0f} MB/s")
        ratio = times["JsonArrayReader"] / times["json.load"]
        print(f"reader / json.load: {ratio:.2f}x (target <= 1.5x)")
        for name, seconds in times.items():
            if name.startswith("ijson"):
                print(f"reader / ijson: {times['JsonArrayReader'] / seconds:.2f}x (target <= 1.25x)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60_000)
