"""The registry of Python workflows: ``@workflow``, look-ups, the built-ins and team modules."""

from __future__ import annotations

import re
from collections.abc import Callable

from chalicelib.workflows.model import Fire, Result, Workflow

__all__ = ["REGISTRY", "workflow", "get_workflow", "is_known_target"]

REGISTRY: dict[str, Workflow] = {}


def workflow(
    name: str,
    *,
    state_schema: dict | None = None,
    initial_state: Callable[[str], dict] | None = None,
) -> Callable[[Callable[[Fire], Result | None]], Callable[[Fire], Result | None]]:
    """Register a function as the workflow ``name``."""

    def register(func: Callable[[Fire], Result | None]) -> Callable[[Fire], Result | None]:
        if state_schema is not None:
            import jsonschema

            # A broken schema fails at import (deploy), not on a user's create.
            jsonschema.validators.validator_for(state_schema).check_schema(state_schema)
        REGISTRY[name] = Workflow(
            name=name,
            func=func,
            state_schema=state_schema,
            initial_state=initial_state,
            description=(func.__doc__ or "").strip().splitlines()[0] if func.__doc__ else "",
        )
        return func

    return register


def get_workflow(name: str) -> Workflow | None:
    """The registered workflow called ``name``, or None."""
    _load_builtins()
    return REGISTRY.get(name)


def is_known_target(target: str) -> bool:
    """A registered name, or a remote target (``lambda:``, ``http:``, ``sqs:``... ``github:``)."""
    if target.startswith("lambda:"):
        return len(target) > len("lambda:")
    if target.startswith("http:"):
        return target[len("http:") :].startswith(("https://", "http://"))
    kind, sep, rest = target.partition(":")
    if sep and kind in ("sqs", "sns", "states", "events", "github"):
        return bool(rest)  # its shape and names are checked on create (prepare_target)
    return get_workflow(target) is not None


def _load_builtins() -> None:
    """Register the built-ins where the settings ask for them; take them out where not."""
    from chalicelib.settings import get_settings
    from chalicelib.workflows.builtin import BUILTINS

    wanted = get_settings().builtin_workflows
    for name, builtin in BUILTINS.items():
        if wanted:
            REGISTRY.setdefault(name, builtin)
        elif REGISTRY.get(name) is builtin:
            del REGISTRY[name]
    _load_modules()


def _load_modules() -> None:
    """Import the team's workflow modules named in ``CRONHOOK_WORKFLOW_MODULES`` (once each)."""
    import importlib
    import importlib.util
    import sys
    from pathlib import Path

    from chalicelib.settings import get_settings

    for name in get_settings().workflow_modules:
        if not name.endswith(".py"):
            importlib.import_module(name)
            continue
        path = Path(name).resolve()
        module_name = "cronhook_workflows_" + re.sub(r"\W", "_", str(path))
        if module_name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"CRONHOOK_WORKFLOW_MODULES: cannot load {name!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]
            raise
