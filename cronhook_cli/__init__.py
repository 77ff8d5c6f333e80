"""The ``cronhook`` command: a thin client of the REST API (docs/cli.md).

It knows nothing about the server's internals: every command is one or a few HTTP calls
to the public API in CONTRACT.md, so it works the same against the local stack and a
deployed stage. Exit codes: 0 ok, 1 the API refused or could not be reached, 2 usage.

The modules, from the wire up:

- ``client``: the HTTP client and ``ApiError``; ``parsing``: durations, instants, JSON;
- ``output``: json, yaml or tables (80 columns up); ``context``: the global options and
  the ``command`` decorator every command is declared with;
- one module per group of commands: ``triggers`` (with ``bodies`` and ``trigger_views``),
  ``trigger_actions`` (pause, resume, backfill, rotate-secret), ``runs`` (runs, events,
  replay, audit, workflows), ``preview``, ``keys``, ``watch``;
- ``root``: the ``cronhook`` group and ``main``; ``reference``: docs/cli.md's reference.

Shell completion is click's own (``_CRONHOOK_COMPLETE``), so it needs no module here.
"""

from cronhook_cli.bodies import build_create_body, build_update_body
from cronhook_cli.client import ApiError, Client
from cronhook_cli.parsing import parse_every, parse_instant
from cronhook_cli.reference import (
    REFERENCE_BEGIN,
    REFERENCE_END,
    render_reference,
    write_reference,
)
from cronhook_cli.root import cli, main

__all__ = [
    "REFERENCE_BEGIN",
    "REFERENCE_END",
    "ApiError",
    "Client",
    "build_create_body",
    "build_update_body",
    "cli",
    "main",
    "parse_every",
    "parse_instant",
    "render_reference",
    "write_reference",
]
