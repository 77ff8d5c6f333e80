"""The local stack's file adapter loop: every watch in ``$CRONHOOK_DATA_DIR/watches.json``.

See ``chalicelib/sources/files.py`` for the rules (debounce, settle, source_gone).
"""

from __future__ import annotations

import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from chalicelib.sources.files import (
    Watcher,
    file_payload,
    load_watches,
    remove_watch,
    watches_file,
)

__all__ = ["run_watches", "POLL_S"]

POLL_S = 0.25


def run_watches(data_dir: Path, stop: threading.Event, *, settle_s: float | None = None) -> None:
    """Poll every watch until ``stop`` is set; re-read the list whenever it changes."""
    from chalicelib.sources.files import SETTLE_S

    watchers: dict[tuple[str, str], Watcher] = {}
    list_mtime: float | None = None
    while not stop.wait(POLL_S):
        try:
            mtime = watches_file(data_dir).stat().st_mtime_ns
        except OSError:
            mtime = None
        if mtime != list_mtime:
            list_mtime = mtime
            current = {(w.directory, w.trigger_id): w for w in load_watches(data_dir)}
            watchers = {
                key: watchers.get(key) or Watcher(w, settle_s=settle_s or SETTLE_S)
                for key, w in current.items()
            }
        for key, watcher in list(watchers.items()):
            try:
                if not _pass(data_dir, watcher):
                    watchers.pop(key, None)
            except Exception as exc:  # one broken watch must not stop the others
                print(f"watch {watcher.watch.directory}: {exc!r}", file=sys.stderr)


def _pass(data_dir: Path, watcher: Watcher) -> bool:
    """One scan of one watch; False once the watch is over (directory or trigger gone)."""
    from chalicelib.domain.errors import Gone
    from chalicelib.services import events
    from chalicelib.store import triggers

    watch = watcher.watch
    if watcher.gone():
        item = triggers.get_trigger(watch.trigger_id)
        now = datetime.now(UTC)
        if item is not None:
            events.disable_source_gone(
                item, f"the watched directory {watch.directory} is gone", now=now
            )
        remove_watch(data_dir, watch)  # before the line that says it was removed
        print(
            f"watch: {watch.directory} is gone; trigger {watch.trigger_id} disabled"
            " (source_gone) and the watch removed",
            file=sys.stderr,
        )
        return False
    for path, size, mtime_ns in watcher.scan(now=time.monotonic()):
        item = triggers.get_trigger(watch.trigger_id)
        if item is None:
            remove_watch(data_dir, watch)
            print(f"watch: trigger {watch.trigger_id} is gone; watch removed", file=sys.stderr)
            return False
        payload = file_payload(watch, path, size=size, mtime_ns=mtime_ns)
        try:
            events.ingest(item, source="file", payload=payload, now=datetime.now(UTC))
        except Gone:
            pass  # disabled: the file is seen, not run; enabling it again runs new files
        watcher.delivered(path, size, mtime_ns)
    return True
