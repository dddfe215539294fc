"""Labelled suites others wrote (tests/graders/math/suites/): agreement and zero false accepts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from openjudge.graders.base_grader import GraderScore
from openjudge.graders.math import MathAnswerEquivalenceGrader

pytestmark = pytest.mark.slow  # every labelled suite (10 s)

pytest.importorskip("math_verify")

SUITES = Path(__file__).parent / "suites"
# Agreement floors: math-verify's own suite >= 95 %, every other suite >= 90 %.
THRESHOLDS = {"math_verify": 0.95}
HEADER_FIELDS = {"suite", "source_repo", "source_path", "commit", "licence", "cases"}


def _suites() -> Iterator[Path]:
    return iter(sorted(SUITES.glob("*.jsonl")))


@pytest.fixture(scope="module")
def grader() -> Iterator[MathAnswerEquivalenceGrader]:
    grader = MathAnswerEquivalenceGrader()
    yield grader
    grader.workers.close()


@pytest.mark.parametrize("path", list(_suites()), ids=lambda p: p.stem)
def test_suite_agreement_and_no_false_accepts(path: Path, grader: MathAnswerEquivalenceGrader) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])["header"]
    assert header.keys() >= HEADER_FIELDS
    assert header["licence"] in ("MIT", "Apache-2.0", "BSD-3-Clause")
    cases = [json.loads(line) for line in lines[1:]]
    assert len(cases) == header["cases"]

    async def verdicts() -> list[bool]:
        out = [False] * len(cases)
        limit = anyio.CapacityLimiter(grader.workers.max_workers)

        async def one(i: int) -> None:
            async with limit:
                result = await grader.aevaluate(
                    response=cases[i]["response"], reference=cases[i]["reference"]
                )
            out[i] = isinstance(result, GraderScore) and result.score == 1.0

        async with anyio.create_task_group() as group:
            for i in range(len(cases)):
                group.start_soon(one, i)
        return out

    accepted = anyio.run(verdicts)
    false_accepts = [c["origin"] for c, ok in zip(cases, accepted, strict=True) if ok and not c["label"]]
    agree = sum(ok == c["label"] for c, ok in zip(cases, accepted, strict=True))
    assert false_accepts == []
    assert agree >= THRESHOLDS.get(path.stem, 0.90) * len(cases), f"{agree}/{len(cases)}"
