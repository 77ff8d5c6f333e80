"""What the local stack keeps in its data dir besides the tables (its log, two marks), and
how its API's port is taken.

- ``logs/cronhook.log``: the stack's and its runners' log lines, as JSON (``GET
  /v1/runs/{id}/logs`` reads a run's lines there); past 64 MB it starts afresh at the next
  start, the older file kept as ``cronhook.log.1``.
- ``stack.json``: which stack uses the dir (its URL). ``cronhook watch`` refuses a dir no
  stack uses: a watch kept where no stack looks would never fire.
- ``stopped-cleanly``: left by a stop (Ctrl-C, SIGTERM), absent after a crash or a kill,
  so the next start says how a run that was in hand was lost.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = [
    "LOG_KEEP_BYTES",
    "STACK_MARK",
    "log_file",
    "start_log",
    "mark_in_use",
    "mark_stopped",
    "take_stopped",
    "serve_api",
]

LOG_KEEP_BYTES = 64 * 1024 * 1024
STACK_MARK = "stack.json"
_STOPPED = "stopped-cleanly"


def log_file(data_dir: Path) -> Path:
    """The log file to write (the previous one set aside when it grew past the limit)."""
    path = (data_dir / "logs" / "cronhook.log").resolve()
    if path.exists() and path.stat().st_size > LOG_KEEP_BYTES:
        path.replace(path.with_suffix(".log.1"))
    return path


def start_log(data_dir: Path) -> None:
    """Write this process's log lines to the data dir too, and tell its runners where."""
    from chalicelib.observability import log_to_file

    os.environ["CRONHOOK_LOG_FILE"] = str(log_file(data_dir))
    log_to_file(os.environ["CRONHOOK_LOG_FILE"])


def mark_in_use(config: Any) -> None:
    """Say which stack uses its data dir (``config``: the ``StackConfig``; none unless kept)."""
    if not config.persist:
        return
    config.data_dir.mkdir(parents=True, exist_ok=True)
    url = f"http://{config.host}:{config.port}"
    (config.data_dir / STACK_MARK).write_text(json.dumps({"url": url}) + "\n")


def mark_stopped(config: Any) -> None:
    """Leave the clean stop's mark (best effort: without it a loss is called a crash)."""
    if not config.persist:
        return
    try:
        (config.data_dir / _STOPPED).write_text("stopped\n")
    except OSError:
        pass


def take_stopped(data_dir: Path) -> bool:
    """Whether the last stop was clean; the mark is used up."""
    mark = data_dir / _STOPPED
    found = mark.exists()
    mark.unlink(missing_ok=True)
    return found


def serve_api(host: str, port: int) -> Any:
    """The API's HTTP server on ``host:port``; a port in use is one line naming the setting."""
    from devstack.http import serve

    try:
        return serve(host, port)
    except OSError as exc:
        why = f"cannot listen on {host}:{port} ({exc.strerror or exc})"
        raise RuntimeError(f"{why}; set CRONHOOK_PORT to a free port") from None
