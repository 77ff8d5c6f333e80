"""The tree with line counts in ``docs/architecture.md``, generated, never typed.

The block between ``<!-- tree:start -->`` and ``<!-- tree:end -->`` lists every Python module
of the product (``app.py``, ``chalicelib/``), the dev packages (``devstack/``,
``cronhook_cli/``) and the workshop (``infra/``, ``bench/``, ``tools/``) with its line count,
one folder a line. ``python -m tools.tree`` rewrites it; ``python -m tools.tree --check``
(in ``make lint``) fails when the page no longer matches the tree.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

__all__ = ["render", "rewrite", "main"]

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
START, END = "<!-- tree:start -->", "<!-- tree:end -->"
TOPS = ("chalicelib", "devstack", "cronhook_cli", "infra", "bench", "tools")
WIDTH = 100


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _folder_line(root: Path, folder: Path) -> str:
    mods = sorted(p for p in folder.glob("*.py"))
    # A name and its count never part across lines: join them with a mark, wrap, unmark.
    parts = [f"{p.stem}\x00{_lines(p)}" for p in mods]
    total = sum(_lines(p) for p in folder.rglob("*.py"))
    head = f"{folder.relative_to(root).as_posix()}/\x00({total}\x00in\x00all):"
    text = " ".join([head, " · ".join(parts)]).replace(" · ", "\x00· ")
    wrapped = textwrap.fill(text, WIDTH, subsequent_indent="    ", break_on_hyphens=False)
    return wrapped.replace("\x00", " ")


def render(root: Path = ROOT) -> str:
    """The generated block: ``app.py``, then each folder of ``TOPS`` and its subfolders."""
    out = [f"app.py {_lines(root / 'app.py')}"] if (root / "app.py").exists() else []
    for top in TOPS:
        base = root / top
        if not base.is_dir():
            continue
        folders = [base] + sorted(d for d in base.rglob("*") if d.is_dir() and any(d.glob("*.py")))
        out.extend(_folder_line(root, d) for d in folders if "__pycache__" not in d.parts)
    return "```\n" + "\n".join(out) + "\n```"


def rewrite(page: str, block: str) -> str:
    """``page`` with its generated block replaced by ``block``."""
    head, sep, rest = page.partition(START)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"{PAGE.name} has no {START} ... {END} block")
    return f"{head}{START}\n{block}\n{END}{tail}"


def main(argv: list[str]) -> int:
    page = PAGE.read_text(encoding="utf-8")
    fresh = rewrite(page, render())
    if "--check" in argv:
        if fresh != page:
            print("docs/architecture.md: the tree's line counts are stale: python -m tools.tree")
            return 1
        print("docs/architecture.md: the tree's line counts are current")
        return 0
    PAGE.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
