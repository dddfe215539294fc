"""The package, its docs, tests and benchmarks say what they mean, not where a fact came from during development.

A reader has OpenJudge's VERL guide, VERL's source and this repository, not the notes,
trackers or reviews the code was written from: "OpenJudge's VERL guide", not "the seed
guide"; "VERL 0.9.1's agent loop", not "research §3".
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

JARGON = re.compile(
    r"\bseed[- ](?:guide|path|style|function|compatible)|\bthe seed\b|\bseed's\b"
    r"|\bresearch ?§|\bresearch/\w+\.md|\bthe lead\b|\bissue ?#?\d+|\bred[- ]team",
    re.IGNORECASE,
)


def test_no_development_jargon_in_the_package_the_docs_the_tests_or_the_benchmarks() -> None:
    files = [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "openjudge").rglob("*.py")),
        *sorted(path for path in (ROOT / "tests").rglob("*.py") if path != Path(__file__).resolve()),
        *sorted((ROOT / "bench").rglob("*.py")),
        *sorted((ROOT / "bench").rglob("*.md")),
    ]
    found = [
        f"{path.relative_to(ROOT)}:{number}: {match.group(0)}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        for match in JARGON.finditer(line)
    ]
    assert found == [], "say what is meant:\n" + "\n".join(found)
