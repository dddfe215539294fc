"""The verifier process: what the test observes of the solution, what the solution can never reach,
and values a solution uses to break the grader (huge numbers, huge reports) scoring the bottom."""

from __future__ import annotations

import pytest

from openjudge.graders.base_grader import GraderError, GraderScore
from openjudge.graders.code import CodeExecutionGrader

pytestmark = pytest.mark.anyio


async def grade(response: str, cases: list[dict[str, object]], **options: object) -> GraderScore:
    result = await CodeExecutionGrader(**options).aevaluate(response=response, test_cases=cases)  # type: ignore[arg-type]  # test options
    assert isinstance(result, GraderScore), result
    return result


def entries(result: GraderScore) -> list[dict[str, object]]:
    tests = result.metadata["tests"]
    assert isinstance(tests, list)
    return [dict(t) for t in tests if isinstance(t, dict)]


async def test_in_place_changes_and_exceptions_reach_the_test() -> None:
    test = (
        "items = [3, 1, 2]\nsort_in_place(items)\nassert items == [1, 2, 3]\n"
        "table = {}\nfill(table)\nassert table == {'k': (1, 2)}\n"
        "try:\n    sort_in_place(None)\nexcept AttributeError:\n    pass\nelse:\n    raise AssertionError('no error')\n"
    )
    code = "def sort_in_place(a):\n    a.sort()\n\ndef fill(t):\n    t['k'] = (1, 2)\n"
    result = await grade(code, [{"test": test}])
    assert result.score == 1.0 and entries(result)[0]["verified"] == "verifier"
    lazy = await grade(
        "def sort_in_place(a):\n    return sorted(a)\n\ndef fill(t):\n    pass\n", [{"test": test}]
    )
    assert (lazy.score, entries(lazy)[0]["detail"]) == (0.0, "test: AssertionError")


async def test_the_tests_prints_do_not_mix_with_the_solutions_output() -> None:
    case: dict[str, object] = {
        "test": "print('noise')\nassert twice(2) == 4 or print('x')",
        "output": "ready\n",
    }
    result = await grade("print('ready')\ndef twice(x):\n    return 2 * x\n", [case])
    assert result.score == 1.0


async def test_the_test_passes_only_when_it_ran_to_the_end() -> None:
    test = "values = [f(i) for i in range(3)]\nassert values == [0, 1, 2]"
    for code, reason in (
        ("import os\ndef f(x):\n    os._exit(0)\n", "runtime_error"),  # the verifier hears nothing
        ("def f(x):\n    raise SystemExit(0)\n", "runtime_error"),  # no test may catch that
        (
            "import os, signal\ndef f(x):\n    os.kill(0, signal.SIGKILL)\n",
            "memory",
        ),  # the group, verifier included
        ("def f(x):\n    while True:\n        pass\n", "timeout"),
    ):
        result = await grade(code, [{"test": test}], timeout_s=2)
        assert (result.score, entries(result)[0]["reason"]) == (0.0, reason), (code, result.metadata)


async def test_the_solution_never_sees_the_test_or_the_verdict_pipe(namespaced_backend: str) -> None:
    probe = (
        "import gc, os, sys\n"
        "def memory(pid, marker):\n"  # every readable mapping of another process
        "    try:\n"
        "        maps = open(f'/proc/{pid}/maps').read().splitlines()\n"
        "        with open(f'/proc/{pid}/mem', 'rb') as mem:\n"
        "            for line in maps:\n"
        "                start, end = (int(x, 16) for x in line.split()[0].split('-'))\n"
        "                try:\n"
        "                    mem.seek(start)\n"
        "                    if marker.encode() in mem.read(min(end - start, 1 << 24)):\n"
        "                        return True\n"
        "                except (OSError, ValueError, OverflowError):\n"
        "                    pass\n"
        "    except OSError:\n"
        "        pass\n"
        "    return False\n"
        "def search():\n"
        "    marker = 'OJ' + '-SECRET'\n"
        "    for obj in gc.get_objects():\n"
        "        if isinstance(obj, (str, bytes)) and marker in str(obj) and obj is not marker:\n"
        "            return 'own memory'\n"
        "    for pid in [p for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]:\n"
        "        if memory(pid, marker):\n"
        "            return f'/proc/{pid}/mem'\n"
        "        for part in ['cmdline', 'environ'] + [f'fd/{n}' for n in range(64)]:\n"
        "            try:\n"
        "                fd = os.open(f'/proc/{pid}/{part}', os.O_RDONLY | os.O_NONBLOCK)\n"
        "                try:\n"
        "                    if marker.encode() in os.read(fd, 1 << 20):\n"
        "                        return f'/proc/{pid}/{part}'\n"
        "                finally:\n"
        "                    os.close(fd)\n"
        "            except OSError:\n"
        "                pass\n"
        "    return 'nowhere'\n"
        "EARLY = search()\n"  # at import, racing the verifier's start
        "def found():\n"
        "    late = search()\n"
        "    return late if EARLY == 'nowhere' else EARLY\n"
    )
    test = (
        "secret = 'OJ-SECRET-7f3a'\nassert found() == 'nowhere', found()\n"  # an assignment: not a call check
    )
    result = await grade(probe, [{"test": test}], sandbox=namespaced_backend)
    assert result.score == 1.0, entries(result)
    assert entries(result)[0]["verified"] == "verifier"


HUGE = "def solve(x):\n    return 2 ** 20000\n"


async def test_huge_numbers_score_zero_instead_of_an_error() -> None:
    cases: list[dict[str, object]] = [
        {"test": "assert solve(1) == 5"},
        {"test": "import math\nassert math.isclose(solve(1), 0.5)"},
        {"test": "assert abs(solve(1) - 0.5) < 1e-6"},
        {"call": {"function": "solve", "args": [1], "expected": 0.5}},
        {"test": "value = solve(1)\nassert abs(value - 0.5) < 1e-6"},  # in the verifier
    ]
    result = await grade(HUGE, cases)
    assert result.score == 0.0
    assert [e["passed"] for e in entries(result)] == [False] * 5
    assert "int too large to show" in str(entries(result)[0]["detail"])


async def test_a_forged_report_with_a_huge_complex_scores_zero() -> None:
    forged = (
        "import os\n"
        'line = \'{"event": "call", "index": 0, "ok": true, "value": {"$complex": [{"$int": "\' + \'f\' * 5000 + \'"}, 0]}}\\n\'\n'
        "for fd in range(3, 64):\n"
        "    try:\n        os.write(fd, line.encode())\n    except OSError:\n        pass\n"
        "def solve(x):\n    return 0\n"
    )
    result = await grade(forged, [{"test": "assert solve(1) == 2"}])
    assert result.score == 0.0
    assert entries(result)[0]["detail"] == "solve(1) returned a value the grader cannot read"


async def test_what_a_solution_writes_is_truncated_before_it_reaches_a_result() -> None:
    bloat = (
        "import os\n"
        'line = \'{"event": "call", "index": 0, "ok": false, "error": "\' + \'E\' * 7_000_000 + \'"}\\n\'\n'
        "for fd in range(3, 10):\n"
        "    try:\n        os.write(fd, line.encode())\n    except OSError:\n        pass\n"
        "import sys\nsys.stderr.write('X' * 500_000)\n"
        "def solve(x):\n    raise ValueError('V' * 500_000)\n"
    )
    cases: list[dict[str, object]] = [
        {"test": "assert solve(1) == 2"},
        {"call": {"function": "solve", "args": [2], "expected": 4}},
        {"test": "value = solve(3)\nassert value == 6"},
    ]
    result = await grade(bloat, cases, max_output_bytes=8_000_000, memory_mb=1024)
    assert result.score == 0.0
    assert len(result.model_dump_json()) < 10_000


async def test_objects_of_the_solution_are_handles_the_test_can_use_but_not_trust() -> None:
    code = (
        "import sys\n"
        "class Node:\n    def __init__(self, val):\n        self.val = val\n        self.left = None\n"
        "def depth(node):\n    return 0 if node is None else 1 + depth(node.left)\n"
        "class Solution:\n    def twice(self, n):\n        return 2 * n\n"
    )
    test = (
        "root = Node(1)\nroot.left = Node(2)\nroot.left.left = Node(3)\n"
        "assert (root.val, root.left.val, depth(root)) == (1, 2, 3)\n"
        "assert Solution().twice(21) == 42 and root == root and root != root.left\n"
        "assert sys.getsizeof(1) > 0 and depth(None) == 0\n"  # the solution imported sys; the test did not
        "assert remove_type((1, 'a', 2.5), int) == (1, 2.5) or remove_type((1, 'a', 2.5), int) == (1,)\n"
    )
    helper = "def remove_type(items, kind):\n    return tuple(x for x in items if not isinstance(x, str))\n"
    result = await grade(code + helper, [{"test": test}])
    assert result.score == 1.0, entries(result)
    liar = "class Yes:\n    def __eq__(self, other): return True\n    def __bool__(self): return True\ndef solve(x):\n    return Yes()\n"
    for check in (
        "value = solve(1)\nassert value == 2",
        "value = solve(1)\nassert value",
        "assert [solve(1)] == [2]",
    ):
        lied = await grade(liar, [{"test": check}])
        assert lied.score == 0.0, (check, entries(lied))


async def test_a_test_that_does_not_compile_is_the_systems_failure_not_a_score() -> None:
    grader = CodeExecutionGrader()
    result = await grader.aevaluate(
        response="def f():\n    return 1\n", test_cases=[{"test": "x = f(\nassert x"}]
    )
    assert isinstance(result, GraderError)
    assert result.kind == "internal" and "verifier failed before the test ran: SyntaxError" in result.message
