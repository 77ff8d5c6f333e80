"""Loads the services that register guards and hooks into the runner and the API.

Each module registers itself on import; this file only decides which ones exist.
"""

from __future__ import annotations

import importlib

for _name in (
    "chalicelib.services.events",
    "chalicelib.sources",  # after events: wraps its prepare for the delivered sources
    "chalicelib.services.audit",
    "chalicelib.services.keys",
    "chalicelib.services.guardrails",
    "chalicelib.services.ondemand",
    "chalicelib.services.budgets",
):
    try:
        importlib.import_module(_name)
    except ModuleNotFoundError as exc:  # a service not built yet
        if exc.name != _name:
            raise
