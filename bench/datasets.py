"""Graders measured on data others wrote, side by side with the tool a user would pick instead.

Run: ``python bench/datasets.py [--only math]`` from the repository root.

Math (``math_*`` functions): every labelled suite under ``tests/graders/math/suites/``
(math-verify's own tests, and other projects' tests of their math graders, each file with a
header naming its source repository, path, commit and licence) is graded by
``math_answer_equivalence(reference=..., response=...)`` and by math-verify 0.9.0
(``verify(parse(gold), parse(pred))``, its defaults, as TRL and open-r1 call it) in the same
run. Printed per suite: agreement with the labels, false accepts (a wrong answer scored
correct: a reward a policy can farm) and false rejects.

Targets: the math-verify suite >= 95 % agreement and 0 false accepts; every other suite
>= 90 %, 0 false accepts, and ahead of math-verify. What bounds them: the labels themselves
(a few contradict each other or mathematics; the disagreements are printed with ``-v``).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from openjudge.graders.math import MathAnswerEquivalenceGrader
from openjudge.graders.schema import GraderScore

ROOT = Path(__file__).resolve().parents[1]
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
    finally:
        grader.workers.close()
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--only", default="math", help="comma-separated sections (math)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every disagreement")
    args = parser.parse_args()
    sections = set(args.only.split(","))
    ok = True
    if "math" in sections:
        ok = asyncio.run(math_bench(args.verbose)) and ok
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
