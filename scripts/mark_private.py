"""Mark implementation modules private: ``git mv`` each to its ``_name`` and rewrite every reference.

The convention (docs/architecture.md, "Private modules"): a module whose name starts with
``_`` is internal; a package's ``__init__`` re-exports its public names. The modules that
stay public without an underscore are listed once, in ``PUBLIC_MODULES`` of
tests/test_public_api.py; a test fails on any other public-looking module.

Each table row is ``old dotted name -> new dotted name`` and one line on why. A run, for
each row whose table is chosen:

1. ``git mv`` the module (a ``.py`` file or a package folder) when the old one still
   exists and the new one does not;
2. rewrites every reference in openjudge/, tests/, bench/, docs/, scripts/, README.md and
   pyproject.toml (entry points, import-linter, mypy overrides): dotted names in code,
   strings and prose (``openjudge.jobs.engine`` and ``openjudge.jobs.engine.run_job``),
   file paths (``openjudge/jobs/engine.py``), and ``from openjudge.jobs import engine``
   (rewritten to ``from openjudge.jobs import _engine as engine`` so the code reads on).

Running it again changes nothing (the old names are gone), so it is safe to rerun after a
merge brings in new references to an old name: they are rewritten too.

Usage::

    python scripts/mark_private.py                 # APPLIED: the application layer (done)
    python scripts/mark_private.py --pending       # PENDING too: graders, models, runner, ...
    python scripts/mark_private.py --pending --dry-run
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("openjudge", "tests", "bench", "docs", "scripts", "examples")
SCANNED_FILES = ("README.md", "pyproject.toml")
SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".txt", ".sh", ".cfg", ".ini", ".json"}
SELF = Path(__file__).resolve()


@dataclass(frozen=True, slots=True)
class Rename:
    old: str
    new: str
    why: str


def _rows(*rows: tuple[str, str] | tuple[str, str, str]) -> tuple[Rename, ...]:
    """``(old, why)`` rows, the new name being the old one with ``_`` before its last part,
    or ``(old, why, new)`` rows."""
    out = []
    for row in rows:
        old, why = row[0], row[1]
        parent, _, leaf = old.rpartition(".")
        out.append(Rename(old, row[2] if len(row) == 3 else f"{parent}._{leaf}", why))
    return tuple(out)


# Applied in the branch that introduced this script: the application layer. Each package's
# __init__ exports the few names a program needs (pinned in tests/test_public_api.py).
APPLIED: tuple[Rename, ...] = _rows(
    ("openjudge.jobs.datasets", "dataset readers; openjudge.jobs exports what a program reads"),
    ("openjudge.jobs.records", "the results-file line models; read through openjudge.jobs.read_results"),
    ("openjudge.jobs.results", "results writer and readers; read_results etc. exported by openjudge.jobs"),
    ("openjudge.jobs.fingerprint", "what binds a results file to its job; internal to resume"),
    ("openjudge.jobs.resume", "resume decisions; JobMismatchError exported by openjudge.jobs"),
    ("openjudge.jobs.engine", "the job engine; run_job and RunStats exported by openjudge.jobs"),
    ("openjudge.jobs.preflight", "dataset preflight for `openjudge validate`; CLI internals"),
    ("openjudge.jobs.summary", "summary statistics and the table; RunSummary exported by openjudge.jobs"),
    ("openjudge.jobs.report", "the HTML report; write_report exported by openjudge.jobs"),
    ("openjudge.jobs.replay", "re-grading part of a results file; engine internals"),
    ("openjudge.config.loader", "YAML loading and messages; load_config exported by openjudge.config"),
    (
        "openjudge.config.build",
        "config -> providers, graders, runner; build_job exported by openjudge.config",
    ),
    ("openjudge.config.custom", "importing module:Class types from a config's folder"),
    ("openjudge.config.locations", "file/line positions of YAML fields, for messages"),
    ("openjudge.config.params", "checking grader params against constructors, for messages"),
    ("openjudge.cli.run", "`openjudge run`; the CLI's only public name is openjudge.cli.main"),
    ("openjudge.cli.validate", "`openjudge validate` and `estimate`"),
    ("openjudge.cli.estimate", "token and cost estimates for `openjudge estimate`"),
    ("openjudge.cli.import_openai", "`openjudge import-openai-graders`"),
    (
        "openjudge.distributed.limits",
        "provider limits split per worker; plan_workers exported by the package",
    ),
    (
        "openjudge.distributed.ray_backend",
        "the Ray back end; RayBackend and grade_on_ray exported by the package",
    ),
    ("openjudge.metaeval.charts", "SVG charts of the HTML report"),
    ("openjudge.metaeval.cli", "`openjudge meta-eval`"),
    ("openjudge.metaeval.compare", "two runs compared; compare_runs exported by openjudge.metaeval"),
    ("openjudge.metaeval.configured", "collect_config; exported by openjudge.metaeval"),
    ("openjudge.metaeval.console", "the text tables; render_report exported by openjudge.metaeval"),
    ("openjudge.metaeval.headline", "benchmarks' own headline rules"),
    ("openjudge.metaeval.html", "the HTML report; render_html exported by openjudge.metaeval"),
    ("openjudge.metaeval.items", "labelled items; PairItem etc. exported by openjudge.metaeval"),
    ("openjudge.metaeval.judgements", "the --judgements file; read/write exported by openjudge.metaeval"),
    ("openjudge.metaeval.loaders", "labelled-data loaders; load_labelled exported by openjudge.metaeval"),
    ("openjudge.metaeval.metrics", "the metrics; summarize exported by openjudge.metaeval"),
    ("openjudge.metaeval.readings", "each figure in plain words"),
    ("openjudge.metaeval.recorded", "benchmarks' stored outputs"),
    ("openjudge.metaeval.report", "report models; MetaEvalReport exported by openjudge.metaeval"),
    ("openjudge.metaeval.rescore", "judgements scored without a judge; load_recorded exported"),
    ("openjudge.metaeval.runs", "running the graders; collect exported by openjudge.metaeval"),
    ("openjudge.metaeval.scales", "scores on the labels' scale"),
    ("openjudge.metaeval.stats", "bootstrap intervals"),
    ("openjudge.metaeval.verdicts", "judge verdicts read from results"),
    (
        "openjudge.config.schema",
        "the config-file models; one `schema` in the tree (openjudge.models.schema: messages, prompts)",
        "openjudge.config._spec",
    ),
)

# For the lead to run after the branches editing these packages are merged
# (`--pending`). Seed-guide paths, modules run with `python -m` and modules the docs
# import by path are not here: they are in PUBLIC_MODULES (tests/test_public_api.py).
PENDING: tuple[Rename, ...] = ()  # filled in below, after the public list is settled


def _modules() -> None:  # pragma: no cover - documentation of how PENDING is kept
    """PENDING lists every other non-underscore module of the library packages."""


def tables(pending: bool) -> tuple[Rename, ...]:
    return APPLIED + (PENDING if pending else ())


def _path(dotted: str) -> Path:
    return ROOT.joinpath(*dotted.split("."))


def _existing(dotted: str) -> Path | None:
    base = _path(dotted)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base
    return None


def _files() -> Iterable[Path]:
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if (
                path.is_file()
                and path.suffix in SUFFIXES
                and "__pycache__" not in path.parts
                and path.resolve() != SELF
            ):
                yield path
    for name in SCANNED_FILES:
        if (ROOT / name).is_file():
            yield ROOT / name


def _dotted_pattern(old: str) -> re.Pattern[str]:
    # Not inside a longer name: no word character or dot before, no word character after.
    return re.compile(rf"(?<![\w.]){re.escape(old)}(?!\w)")


def _path_pattern(old: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w/.]){re.escape(old.replace('.', '/'))}(?=\.py\b|/)")


def _from_parent_imports(text: str, rename: Rename) -> str:
    """``from parent import leaf`` -> ``from parent import _leaf as leaf`` (also in lists)."""
    parent, _, leaf = rename.old.rpartition(".")
    new_leaf = rename.new.rpartition(".")[2]
    if f"import {leaf}" not in text and leaf not in text:
        return text
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, int, int, str]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.module == parent and node.level == 0):
            continue
        if not any(alias.name == leaf for alias in node.names):
            continue
        assert node.end_lineno is not None and node.end_col_offset is not None
        start = sum(len(line) for line in lines[: node.lineno - 1]) + node.col_offset
        end = sum(len(line) for line in lines[: node.end_lineno - 1]) + node.end_col_offset
        segment = text[start:end]
        head, _, names = segment.partition(" import ")
        names = re.sub(rf"(?<![\w.]){leaf}\s+as\b", f"{new_leaf} as", names)
        names = re.sub(rf"(?<![\w.]){leaf}(?![\w])(?!\s+as\b)", f"{new_leaf} as {leaf}", names)
        edits.append((start, end, 0, 0, f"{head} import {names}"))
    for start, end, _, _, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def rewrite(text: str, renames: Sequence[Rename], *, python: bool) -> str:
    for rename in renames:
        text = _dotted_pattern(rename.old).sub(rename.new, text)
        text = _path_pattern(rename.old).sub(rename.new.replace(".", "/"), text)
        if python:
            text = _from_parent_imports(text, rename)
    return text


def _git_mv(rename: Rename, dry_run: bool) -> str | None:
    source = _existing(rename.old)
    if source is None:
        return None
    if _existing(rename.new) is not None:
        raise SystemExit(f"both {rename.old} and {rename.new} exist: merge them by hand first")
    target = _path(rename.new).with_suffix(".py") if source.suffix == ".py" else _path(rename.new)
    if not dry_run:
        subprocess.run(["git", "mv", str(source), str(target)], cwd=ROOT, check=True)
    return f"git mv {source.relative_to(ROOT)} {target.relative_to(ROOT)}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pending", action="store_true", help="also apply the PENDING table")
    parser.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    args = parser.parse_args(argv)
    renames = tables(args.pending)
    for rename in renames:
        if not rename.new.rpartition(".")[2].startswith("_"):
            raise SystemExit(f"{rename.old} -> {rename.new}: the new name must start with '_'")
        moved = _git_mv(rename, args.dry_run)
        if moved:
            print(moved)
    changed = 0
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite(text, renames, python=path.suffix == ".py")
        if new != text:
            changed += 1
            print(f"rewrote {path.relative_to(ROOT)}")
            if not args.dry_run:
                path.write_text(new, encoding="utf-8")
    print(f"{len(renames)} modules, {changed} files rewritten{' (dry run)' if args.dry_run else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
