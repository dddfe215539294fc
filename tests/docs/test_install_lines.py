"""Every ``pip install`` line in README.md and docs/ installs this project, with extras it has.

The name ``openjudge`` on PyPI belongs to an unrelated project: ``pip install
'openjudge[transformers]'`` installs that one. A line must name ``openjudge-graders`` (or a
local checkout: ``.``, ``'.[verl]'``), and every extra it asks for must exist in
pyproject.toml. Other projects (``torch==2.13.0``) are left alone.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
DISTRIBUTION: str = _PYPROJECT["name"]
EXTRAS = frozenset(_PYPROJECT["optional-dependencies"])

# `pip install ...` up to the end of an inline code span, a shell comment, `&&`, or the line.
_LINE = re.compile(r"pip install ([^`#\n&;]+)")


def install_lines() -> list[tuple[str, str]]:
    """``(where, arguments)`` for every ``pip install`` in the pages."""
    found = []
    for page in PAGES:
        for number, text in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            for match in _LINE.finditer(text):
                found.append((f"{page.relative_to(ROOT)}:{number}", match.group(1).strip()))
    return found


def requirements(arguments: str) -> list[str]:
    """The requirement arguments of one ``pip install`` (options and their values left out)."""
    words = shlex.split(arguments)
    out: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word in ("-r", "-c", "--requirement", "--constraint", "--index-url", "--extra-index-url"):
            skip = True
            continue
        if word.startswith("-"):
            continue
        out.append(word)
    return out


def problem(requirement: str) -> str | None:
    """What is wrong with one requirement, or ``None``."""
    local = re.fullmatch(r"\.(\[(?P<extras>[\w,-]+)\])?", requirement)
    if local:
        extras = set(filter(None, (local.group("extras") or "").split(",")))
        unknown = extras - EXTRAS
        return f"unknown extra(s) {sorted(unknown)}" if unknown else None
    try:
        parsed = Requirement(requirement)
    except InvalidRequirement as exc:
        return f"not a requirement: {exc}"
    name = canonicalize_name(parsed.name)
    if name.startswith("openjudge") and name != canonicalize_name(DISTRIBUTION):
        return f"names {parsed.name!r}, which is not this project: write {DISTRIBUTION!r}"
    if name == canonicalize_name(DISTRIBUTION) and parsed.extras - EXTRAS:
        return f"unknown extra(s) {sorted(parsed.extras - EXTRAS)} (extras: {', '.join(sorted(EXTRAS))})"
    return None


LINES = install_lines()


def test_the_pages_have_install_lines() -> None:
    # README's set-up and the extras of guide, trl, verl, skyrl, ray and meta-eval pages.
    assert len(LINES) >= 10
    assert any(DISTRIBUTION in arguments for _, arguments in LINES)


@pytest.mark.parametrize(("where", "arguments"), LINES, ids=[w for w, _ in LINES])
def test_every_install_line_installs_this_project(where: str, arguments: str) -> None:
    found = [(r, problem(r)) for r in requirements(arguments)]
    assert found, f"{where}: 'pip install {arguments}' installs nothing"
    bad = [f"{r}: {p}" for r, p in found if p is not None]
    assert not bad, f"{where}: 'pip install {arguments}': {bad}"


@pytest.mark.parametrize(
    ("requirement", "wrong"),
    [
        ("openjudge[transformers]", True),
        ("openjudge", True),
        ("openjudge-graders[transformers]", False),
        ("openjudge-graders[no-such-extra]", True),
        (".[verl]", False),
        (".[nope]", True),
        ("torch==2.13.0", False),
    ],
)
def test_the_check_itself(requirement: str, wrong: bool) -> None:
    assert (problem(requirement) is not None) is wrong


_EXTRAS_LINE = re.compile(r"^Optional extras \(.*?\): (?P<names>.*)$", re.MULTILINE)


def test_the_readme_lists_every_extra() -> None:
    """The README's extras line names each extra of pyproject.toml once, and no other."""
    line = _EXTRAS_LINE.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert line is not None, "README.md: the 'Optional extras (...): ...' line is gone"
    named = re.findall(r"`([\w-]+)`", re.sub(r"\([^)]*\)", "", line.group("names")))
    assert sorted(named) == sorted(EXTRAS)
