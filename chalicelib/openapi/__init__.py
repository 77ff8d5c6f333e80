"""The OpenAPI 3.1 document of the REST API, and ``docs/api.md`` rendered from it.

The document is built from what each route declares (``chalicelib/declare.py``: role,
body, query, answers, errors), walking the routes the app really has. Request bodies are
the pydantic models that validate requests (``domain/spec.py``); answers are the models
below. The functional tests check every JSON answer against the model its route
declared, and refuse fields a model does not list (``response_drift``), so a view that
grows a field fails a test until its model documents it. ``python -m chalicelib.openapi``
rewrites ``docs/api.md``; a test fails when the committed page is out of date.
"""

from __future__ import annotations

from chalicelib.openapi.document import (
    answer_model,
    build_document,
    document,
    response_drift,
    undeclared,
)
from chalicelib.openapi.markdown import DOCS_PATH, render_markdown
from chalicelib.openapi.models import *  # noqa: F403  (the answer models, by name)
from chalicelib.openapi.models import API_VERSION

__all__ = [
    "API_VERSION",
    "DOCS_PATH",
    "build_document",
    "document",
    "answer_model",
    "response_drift",
    "undeclared",
    "render_markdown",
]
