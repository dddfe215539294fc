"""Every Sphinx cross-reference in the package names something that exists.

A reference such as ``:class:`~openjudge.results.GraderError``` or ``:mod:`._fingerprint```
in a docstring or comment of ``openjudge/`` must resolve the way Sphinx's Python domain
resolves it, so that a rename cannot leave a reference pointing at a module that is gone.

The package is read, not imported (optional SDKs need not be installed): each module's
top-level definitions, its imports (a name imported into a module, re-exports in a
package ``__init__`` included, counts as defined there and is followed to its source),
names listed in ``__all__``, and each class's methods, attributes and bases. Standard
library targets are checked by importing them; other libraries' are accepted by prefix.

Plain dotted names (``openjudge.jobs._engine``) and source paths (``openjudge/jobs/_engine.py``)
written in the package's strings and comments, in README.md and in docs/ must name a module,
object or file that exists, too.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import io
import re
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "openjudge"

ROLE = re.compile(r":(?:py:)?(mod|func|class|meth|attr|exc|data|obj):`([^`]+)`")

EXTERNAL_PREFIXES = (
    "aiohttp.",
    "datasets.",
    "httpx.",
    "litellm.",
    "openai.",
    "ray.",
    "skyrl_gym.",
    "skyrl_train.",
    "torch.",
    "transformers.",
    "trl.",
    "verl.",
    "vllm.",
)
"""Libraries that may be absent here: a reference into them is taken as written."""

IMPORT_CHECKED = frozenset({"pydantic", "typing_extensions", "anyio", "yaml"})
"""Installed with openjudge itself: references into them are checked by importing."""

PACKAGE_ALIASES = {"harness": "openjudge.graders.code.harness"}
"""Folders of the package that run elsewhere under a top-level name of their own."""

ROLE_KINDS = {
    "mod": {"module"},
    "class": {"class"},
    "exc": {"class"},
    "func": {"function"},
    "meth": {"function"},
    "attr": {"attribute", "function"},  # a property is a function in the source
    "data": {"attribute", "class"},  # a type alias may be written as a class statement
    "obj": {"module", "class", "function", "attribute"},
}


@dataclass(frozen=True)
class Found:
    """What a dotted name resolved to: a kind, and the node to look members up in."""

    kind: str  # "module" | "class" | "function" | "attribute" | "external"
    name: str
    node: ast.ClassDef | None = None
    module: str = ""
    checked: bool = True  # False: in a library absent here, taken as written


@dataclass(frozen=True)
class Reference:
    path: Path
    line: int
    role: str
    text: str
    module: str
    classes: tuple[str, ...]  # the qualified names of the enclosing classes, innermost last


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


@cache
def tree(module: str) -> ast.Module:
    return ast.parse(modules()[module].read_text(encoding="utf-8"))


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_package = modules()[module].name == "__init__.py"
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements at this level, including those inside top-level ``if``/``try``/``with``."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _statements(stmt.body)
            yield from _statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)):
                yield from _statements(block)
        elif isinstance(stmt, ast.With):
            yield from _statements(stmt.body)


def _targets(stmt: ast.stmt) -> list[str]:
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    names = []
    for target in targets:
        elements = target.elts if isinstance(target, ast.Tuple) else [target]
        names += [e.id for e in elements if isinstance(e, ast.Name)]
    return names


Binding = tuple[str, object]  # ("alias", dotted) | ("class", ClassDef) | ("function", None) | ...


def _namespace(module: str, body: list[ast.stmt]) -> dict[str, Binding]:
    names: dict[str, Binding] = {}
    for stmt in _statements(body):
        if isinstance(stmt, ast.ClassDef):
            names[stmt.name] = ("class", stmt)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[stmt.name] = ("function", None)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                dotted = alias.name if alias.asname else alias.name.partition(".")[0]
                names[alias.asname or dotted] = ("alias", dotted)
        elif isinstance(stmt, ast.ImportFrom):
            source = _absolute(module, stmt)
            for alias in stmt.names:
                names[alias.asname or alias.name] = ("alias", f"{source}.{alias.name}")
        else:
            for name in _targets(stmt):
                source_name = _dotted(getattr(stmt, "value", None))
                names.setdefault(name, ("assigned", source_name) if source_name else ("attribute", None))
    return names


def _dotted(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


@cache
def module_namespace(module: str) -> dict[str, Binding]:
    body = tree(module).body
    names = _namespace(module, body)
    for stmt in body:
        if (
            isinstance(stmt, ast.Assign)
            and _targets(stmt) == ["__all__"]
            and isinstance(stmt.value, ast.List)
        ):
            for element in stmt.value.elts:
                if isinstance(element, ast.Constant) and isinstance(element.value, str):
                    names.setdefault(element.value, ("exported", None))
    return names


def class_namespace(module: str, node: ast.ClassDef) -> dict[str, Binding]:
    names = _namespace(module, node.body)
    for item in ast.walk(node):  # instance attributes: ``self.x = ...`` in any method
        targets = item.targets if isinstance(item, ast.Assign) else [getattr(item, "target", None)]
        for target in targets:
            if isinstance(target, ast.Attribute) and _dotted(target.value) == "self":
                names.setdefault(target.attr, ("attribute", None))
    return names


def _external(dotted: str) -> Found | None:
    """A target outside the package: checked by importing where that is safe."""
    for prefix, package in PACKAGE_ALIASES.items():
        if dotted == prefix or dotted.startswith(f"{prefix}."):
            return resolve(package + dotted[len(prefix) :])
    top = dotted.partition(".")[0]
    if top in sys.stdlib_module_names or top in IMPORT_CHECKED:
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            try:
                value: object = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            for part in parts[i:]:
                if not hasattr(value, part):
                    return None
                value = getattr(value, part)
            return Found("external", dotted)
        return None
    if "." not in dotted and hasattr(builtins, dotted):
        return Found("external", dotted)
    if dotted.startswith(EXTERNAL_PREFIXES):
        return Found("external", dotted, checked=False)
    return None


def _binding(module: str, name: str, binding: Binding, seen: frozenset[str]) -> Found | None:
    kind, value = binding
    if kind == "class":
        assert isinstance(value, ast.ClassDef)
        return Found("class", name, value, module)
    if kind in ("alias", "assigned"):
        assert isinstance(value, str)
        target = value if kind == "alias" else _local(module, value)
        found = resolve(target, seen) if target else None
        if found is None and kind == "assigned":
            return Found("attribute", name)  # ``x = some.call_result``: a plain value
        return found
    if kind == "exported":
        return Found("attribute", name)  # listed in __all__ but bound some other way
    return Found(kind, name)


def _local(module: str, dotted: str) -> str | None:
    """A dotted expression of ``module``'s code as an absolute name."""
    head, _, rest = dotted.partition(".")
    binding = module_namespace(module).get(head)
    if binding is None:
        return dotted if hasattr(builtins, head) else None
    if binding[0] in ("alias", "assigned") and isinstance(binding[1], str):
        base = binding[1] if binding[0] == "alias" else _local(module, binding[1])
        return f"{base}.{rest}" if base and rest else base
    return f"{module}.{dotted}"


def member(found: Found, name: str, seen: frozenset[str]) -> Found | None:
    if found.kind == "module":
        submodule = f"{found.name}.{name}"
        if submodule in modules():
            return Found("module", submodule)
        binding = module_namespace(found.name).get(name)
        if binding is None and name in ("__file__", "__name__", "__path__", "__doc__"):
            return Found("attribute", submodule)
        return None if binding is None else _binding(found.name, submodule, binding, seen)
    if found.kind == "class":
        assert found.node is not None
        binding = class_namespace(found.module, found.node).get(name)
        if binding is not None:
            return _binding(found.module, f"{found.name}.{name}", binding, seen)
        for base in found.node.bases:
            base_expr = base.value if isinstance(base, ast.Subscript) else base
            dotted = _dotted(base_expr)
            absolute = _local(found.module, dotted) if dotted else None
            base_found = resolve(absolute, seen) if absolute else None
            inherited = member(base_found, name, seen) if base_found else None
            if inherited is not None:
                return inherited
        return None
    if found.kind == "external":
        return _external(f"{found.name}.{name}")
    return None


def resolve(dotted: str, seen: frozenset[str] = frozenset()) -> Found | None:
    """An absolute dotted name, in the package or outside it."""
    if dotted in seen:
        return None
    seen = seen | {dotted}
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in modules():
            found: Found | None = Found("module", ".".join(parts[:i]))
            for part in parts[i:]:
                found = member(found, part, seen) if found else None
            return found
    return _external(dotted)


@cache
def all_objects() -> dict[str, str]:
    """Every module, and every object defined (not imported) in the package: name -> kind."""
    objects = dict.fromkeys(modules(), "module")

    def add(prefix: str, body: list[ast.stmt]) -> None:
        for stmt in _statements(body):
            if isinstance(stmt, ast.ClassDef):
                objects[f"{prefix}.{stmt.name}"] = "class"
                add(f"{prefix}.{stmt.name}", stmt.body)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                objects[f"{prefix}.{stmt.name}"] = "function"
            else:
                objects.update(dict.fromkeys((f"{prefix}.{n}" for n in _targets(stmt)), "attribute"))

    for module in modules():
        add(module, tree(module).body)
    return objects


def _kind_fits(role: str, found: Found) -> bool:
    return found.kind == "external" or found.kind in ROLE_KINDS[role]


def check(ref: Reference) -> str | None:
    """None if the reference resolves as Sphinx would resolve it, else why not."""
    target = ref.text
    if "<" in target and target.endswith(">"):
        target = target[target.rindex("<") + 1 : -1]
    if target.startswith("!"):
        return None  # explicitly not a link
    target = target.removeprefix("~")
    if re.search(r"\s", target) or not target:
        return "a reference target holds no spaces"
    relative = target.startswith(".")
    name = target.removeprefix(".")
    contexts = [f"{ref.module}.{cls}" for cls in reversed(ref.classes)] + [ref.module]
    candidates = [f"{context}.{name}" for context in contexts]
    candidates.insert(len(candidates) if relative else 0, name)
    if name.startswith("openjudge.") and not relative:
        candidates = [name]  # absolute: not also a member of the class or module at hand
    # Anything is a member of a class from a library absent here, so names that resolve
    # within the package come first, then those taken as written.
    found_by = [(c, resolve(c) if c.startswith("openjudge.") else None) for c in candidates]
    if not relative:
        found_by.append((name, _external(name)))
    for checked in (True, False):
        for candidate, found in found_by:
            if found is not None and found.checked == checked:
                return None if _kind_fits(ref.role, found) else f"{candidate} is a {found.kind}"
    if relative:
        # Sphinx then takes any object whose name ends with ``.name``, anywhere: that found
        # ``openjudge.results`` for a ``.results`` meant as ``openjudge.jobs._results``. A
        # relative name must mean one object of its own package; others are written in full.
        kinds = ROLE_KINDS[ref.role]
        matches = sorted(o for o, kind in all_objects().items() if o.endswith(f".{name}") and kind in kinds)
        package = ref.module if modules()[ref.module].name == "__init__.py" else ref.module.rpartition(".")[0]
        inside = [o for o in matches if o.startswith(f"{package}.")]
        if len(inside) == 1 and len(matches) == 1:
            return None
        if len(inside) > 1 or len(matches) > 1:
            return f"ambiguous: {', '.join(matches)}"
        if matches:
            return f"{matches[0]} is outside {package}: write it in full"
    return "no such target"


def _classes(body: list[ast.stmt], prefix: str = "") -> Iterator[tuple[int, int, str]]:
    """Each class's first and last line and qualified name, nested classes included."""
    for node in body:
        if isinstance(node, ast.ClassDef):
            qualname = f"{prefix}{node.name}"
            yield node.lineno, node.end_lineno or node.lineno, qualname
            yield from _classes(node.body, f"{qualname}.")


def references() -> Iterator[Reference]:
    for module, path in modules().items():
        source = path.read_text(encoding="utf-8")
        classes = list(_classes(tree(module).body))
        for match in ROLE.finditer(source):
            line = source.count("\n", 0, match.start()) + 1
            enclosing = tuple(q for start, end, q in classes if start <= line <= end)
            yield Reference(path, line, match.group(1), match.group(2), module, enclosing)


def test_every_reference_in_the_package_resolves() -> None:
    broken = []
    for ref in references():
        why = check(ref)
        if why is not None:
            broken.append(f"{ref.path.relative_to(ROOT)}:{ref.line}: :{ref.role}:`{ref.text}`: {why}")
    assert broken == [], "\n" + "\n".join(broken)


@pytest.mark.parametrize(
    ("role", "text", "module", "classes", "resolves"),
    [
        ("mod", "openjudge.jobs._engine", "openjudge.jobs", (), True),
        ("mod", "openjudge.jobs.engine", "openjudge.jobs", (), False),  # renamed to _engine
        ("mod", "._fingerprint", "openjudge.jobs._resume", (), True),  # suffix search
        ("mod", ".fingerprint", "openjudge.jobs._resume", (), False),
        ("mod", "._settings", "openjudge.jobs._resume", (), False),  # several packages have one
        ("mod", ".results", "openjudge.jobs._fingerprint", (), False),  # openjudge.results: outside
        ("mod", ".harness.values", "openjudge.graders.code._sandbox", (), True),
        ("class", "~openjudge.results.GraderError", "openjudge.jobs", (), True),
        ("class", "GraderError", "openjudge.graders.base_grader", (), True),  # imported there
        ("class", "GradingRunner", "openjudge", (), True),  # a lazy re-export of the package
        ("meth", "~openjudge.runner.GradingRunner.arun", "openjudge", (), True),  # followed to its class
        ("meth", "arun", "openjudge.runner.grading_runner", ("GradingRunner",), True),  # class context
        ("meth", "arun", "openjudge.runner.grading_runner", (), False),
        ("func", "openjudge.results.GraderError", "openjudge", (), False),  # a class, not a function
        ("class", "ValueError", "openjudge", (), True),
        ("func", "json.loads", "openjudge", (), True),
        ("func", "json.nope", "openjudge", (), False),
        ("class", "pydantic.BaseModel", "openjudge", (), True),
        ("class", "verl.DataProto", "openjudge", (), True),  # not installed here: by prefix
        ("class", "NotAName", "openjudge", (), False),
        # The module's own ``statistics`` function comes before the standard library's module.
        ("mod", "statistics", "openjudge.metaeval._metrics", (), False),
        # Not taken as a member of the class's VERL base: found as the module's import.
        ("class", "Placement", "openjudge.integrations.verl._reward_loop", ("OpenJudgeRewardManager",), True),
        ("class", "openjudge.integrations.verl._scoring.Placement", "openjudge", (), False),
    ],
)
def test_the_resolver_follows_sphinx(
    role: str, text: str, module: str, classes: tuple[str, ...], resolves: bool
) -> None:
    ref = Reference(PACKAGE / "x.py", 1, role, text, module, classes)
    assert (check(ref) is None) == resolves, check(ref)


DOTTED = re.compile(r"(?<![\w./-])openjudge(?:\.\w+)+")
SOURCE_PATH = re.compile(r"(?<![\w./-])(?:openjudge|tests|bench|scripts)/[\w/]+\.(?:py|sh|md)\b")


def _prose(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of a page, or of a module's strings and comments (not its code)."""
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        yield from enumerate(source.splitlines(), start=1)
        return
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.STRING, tokenize.COMMENT):
            yield token.start[0], token.string


def test_every_dotted_name_and_source_path_in_the_package_and_docs_exists() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *modules().values()]
    missing = [
        f"{page.relative_to(ROOT)}:{line}: {name}"
        for page in pages
        for line, text in _prose(page)
        for name in DOTTED.findall(text)
        if resolve(name) is None
    ] + [
        f"{page.relative_to(ROOT)}:{line}: {path}"
        for page in pages
        for line, text in _prose(page)
        for path in SOURCE_PATH.findall(text)
        if not (ROOT / path).is_file()
    ]
    assert missing == [], "\n" + "\n".join(missing)
