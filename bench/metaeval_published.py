"""Reproduce published judge figures from the benchmarks' stored outputs, with our intervals.

    git clone https://github.com/ScalerLab/JudgeBench
    git clone https://github.com/princeton-nlp/LLMBar
    python -m bench.metaeval_published --judgebench JudgeBench --llmbar LLMBar [--markdown]

(a bare git directory works too: files are then read with ``git show HEAD:<file>``).
Nothing calls a judge: every stored output is read by ``openjudge.metaeval`` as a
recording (:mod:`openjudge.metaeval._recorded`) and summarised as ``openjudge meta-eval
--recorded FILE --format judgebench|llmbar`` does. For each judge it prints the figure the
benchmark publishes, the same figure computed by the benchmark's own code, ours, our 95 %
bootstrap interval (1,000 resamples, seed 0), and whether ours is within 0.01 percentage
points of the published one (target: every row).

* JudgeBench publishes accuracy per judge (paper and leaderboard); the figures quoted in
  ``PUBLISHED`` are those of the issue that asked for this check. The benchmark's own
  code is ``utils/metrics.py``'s ``compute_final_metrics``, run here on the same file
  (pure Python, read from the repository). Its pair count of inconsistent pairs
  (``n_inconsistent``) is reported too.
* LLMBar publishes ``statistics.json`` beside every evaluator's ``result.json``:
  ``correct_average`` (accuracy averaged over the two orders) and ``equal`` (both orders
  agree). Every evaluator on every set is checked.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openjudge.metaeval._metrics import summarize
from openjudge.metaeval._recorded import load_benchmark_recording
from openjudge.metaeval._report import BenchmarkFigure

TOLERANCE_PP = 0.01

PUBLISHED: dict[str, float] = {
    # JudgeBench, GPT-4o response pairs (350): accuracy in percent, as quoted in the issue.
    "reward_model:Skywork/Skywork-Reward-Llama-3.1-8B": 62.29,
    "reward_model:internlm/internlm2-7b-reward": 59.43,
    "arena_hard:o1-mini-2024-09-12": 65.71,
}
PUBLISHED_INCONSISTENT = {"arena_hard:o1-mini-2024-09-12": 110}


class Repository:
    """Files of a repository: a checkout, or a bare git directory read with ``git show``."""

    def __init__(self, root: Path, scratch: Path) -> None:
        self.root = root
        self.scratch = scratch
        self.bare = not (root / "README.md").exists() and (root / "HEAD").exists()

    def files(self, wanted: Callable[[str], bool]) -> list[str]:
        """The repository's file names (relative, with ``/``) that ``wanted`` accepts."""
        names: Iterator[str]
        if not self.bare:
            names = (p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file())
        else:
            names = iter(
                subprocess.run(
                    ["git", f"--git-dir={self.root}", "ls-tree", "-r", "--name-only", "HEAD"],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.splitlines()
            )
        return sorted(name for name in names if wanted(name))

    def path(self, name: str) -> Path | None:
        """A readable path of the file, or ``None`` if the snapshot lacks its content."""
        if not self.bare:
            return self.root / name
        target = self.scratch / name
        if not target.exists():
            shown = subprocess.run(
                ["git", f"--git-dir={self.root}", "show", f"HEAD:{name}"], capture_output=True
            )
            if shown.returncode != 0 or not shown.stdout:
                return None
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(shown.stdout)
        return target


@dataclass(frozen=True)
class Row:
    judge: str
    benchmark: str
    figure: str
    published: float | None
    theirs: float | None
    ours: BenchmarkFigure

    @property
    def ours_pp(self) -> float:
        assert self.ours.estimate.value is not None
        return self.ours.estimate.value * 100

    @property
    def matches(self) -> bool | None:
        reference = self.published if self.published is not None else self.theirs
        return None if reference is None else abs(self.ours_pp - reference) <= TOLERANCE_PP + 1e-9


def _their_metric(repo: Repository) -> Callable[[list[dict[str, Any]], bool], float] | None:
    source = repo.path("utils/metrics.py")
    if source is None:
        return None
    namespace: dict[str, Any] = {}
    exec(
        compile(source.read_text(encoding="utf-8"), str(source), "exec"), namespace
    )  # the benchmark's own rule
    function: Callable[[list[dict[str, Any]], bool], float] = namespace["compute_final_metrics"]
    return function


def judgebench_rows(repo: Repository) -> Iterator[Row]:
    theirs = _their_metric(repo)
    for name in repo.files(lambda n: n.startswith("outputs/") and n.endswith(".jsonl")):
        path = repo.path(name)
        if path is None:
            print(f"skipped (content not in the snapshot): {name}", file=sys.stderr)
            continue
        run = load_benchmark_recording(path, format="judgebench")
        report = summarize(run)
        grader = report.graders[0]
        split = re.search(r"response_model=([^,]+)", name)
        bench = f"JudgeBench {split.group(1) if split else ''} ({report.data.items} pairs)"
        pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        their_accuracy = theirs(pairs, len(pairs[0]["judgments"]) == 2) if theirs else None
        figures = {f.key: f for f in grader.benchmark}
        yield Row(
            grader.name,
            bench,
            "accuracy",
            PUBLISHED.get(grader.name),
            their_accuracy,
            figures["judgebench_accuracy"],
        )
        inconsistent = PUBLISHED_INCONSISTENT.get(grader.name)
        yield Row(
            grader.name,
            bench,
            "inconsistent pairs",
            None if inconsistent is None else 100 * inconsistent / report.data.items,
            None,
            figures["judgebench_inconsistent"],
        )


def _percent(text: str) -> float:
    match = re.search(r"([0-9.]+)%\s*$", text)
    if match is None:
        raise ValueError(f"no percentage in {text!r}")
    return float(match.group(1))


def llmbar_rows(repo: Repository) -> Iterator[Row]:
    # LLMBar's five sets and the processed MT-Bench, FairEval and LLMEval^2 subsets (not CaseStudy).
    for name in repo.files(
        lambda n: "/evaluators/" in n and n.endswith("/result.json") and "/CaseStudy/" not in n
    ):
        path, stats_path = repo.path(name), repo.path(name.replace("result.json", "statistics.json"))
        if path is None or stats_path is None:
            print(f"skipped (content not in the snapshot): {name}", file=sys.stderr)
            continue
        published = json.loads(stats_path.read_text(encoding="utf-8"))
        report = summarize(load_benchmark_recording(path, format="llmbar"))
        grader = report.graders[0]
        subset = name.split("/evaluators/")[0].removeprefix("Dataset/")
        bench = f"LLMBar {subset} ({report.data.items})"
        figures = {f.key: f for f in grader.benchmark}
        yield Row(
            grader.name,
            bench,
            "correct_average",
            _percent(published["correct_average"]),
            None,
            figures["llmbar_correct_average"],
        )
        yield Row(grader.name, bench, "equal", _percent(published["equal"]), None, figures["llmbar_equal"])


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _interval(figure: BenchmarkFigure) -> str:
    e = figure.estimate
    return "[-]" if e.low is None or e.high is None else f"[{e.low * 100:.2f}, {e.high * 100:.2f}]"


def render(rows: list[Row], *, markdown: bool) -> str:
    header = ["judge", "benchmark", "figure", "published", "their code", "ours", "95% interval", "match"]
    table = [
        [
            r.judge,
            r.benchmark,
            r.figure,
            _cell(r.published),
            _cell(r.theirs),
            f"{r.ours_pp:.2f}",
            _interval(r.ours),
            {True: "yes", False: "NO", None: "-"}[r.matches],
        ]
        for r in rows
    ]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join([*lines, *("| " + " | ".join(row) + " |" for row in table)])
    widths = [max(len(c) for c in col) for col in zip(header, *table, strict=True)]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [header, *table]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--judgebench", type=Path, help="a JudgeBench checkout (or bare git directory)")
    parser.add_argument("--llmbar", type=Path, help="an LLMBar checkout (or bare git directory)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as scratch:
        if args.judgebench:
            rows += judgebench_rows(Repository(args.judgebench, Path(scratch) / "judgebench"))
        if args.llmbar:
            rows += llmbar_rows(Repository(args.llmbar, Path(scratch) / "llmbar"))
    print(render(rows, markdown=args.markdown))
    checked = [r for r in rows if r.matches is not None]
    runs = {(r.judge, r.benchmark) for r in checked}
    llmbar = sum(b.startswith("LLMBar") for _, b in runs)
    wrong = [r for r in checked if not r.matches]
    print(
        f"\n{len(checked)} figures checked ({sum(r.published is not None for r in checked)} against published "
        f"figures, the rest against the benchmark's own code) from {llmbar} LLMBar and {len(runs) - llmbar} "
        f"JudgeBench judge runs; {len(wrong)} differ by more than {TOLERANCE_PP} percentage points (target: 0)"
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
