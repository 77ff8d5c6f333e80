"""``python -m chalicelib.openapi``: rewrite ``docs/api.md`` (``--check``: exit 1 if stale)."""

from __future__ import annotations

import sys

from chalicelib.openapi.document import build_document
from chalicelib.openapi.markdown import DOCS_PATH, render_markdown


def main(argv: list[str] | None = None) -> int:
    """Rewrite ``docs/api.md`` (``--check``: exit 1 if it is out of date instead)."""
    argv = sys.argv[1:] if argv is None else argv
    sys.path.insert(0, str(DOCS_PATH.parents[1]))
    import app as app_module

    text = render_markdown(build_document(app_module.app.routes))
    if "--check" in argv:
        current = DOCS_PATH.read_text() if DOCS_PATH.exists() else ""
        if current != text:
            print(f"{DOCS_PATH} is out of date: run python -m chalicelib.openapi", file=sys.stderr)
            return 1
        return 0
    DOCS_PATH.write_text(text)
    print(f"wrote {DOCS_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
