"""The house rules, checked in ``make lint`` (and so in ``make test``).

- no module in the tree (``chalicelib/``, ``app.py``, the CLI ``cronhook_cli/``, the local
  stack ``devstack/``, the template and deploy ``infra/``, the benchmarks ``bench/`` and
  these checks ``tools/``) over 400 lines;
- no function or method in them over 60 lines;
- nothing outside ``chalicelib/store/`` imports pynamodb: every DynamoDB read and write goes
  through the store, whose functions take and return frozen records
  (``chalicelib/domain/records.py``);
- nothing in ``chalicelib/`` outside the store, ``app.py`` or the CLI makes a DynamoDB
  client (``client("dynamodb")``, ``resource("dynamodb")``): raw DynamoDB calls live in
  ``chalicelib/store/`` too (the local stack's loader of a saved snapshot is the embedded
  AWS's own, and the benchmarks read items raw to count their bytes: both may);
- no module outside ``chalicelib/store/`` names the store's model classes (every class in
  the store built on a pynamodb ``Model`` or index): ``tools/model_names_allowed.json`` is the
  ratchet that brought the count from 220 to 0 (issue 27) and now allows none; ``--tighten``
  lowers an allowance, it never raises one;
- no import cycle among ``app`` and the modules of ``chalicelib/``, counting the imports made
  inside functions too (a lazy import is for cold start, never to dodge a cycle).

Run ``python -m tools.check_house [--tighten] [paths...]``; exits 1 and names each breach
(the import cycles and the ratchet are checked on the whole tree, when no path is named).
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
NO_PYNAMODB = ("chalicelib/", "app.py", "cronhook_cli/", "devstack/", "infra/", "bench/", "tools/")
NO_DYNAMODB_CLIENT = ("chalicelib/", "app.py", "cronhook_cli/")
STORE = "chalicelib/store/"
# pynamodb's bases: a store class built on one of them is a model class (or an index).
MODEL_ROOTS = ("Model", "GlobalSecondaryIndex", "LocalSecondaryIndex")
ALLOWED = "tools/model_names_allowed.json"
# The product (chalicelib/, shipped to Lambda), the two dev packages beside it, and the
# tooling: the template and deploy (infra/), the benchmarks (bench/), these checks (tools/).
PACKAGES = ("chalicelib", "devstack", "cronhook_cli", "infra", "bench", "tools")
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


def _makes_dynamodb_client(tree: ast.AST) -> list[int]:
    """Lines of ``client("dynamodb")`` / ``resource("dynamodb")`` (any receiver, or none)."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name not in ("client", "resource"):
            continue
        args = list(node.args[:1]) + [k.value for k in node.keywords if k.arg == "service_name"]
        if any(isinstance(a, ast.Constant) and a.value == "dynamodb" for a in args):
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
    outside_store = not rel.startswith(STORE)
    if rel.startswith(NO_PYNAMODB) and outside_store:
        for line in _imports_pynamodb(tree):
            found.append(f"{rel}:{line}: imports pynamodb (go through chalicelib/store/)")
    if rel.startswith(NO_DYNAMODB_CLIENT) and outside_store:
        for line in _makes_dynamodb_client(tree):
            found.append(f"{rel}:{line}: makes a DynamoDB client (go through chalicelib/store/)")
    return found


def _base_names(node: ast.ClassDef) -> set[str]:
    return {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}


def model_class_names(root: Path = ROOT) -> set[str]:
    """The store's model classes: every class in ``chalicelib/store/`` built on a pynamodb
    ``Model`` or index (directly, or through another of them, e.g. ``TableBase``)."""
    classes: dict[str, set[str]] = {}
    for path in sorted((root / STORE).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = _base_names(node)
    found = set(MODEL_ROOTS)
    grew = True
    while grew:
        more = {name for name, bases in classes.items() if bases & found} - found
        found |= more
        grew = bool(more)
    return (found - set(MODEL_ROOTS)) & set(classes)


def model_name_uses(tree: ast.AST, names: set[str]) -> int:
    """How many times a module names a model class (imports, uses, ``models.X``, aliases)."""
    local = set(names)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            local |= {a.asname for a in node.names if a.name in names and a.asname}
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            count += sum(1 for a in node.names if a.name in names)
        elif isinstance(node, ast.Name) and node.id in local:
            count += 1
        elif isinstance(node, ast.Attribute) and node.attr in names:
            count += 1
    return count


def model_name_counts(root: Path = ROOT) -> dict[str, int]:
    """Per module outside ``chalicelib/store/``: how many times it names a model class."""
    names = model_class_names(root)
    counts = {}
    for path in _checked_files(root):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(STORE):
            continue
        n = model_name_uses(ast.parse(path.read_text(encoding="utf-8")), names)
        if n:
            counts[rel] = n
    return counts


def ratchet_breaches(counts: dict[str, int], allowed: dict[str, int]) -> list[str]:
    """A module that starts naming model classes, or names them more than it is allowed."""
    found = []
    for rel, n in sorted(counts.items()):
        if rel not in allowed:
            found.append(
                f"{rel}: names the store's model classes {n} times and is not in {ALLOWED} "
                "(take and return what chalicelib/store/ functions give)"
            )
        elif n > allowed[rel]:
            found.append(
                f"{rel}: names the store's model classes {n} times, up from the "
                f"{allowed[rel]} {ALLOWED} allows (the count only goes down)"
            )
    return found


def tightened(counts: dict[str, int], allowed: dict[str, int]) -> dict[str, int]:
    """The allowances lowered to today's counts: never raised, never a module added."""
    return {
        rel: min(cap, counts.get(rel, 0))
        for rel, cap in sorted(allowed.items())
        if counts.get(rel, 0) > 0
    }


def _checked_files(root: Path) -> list[Path]:
    files = [root / "app.py"] if (root / "app.py").exists() else []
    return files + [
        p for d in PACKAGES if (root / d).is_dir() for p in sorted((root / d).rglob("*.py"))
    ]


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


def _ratchet(*, tighten: bool) -> list[str]:
    counts = model_name_counts()
    path = ROOT / ALLOWED
    allowed = json.loads(path.read_text(encoding="utf-8"))
    lower = tightened(counts, allowed)
    if tighten and lower != allowed:
        path.write_text(json.dumps(lower, indent=2) + "\n", encoding="utf-8")
        print(f"{ALLOWED}: lowered to today's counts ({sum(lower.values())} in all)")
    elif lower != allowed:
        print(
            f"note: some modules name model classes less than {ALLOWED} allows; "
            "run python -m tools.check_house --tighten"
        )
    print(
        f"store model classes named outside chalicelib/store/: {sum(counts.values())} "
        f"times in {len(counts)} modules (allowed {sum(allowed.values())})"
    )
    return ratchet_breaches(counts, allowed)


def main(argv: list[str]) -> int:
    tighten = "--tighten" in argv
    argv = [a for a in argv if a != "--tighten"]
    targets = [Path(a) for a in argv] or [ROOT / name for name in CHECKED]
    files: list[Path] = []
    for target in targets:
        files.extend(sorted(target.rglob("*.py")) if target.is_dir() else [target])
    found = [b for f in files for b in breaches(f)]
    if not argv:
        found += ["import cycle: " + " <-> ".join(c) for c in import_cycles()]
        found += _ratchet(tighten=tighten)
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} breach(es) of the house rules (tools/check_house.py)")
        return 1
    print(f"house rules: {len(files)} modules checked, 0 breaches")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
