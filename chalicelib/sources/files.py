"""The file adapter behind ``cronhook watch DIR --trigger ID`` (run by the local stack).

1. The list of watches is ``$CRONHOOK_DATA_DIR/watches.json``: ``cronhook watch`` adds to
   it, the local stack re-reads it when it changes and on start, so every watched
   trigger resumes after a restart.
2. Each pass lists the directory (recursively) and notes each file's size and mtime. A
   file is delivered once it has stayed unchanged for ``settle_s`` (a write in three
   chunks is one event, not three) and differs from what was last delivered for it.
   Files older than the watch itself are the directory's past, not events.
3. A directory that is gone disables its trigger with reason ``source_gone`` and leaves
   the list, with one clear line on stderr, instead of failing on every pass.

``Watcher.scan`` takes ``now`` (monotonic seconds) and returns the files to deliver, so
the debounce is tested without a clock.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Watch", "Watcher", "load_watches", "save_watches", "add_watch", "file_payload"]

SETTLE_S = 1.0
_MAX_FILES = 10_000


@dataclass(frozen=True)
class Watch:
    """One watched directory and the trigger its files run."""

    directory: str
    trigger_id: str
    since_ns: int


def watches_file(data_dir: Path) -> Path:
    return data_dir / "watches.json"


def load_watches(data_dir: Path) -> list[Watch]:
    """The watches kept under the data dir (none if the file is missing or unreadable)."""
    try:
        rows = json.loads(watches_file(data_dir).read_text())
    except (OSError, ValueError):
        return []
    return [
        Watch(str(r["dir"]), str(r["trigger_id"]), int(r.get("since_ns", 0)))
        for r in rows
        if isinstance(r, dict) and "dir" in r and "trigger_id" in r
    ]


def save_watches(data_dir: Path, watches: list[Watch]) -> None:
    """Write the list atomically (the stack and the CLI both write it)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    rows = [
        {"dir": w.directory, "trigger_id": w.trigger_id, "since_ns": w.since_ns} for w in watches
    ]
    tmp = watches_file(data_dir).with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(rows, indent=1))
    tmp.replace(watches_file(data_dir))


def add_watch(data_dir: Path, directory: str, trigger_id: str) -> Watch:
    """Add (or keep) a watch of ``directory`` for ``trigger_id``; returns it."""
    directory = str(Path(directory).resolve())
    watches = load_watches(data_dir)
    for w in watches:
        if w.directory == directory and w.trigger_id == trigger_id:
            return w
    watch = Watch(directory, trigger_id, time.time_ns())
    save_watches(data_dir, [*watches, watch])
    return watch


def remove_watch(data_dir: Path, watch: Watch) -> None:
    save_watches(data_dir, [w for w in load_watches(data_dir) if w != watch])


def file_payload(watch: Watch, path: str, *, size: int, mtime_ns: int) -> dict:
    """What a run of a file event gets: the file, never its bytes."""
    return {
        "path": path,
        "name": os.path.basename(path),
        "relative": os.path.relpath(path, watch.directory),
        "directory": watch.directory,
        "size": size,
        "mtime_ns": mtime_ns,
    }


@dataclass
class Watcher:
    """The debounce state of one watch."""

    watch: Watch
    settle_s: float = SETTLE_S
    # path -> (size, mtime_ns, first seen with this signature at)
    _pending: dict[str, tuple[int, int, float]] = field(default_factory=dict)
    _delivered: dict[str, tuple[int, int]] = field(default_factory=dict)

    def gone(self) -> bool:
        return not os.path.isdir(self.watch.directory)

    def scan(self, *, now: float) -> list[tuple[str, int, int]]:
        """Files settled since the last scan: ``(path, size, mtime_ns)``."""
        seen: dict[str, tuple[int, int]] = {}
        for root, _dirs, names in os.walk(self.watch.directory):
            for name in names:
                if name.startswith(".") or len(seen) >= _MAX_FILES:
                    continue  # dotfiles are editors' temporaries; a cap keeps a pass short
                path = os.path.join(root, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue  # vanished between the listing and the stat
                if st.st_mtime_ns < self.watch.since_ns:
                    continue
                seen[path] = (st.st_size, st.st_mtime_ns)
        ready = []
        for path, signature in seen.items():
            if self._delivered.get(path) == signature:
                continue
            pending = self._pending.get(path)
            if pending is None or pending[:2] != signature:
                self._pending[path] = (*signature, now)  # new, or still being written
                continue
            if now - pending[2] >= self.settle_s:
                ready.append((path, *signature))
        for path in [p for p in self._pending if p not in seen]:
            del self._pending[path]
        return ready

    def delivered(self, path: str, size: int, mtime_ns: int) -> None:
        self._pending.pop(path, None)
        self._delivered[path] = (size, mtime_ns)
