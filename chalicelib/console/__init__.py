"""The web console: static HTML, CSS and JS served by the app itself (no build step, no CDN).

Only the files in this folder with a known type are served; anything else is a 404 in
the contract's shape. The files are read on each request (a few KB; an edit shows at once).
"""

from __future__ import annotations

from pathlib import Path

from chalice import Response

__all__ = ["asset", "ASSET_TYPES"]

_DIR = Path(__file__).resolve().parent
ASSET_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
# The console calls only its own origin; no inline script, no framing by other sites.
_SECURITY = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _read(name: str) -> str | None:
    path = _DIR / name
    if path.suffix not in ASSET_TYPES or path.parent != _DIR or not path.is_file():
        return None
    return path.read_text(encoding="utf-8")


def asset(name: str) -> Response:
    """One console file, or the contract's 404."""
    text = _read(name) if "/" not in name and not name.startswith(".") else None
    if text is None:
        return Response(
            body={"error": {"code": "not_found", "message": f"no console file {name!r}"}},
            status_code=404,
            headers={"Content-Type": "application/json"},
        )
    headers: dict[str, str | list[str]] = {
        "Content-Type": ASSET_TYPES[Path(name).suffix],
        "Cache-Control": "no-cache",
        **_SECURITY,
    }
    return Response(body=text, status_code=200, headers=headers)
