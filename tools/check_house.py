"""The house rules, checked in ``make lint`` (and so in ``make test``).

- no module in the packages (``chalicelib/``, ``devstack/``, ``cronhook_cli/``) or ``app.py``
  over 400 lines;
- no function or method in them over 60 lines;
- nothing in ``chalicelib/services/`` imports pynamodb: every DynamoDB read and write of a
  service goes through ``chalicelib/store/``;
- no import cycle among ``app`` and the modules of ``chalicelib/``, counting the imports made
  inside functions too (a lazy import is for cold start, never to dodge a cycle).

Run ``python -m tools.check_house [paths...]``; exits 1 and names each breach.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
NO_PYNAMODB = ("chalicelib/services/",)
# The product (chalicelib/, shipped to Lambda) and the two dev packages beside it.
PACKAGES = ("chalicelib", "devstack", "cronhook_cli")
# What is checked when no path is named: those packages, and app.py (wiring only).
CHECKED = (*PACKAGES, "app.py")


def _imports_pynamodb(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(a.name.split(".")[0] == "pynamodb" for a in node.names):
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] == "pynamodb":
                lines.append(node.lineno)
    return lines


def breaches(path: Path, root: Path = ROOT) -> list[str]:
    rel = path.resolve().relative_to(root.resolve()).as_posix()
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text, filename=rel)
    found = []
    n_lines = len(text.splitlines())
    if n_lines > MAX_MODULE_LINES:
        found.append(f"{rel}: {n_lines} lines (limit {MAX_MODULE_LINES})")
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(
                    f"{rel}:{node.lineno}: {node.name} is {length} lines "
                    f"(limit {MAX_FUNCTION_LINES})"
                )
    if rel.startswith(NO_PYNAMODB):
        for line in _imports_pynamodb(tree):
            found.append(f"{rel}:{line}: imports pynamodb (services go through chalicelib/store/)")
    return found


def _module_names(root: Path) -> dict[str, Path]:
    mods = {"app": root / "app.py"} if (root / "app.py").exists() else {}
    paths = [p for d in PACKAGES if (root / d).is_dir() for p in (root / d).rglob("*.py")]
    for path in paths:
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = path
    return mods


def _imported(node: ast.AST, current: str, mods: dict[str, Path]) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in mods}
    if not isinstance(node, ast.ImportFrom):
        return set()
    base = node.module or ""
    if node.level:
        parts = current.split(".")
        if mods[current].name != "__init__.py":
            parts = parts[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    found = set()
    for alias in node.names:
        if f"{base}.{alias.name}" in mods:
            found.add(f"{base}.{alias.name}")
        elif base in mods:
            found.add(base)
    return found


def import_cycles(root: Path = ROOT) -> list[list[str]]:
    """Strongly connected groups of more than one module in the import graph (Tarjan)."""
    mods = _module_names(root)
    graph = {m: set() for m in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            graph[name] |= _imported(node, name, mods) - {name}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def main(argv: list[str]) -> int:
    targets = [Path(a) for a in argv] or [ROOT / name for name in CHECKED]
    files: list[Path] = []
    for target in targets:
        files.extend(sorted(target.rglob("*.py")) if target.is_dir() else [target])
    found = [b for f in files for b in breaches(f)]
    if not argv:
        found += ["import cycle: " + " <-> ".join(c) for c in import_cycles()]
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} breach(es) of the house rules (tools/check_house.py)")
        return 1
    print(f"house rules: {len(files)} modules checked, 0 breaches")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
