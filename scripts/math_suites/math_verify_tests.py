"""Extract the labelled (gold, pred, expected) cases of math-verify's own test suite.

Reads huggingface/Math-Verify's ``tests/*.py`` from a git directory (the ``fetch`` tool's
snapshot) at a commit, finds every ``@pytest.mark.parametrize`` whose rows have a gold, a
prediction and an expected verdict, and keeps the rows that use math-verify's default
comparison options (``precision`` 6, ``strict=True``, ``allow_set_relation_comp=False``);
rows that ask for another option are dropped, because a grader with fixed options cannot
be asked to agree with them. Writes one JSON object per line to
``tests/graders/math/suites/math_verify.jsonl`` after a header line naming the source.

Usage:
    python scripts/math_suites/math_verify_tests.py GIT_DIR [COMMIT] > tests/graders/math/suites/math_verify.jsonl
"""

from __future__ import annotations

import ast
import json
import math
import subprocess
import sys

_DEFAULTS = {"precision": 6, "strict": True, "allow_set_relation_comp": False}
_FILES = (
    "test_all.py",
    "test_boxed.py",
    "test_numina_cases.py",
    "test_open_thoughts.py",
    "test_strict.py",
    "test_yujianll.py",
)
_LABEL_NAMES = ("expected", "result")


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, *args], check=True, capture_output=True, text=True
    ).stdout


def _value(node: ast.expr) -> object:
    """A literal, or an f-string over ``math`` (test_float_precision builds its gold with one)."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        code = compile(ast.Expression(node), "<case>", "eval")
        return eval(code, {"__builtins__": {}, "math": math})  # our own reading of a pinned file


def _call_options(function: ast.FunctionDef) -> dict[str, object]:
    """Keyword options the test body passes to compare_strings (constants only)."""
    options: dict[str, object] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "compare_strings":
            for keyword in node.keywords:
                if keyword.arg in _DEFAULTS and isinstance(keyword.value, ast.Constant):
                    options[keyword.arg] = keyword.value.value
    return options


def cases(source: str, path: str) -> list[dict[str, object]]:
    """Every default-option (gold, pred, expected) row in one test file."""
    rows: list[dict[str, object]] = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef):
            continue
        fixed = _call_options(function)
        for decorator in function.decorator_list:
            if not (
                isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "pytest.mark.parametrize"
            ):
                continue
            names = [n.strip() for n in ast.literal_eval(decorator.args[0]).split(",")]
            label = next((n for n in names if n in _LABEL_NAMES), None)
            if "gold" not in names or "pred" not in names or label is None:
                continue
            assert isinstance(decorator.args[1], ast.List | ast.Tuple)
            for element in decorator.args[1].elts:
                assert isinstance(element, ast.Tuple)
                row = dict(zip(names, (_value(e) for e in element.elts), strict=True))
                options = {**fixed, **{k: row[k] for k in _DEFAULTS if k in row}}
                if any(options.get(k, v) != v for k, v in _DEFAULTS.items()):
                    continue
                rows.append(
                    {
                        "reference": row["gold"],
                        "response": row["pred"],
                        "label": bool(row[label]),
                        "origin": f"tests/{path}::{function.name}:{element.lineno}",
                    }
                )
    return rows


def main() -> None:
    git_dir = sys.argv[1]
    commit = _git(git_dir, "rev-parse", sys.argv[2] if len(sys.argv) > 2 else "HEAD").strip()
    rows = [row for name in _FILES for row in cases(_git(git_dir, "show", f"{commit}:tests/{name}"), name)]
    header = {
        "suite": "math_verify",
        "source_repo": "huggingface/Math-Verify",
        "source_path": "tests/*.py (@pytest.mark.parametrize gold/pred/expected rows, default options only)",
        "commit": commit,
        "licence": "Apache-2.0",
        "extracted_by": "scripts/math_suites/math_verify_tests.py",
        "cases": len(rows),
    }
    sys.stdout.write(json.dumps({"header": header}) + "\n")
    for row in rows:
        sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
