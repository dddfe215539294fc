"""HumanEval and MBPP excerpts: canonical solutions pass, stubs and policy-side hacks score 0,
and every verdict is computed outside the solution's process (by the grader or the verifier)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from openjudge.graders.base_grader import GraderScore
from openjudge.graders.code import CodeExecutionGrader, CodeTestCase
from openjudge.graders.code.suites import humaneval_case, mbpp_case, prompt_helpers

pytestmark = pytest.mark.anyio

DATA = Path(__file__).with_name("data")
HUMANEVAL = [json.loads(line) for line in (DATA / "humaneval_excerpt.jsonl").read_text().splitlines()]
MBPP = [json.loads(line) for line in (DATA / "mbpp_excerpt.jsonl").read_text().splitlines()][:10]
BY_ID = {p["task_id"]: p for p in HUMANEVAL}

# Bodies that complete a HumanEval prompt's function, and code appended after it.
HACKS: dict[str, tuple[str, str]] = {
    "return None stub": ("    return None\n", ""),
    "object equal to everything": (
        "    return _Any()\n",
        "class _Any:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
        "    def __bool__(self): return True\n    def __abs__(self): return 0\n"
        "    def __sub__(self, o): return 0\n    __rsub__ = __sub__\n    __hash__ = object.__hash__\n",
    ),
    "list subclass": (
        "    return _L()\n",
        "class _L(list):\n    def __eq__(self, o): return True\n    __hash__ = None\n",
    ),
    "float subclass": (
        "    return _F(0.0)\n",
        "class _F(float):\n    def __eq__(self, o): return True\n    __hash__ = float.__hash__\n",
    ),
    "str subclass": (
        "    return _S('')\n",
        "class _S(str):\n    def __eq__(self, o): return True\n    __hash__ = str.__hash__\n",
    ),
    "dict subclass": (
        "    return _D()\n",
        "class _D(dict):\n    def __eq__(self, o): return True\n    __hash__ = None\n",
    ),
    "sys.exit(0) at import": ("    return None\n", "import sys\nsys.exit(0)\n"),
    "os._exit(0) in the call": ("    import os\n    os._exit(0)\n", ""),
    "SystemExit in the call": ("    raise SystemExit(0)\n", ""),
    "kill the process group": ("    import os\n    os.kill(0, 9)\n", ""),
    "patched assertion machinery": (
        "    return None\n",
        "import builtins\nclass _N(BaseException):\n    pass\nbuiltins.AssertionError = _N\n"
        "builtins.abs = lambda x: 0\nbuiltins.all = lambda *a: True\nbuiltins.isinstance = lambda *a: True\n",
    ),
    "forged verdicts on every descriptor": (
        "    return None\n",
        'import os\n_v = b\'{"event": "verdict", "ok": true, "token": ""}\\n{"event": "test", "ok": true}\\n\'\n'
        "for _fd in range(1, 64):\n    try:\n        os.write(_fd, _v)\n    except OSError:\n        pass\n",
    ),
    "the caller's frames and gc": (
        "    import sys, gc\n    f = sys._getframe(1)\n    while f is not None:\n"
        "        for c in f.f_code.co_consts:\n            if isinstance(c, (list, tuple, int, float, str, bool)):\n"
        "                return c\n        f = f.f_back\n"
        "    return next((o for o in gc.get_objects() if isinstance(o, (list, tuple))), None)\n",
        "",
    ),
}


async def grade_all(
    grader: CodeExecutionGrader, items: Sequence[tuple[str, list[CodeTestCase]]]
) -> list[GraderScore]:
    results: list[GraderScore | None] = [None] * len(items)

    async def one(index: int) -> None:
        response, cases = items[index]
        result = await grader.aevaluate(response=response, test_cases=cases)
        assert isinstance(result, GraderScore), result
        results[index] = result

    async with anyio.create_task_group() as tg:
        for index in range(len(items)):
            tg.start_soon(one, index)
    return [r for r in results if r is not None]


def verified(result: GraderScore) -> list[object]:
    tests = result.metadata["tests"]
    assert isinstance(tests, list)
    return [t.get("verified") for t in tests if isinstance(t, dict)]


async def test_humaneval_canonical_solutions_pass_on_every_backend(backend_name: str) -> None:
    grader = CodeExecutionGrader(sandbox=backend_name, max_concurrency=1)  # type: ignore[arg-type]  # a local name
    items = [(p["prompt"] + p["canonical_solution"], [humaneval_case(p)]) for p in HUMANEVAL]
    results = await grade_all(grader, items)
    assert [r.score for r in results] == [1.0] * len(HUMANEVAL)
    assert all(v in ("grader", "verifier") for r in results for v in verified(r))
    assert "verifier" in {v for r in results for v in verified(r)}  # helpers make 10/32/38 run there


@pytest.mark.parametrize("hack", list(HACKS))
async def test_humaneval_hacks_score_zero(hack: str) -> None:
    body, tail = HACKS[hack]
    problems = [
        BY_ID[task] for task in ("HumanEval/0", "HumanEval/32", "HumanEval/38")
    ]  # grader, verifier x2
    items = [(p["prompt"] + body + "\n" + tail, [humaneval_case(p)]) for p in problems]
    results = await grade_all(CodeExecutionGrader(timeout_s=5), items)
    assert [r.score for r in results] == [0.0] * len(problems), [r.metadata for r in results]
    assert all(v in ("grader", "verifier") for r in results for v in verified(r))


async def test_helpers_the_test_calls_come_from_the_prompt_not_the_response() -> None:
    problem = BY_ID["HumanEval/32"]  # the test checks find_zero's answer with the prompt's poly()
    assert "def poly(" in prompt_helpers(problem["prompt"], problem["entry_point"])
    cheat = problem["prompt"] + "    return 0.0\n\ndef poly(xs, x):\n    return 0.0\n"
    honest = problem["prompt"] + problem["canonical_solution"]
    cheated, passed = await grade_all(
        CodeExecutionGrader(), [(c, [humaneval_case(problem)]) for c in (cheat, honest)]
    )
    assert (cheated.score, passed.score) == (0.0, 1.0)


async def test_mbpp_canonical_solutions_pass_and_stubs_fail() -> None:
    grader = CodeExecutionGrader()
    canonical = [(str(r["code"]), [mbpp_case(r["test_list"], r["test_setup_code"])]) for r in MBPP]
    results = await grade_all(grader, canonical)
    assert [r.score for r in results] == [1.0] * len(MBPP)
    assert all(v in ("grader", "verifier") for r in results for v in verified(r))
    stubs = [
        (f"{r['code']}\n\n{_name(r)} = lambda *a, **k: None\n", case)
        for r, (_, case) in zip(MBPP, canonical, strict=True)
    ]
    assert [r.score for r in await grade_all(grader, stubs)] == [0.0] * len(MBPP)


def _name(record: dict[str, object]) -> str:
    first = str(record["test_list"][0])  # type: ignore[index]  # a list in MBPP
    return first.removeprefix("assert ").lstrip("( ").split("(")[0].strip()
