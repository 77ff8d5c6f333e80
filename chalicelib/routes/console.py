"""The web console: its page and its static files (no API key; the page asks for one)."""

from __future__ import annotations

from chalicelib.routes.resource import Resource, route

bp = Resource(__name__)


@route(
    bp,
    "/",
    "GET",
    role=None,
    summary="The web console (HTML)",
    answers={200: None},
    content_types=("text/html",),
    static=True,
)
def console_index():
    from chalicelib import console

    return console.asset("index.html")


@route(
    bp,
    "/console/{name}",
    "GET",
    role=None,
    summary="The console's static files (CSS, JavaScript)",
    answers={200: None},
    errors=(404,),
    content_types=("text/css", "text/javascript"),
    static=True,
)
def console_asset(name):
    from chalicelib import console

    return console.asset(name)
