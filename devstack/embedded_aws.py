"""The local stack's embedded AWS: a moto server in a process of its own.

Run as ``python -m devstack.embedded_aws --port 4566 [--save-to tables.json]``
(the local stack starts it; see ``EmbeddedAws``). Why a process of its own: moto in the
stack's process shares one interpreter lock with the runner threads, so every DynamoDB
and SQS call a runner makes competes with the server answering it; measured as fire
lateness at :00 (issue 12). Here moto has its own interpreter, and a fixed port, so
``aws --endpoint-url http://127.0.0.1:4566 ...`` and boto3 drive it as they drive AWS.

The child:

1. ignores SIGINT (Ctrl-C reaches the whole process group; the stack's runners must
   settle first), blocks SIGTERM and SIGUSR1 in every thread, then patches moto for atomic
   conditional writes (``moto_atomic``: the patch must live in the process that serves
   the writes) and binds the port, serving on threads;
2. writes one line, ``ready <port>``, to stdout (the parent waits for it: a port that
   answers may be somebody else's server);
3. waits for signals in its main thread: SIGUSR1 saves the tables (signals that arrive
   during a save coalesce into one more save), SIGTERM saves (if a save was ever asked:
   the stack asks once it has loaded the saved tables) and exits 0;
4. exits the same way if its parent is gone (``PR_SET_PDEATHSIG`` where Linux offers
   it, and a parent-pid check once a second everywhere), so no moto outlives its stack.

With a data dir, every write is journaled and fsync'd before it is answered, and the
journal a crash left is folded into ``tables.json`` before the port is served
(``journal``, ``journal_hooks``): a SIGKILL loses nothing that was acknowledged.

The save reads moto's DynamoDB backend directly and costs the stack's process nothing
(it only sends a signal). It takes each table's list of items under the lock the
writes take and reads the items with the lock free, so writes go on during a save; a
write the dump half-saw is replayed from the journal, rotated before the dump
(``dump_tables``). The file keeps the shape the stack has always written, plus the
stack's buckets: ``{"saved_at", "tables": {name: [item in DynamoDB
JSON]}, "objects": {bucket: {key: base64}}}``.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["EmbeddedAws", "dump_tables", "item_for_boto3", "snapshot_text"]

# Not SIGINT: Ctrl-C in a terminal reaches the whole process group, and the embedded
# AWS must outlive the stack's runners settling; the stack stops it with SIGTERM.
_CONTROL_SIGNALS = {signal.SIGTERM, signal.SIGUSR1}


# -- the parent's handle ---------------------------------------------------------------


class EmbeddedAws:
    """Start, save and stop the embedded AWS child process."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 4566,
        save_to: Path | None = None,
        keyring: Path | None = None,
        table_prefix: str = "cronhook-local-",
    ):
        self.host = host
        self.port = port
        self.save_to = save_to
        self.keyring = keyring
        self.table_prefix = table_prefix
        self.process: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, *, timeout_s: float = 60) -> None:
        """Start the child and wait until it serves on the port (or raise, naming why)."""
        command = [sys.executable, "-m", "devstack.embedded_aws"]
        command += ["--host", self.host, "--port", str(self.port)]
        command += ["--parent", str(os.getpid()), "--table-prefix", self.table_prefix]
        if self.save_to is not None:
            command += ["--save-to", str(self.save_to)]
        if self.keyring is not None:
            command += ["--keyring", str(self.keyring)]
        # stdout carries only the ready line; the child's stderr is the stack's stderr.
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE)
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        line = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.5)
            if ready:
                line = self.process.stdout.readline()
                break
            if self.process.poll() is not None:
                break
        if line.startswith(b"error "):
            self.stop()
            reason = line[6:].decode("utf-8", "replace").strip()
            raise RuntimeError(
                f"cannot listen on {self.host}:{self.port} ({reason});"
                " set CRONHOOK_AWS_PORT to a free port"
            )
        if not line.startswith(b"ready "):
            self.stop()
            raise RuntimeError(
                f"the embedded AWS did not start on {self.endpoint} (CRONHOOK_AWS_PORT);"
                " see its error above"
            )

    def request_save(self) -> None:
        """Ask the child to save its tables; returns at once (the save runs over there)."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGUSR1)

    def stop(self, *, timeout_s: float = 30) -> None:
        """Save and stop the child; kill it if it does not exit in time. Idempotent."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                print("the embedded AWS did not stop in time; killed", file=sys.stderr)
                process.kill()
                process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


# -- saving and loading ----------------------------------------------------------------


def dump_tables(prefix: str) -> dict[str, list[dict]]:
    """Every item of every table named ``prefix*`` in this process's moto, as DynamoDB JSON.

    Only the list of a table's items is taken under the write lock; each item is then
    converted with the lock free, so the embedded AWS keeps answering while a large
    snapshot is made (with 50,000 items under the lock, a read waited up to 0.95 s a
    save). The dump is fuzzy: an item written meanwhile may be seen
    before or after that write. ``_save`` makes it whole: the journal is rotated first,
    so every write made during the dump is in a journal file kept after it, and loading
    replays those files over the dump, each record the item's full image.
    """
    from moto.dynamodb.models import dynamodb_backends

    from devstack.moto_atomic import write_lock

    dump: dict[str, list[dict]] = {}
    for account in list(dynamodb_backends.keys()):
        for region in list(dynamodb_backends[account].keys()):
            backend = dynamodb_backends[account][region]
            for name, table in list(backend.tables.items()):
                if not name.startswith(prefix):
                    continue
                # Under the lock: a put or delete changes the table's dicts' size, and a
                # dict that changes size while it is iterated raises.
                with write_lock():
                    items = list(table.all_items())
                dump[name] = [_wire_unlocked(item) for item in items]
    return dump


def _wire_unlocked(item: Any) -> dict:
    """An item as DynamoDB JSON, read with the write lock free (or under it, if a write
    added or removed one of its attributes while it was read)."""
    from devstack import journal
    from devstack.moto_atomic import write_lock

    try:
        return journal.wire_item(item)
    except RuntimeError:  # "dictionary changed size during iteration"
        with write_lock():
            return journal.wire_item(item)


def item_for_boto3(item: dict) -> dict:
    """A saved item (DynamoDB JSON, binary as base64 text) in the shape boto3 sends."""
    return {name: _value_for_boto3(value) for name, value in item.items()}


def _value_for_boto3(value: dict) -> dict:
    ((kind, inner),) = value.items()
    if kind == "B":
        return {"B": base64.b64decode(inner)}
    if kind == "BS":
        return {"BS": [base64.b64decode(v) for v in inner]}
    if kind == "M":
        return {"M": {k: _value_for_boto3(v) for k, v in inner.items()}}
    if kind == "L":
        return {"L": [_value_for_boto3(v) for v in inner]}
    return value


# Items encoded per call: json.dumps holds the interpreter lock for the whole of a call
# (50,000 items: the slowest read during a save 362-449 ms in one call, 332-344 chunked).
_ENCODE_CHUNK = 500


def snapshot_text(snapshot: dict) -> str:
    """``json.dumps(snapshot)``, the same JSON, encoded a chunk of items at a time so that
    moto's threads get the interpreter between chunks."""
    parts = [json.dumps({k: v for k, v in snapshot.items() if k != "tables"})[:-1]]
    tables = []
    for name, items in snapshot.get("tables", {}).items():
        chunks = [
            json.dumps(items[at : at + _ENCODE_CHUNK])[1:-1]
            for at in range(0, len(items), _ENCODE_CHUNK)
        ]
        tables.append(f"{json.dumps(name)}: [{', '.join(chunks)}]")
    if "tables" in snapshot:
        parts.append(("" if parts[0] == "{" else ", ") + '"tables": {' + ", ".join(tables) + "}")
    return "".join(parts) + "}"


def _save(path: Path, prefix: str, journal: Any = None) -> None:
    """Snapshot the tables (and the stack's buckets) to ``path``: a new journal file first,
    then the dump, written durably; only then the journal files it covers are removed
    (replaying them again over it would change nothing: ``journal``)."""
    started = time.monotonic()
    from devstack.journal import write_durable
    from devstack.journal_hooks import dump_objects

    covered = journal.rotate() if journal is not None else None
    snapshot = {
        "saved_at": datetime.now(UTC).isoformat(),
        "tables": dump_tables(prefix),
        "objects": dump_objects(prefix),
    }
    # 0600 in a 0700 directory: the tables hold sealed secrets and every tenant's state.
    write_durable(path, snapshot_text(snapshot))
    if covered is not None:
        journal.drop_through(covered)
    took_ms = (time.monotonic() - started) * 1000
    if took_ms > 1000:
        print(f"embedded AWS: saving tables took {took_ms:.0f} ms", file=sys.stderr)


# -- the child ---------------------------------------------------------------------------


def _die_with_parent() -> None:
    """Linux: have the kernel send SIGTERM when the parent dies (no-op elsewhere)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGTERM))
    except (OSError, AttributeError):
        pass


def _make_server(host: str, port: int) -> Any:
    """moto's app behind a threaded werkzeug server (patched first; its connections kept
    alive, ``keep_alive``); None if the port is busy."""
    import logging

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    from devstack.keep_alive import KeepAliveHandler
    from devstack.moto_atomic import make_dynamodb_atomic
    from devstack.moto_dynamo_speed import make_dynamodb_fast
    from devstack.moto_fidelity import make_moto_faithful
    from devstack.moto_sqs_speed import make_sqs_fast
    from devstack.moto_wakeup import make_long_polls_wake
    from devstack.moto_write_speed import make_writes_fast

    make_dynamodb_atomic()
    make_moto_faithful()
    make_long_polls_wake()
    make_sqs_fast()
    make_dynamodb_fast()
    make_writes_fast()
    # One line per request (a runner polls five times a second) would drown the stack's log.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app = DomainDispatcherApplication(create_backend_app)
    try:
        # werkzeug reports a port in use itself (three lines, then exit): look first, so
        # the stack can say it once, naming CRONHOOK_AWS_PORT.
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
        return make_server(host, port, app, threaded=True, request_handler=KeepAliveHandler)
    except OSError as exc:
        # Told to the stack on the ready line's place: it says it once, naming the setting.
        sys.stdout.write(f"error {exc.strerror or exc}\n")
        sys.stdout.flush()
        return None


def _wait_for_signals(args: argparse.Namespace, save: Any) -> None:
    """Save on SIGUSR1; return on SIGTERM, or when the stack that started us is gone."""
    while True:
        info = signal.sigtimedwait(_CONTROL_SIGNALS, 1.0)
        if info is None:
            if args.parent and os.getppid() != args.parent:
                return  # the stack is gone without stopping us
            continue
        if info.si_signo == signal.SIGUSR1:
            save()
            continue
        return


def _start_journal(save_to: Path, prefix: str) -> Any:
    """Fold the journal a crash left into the saved tables, then journal every write."""
    from devstack.journal import Journal, compact
    from devstack.journal_hooks import install

    journal = Journal(save_to, compact(save_to))
    install(journal, bucket_prefix=prefix)
    return journal


def _serve(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, _CONTROL_SIGNALS)
    _die_with_parent()
    import threading

    server = _make_server(args.host, args.port)
    if server is None:
        return 1
    save_to = Path(args.save_to) if args.save_to else None
    journal = _start_journal(save_to, args.table_prefix) if save_to else None
    if args.keyring:  # the local KMS key, with the material kept across restarts
        from devstack.keyring import ensure_key

        ensure_key(Path(args.keyring), region=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    thread = threading.Thread(target=server.serve_forever, name="moto", daemon=True)
    thread.start()
    sys.stdout.write(f"ready {args.port}\n")
    sys.stdout.flush()

    # Snapshots only once the stack has asked for one (it does right after loading the
    # saved tables): a stack that died before loading them must not have its tables.json
    # replaced by the empty tables of this process. Every write is journaled anyway.
    asked: list[bool] = []

    def save() -> None:
        asked.append(True)
        if save_to is None:
            return
        try:
            _save(save_to, args.table_prefix, journal)
        except Exception as exc:  # keep serving; the next save retries
            print(f"embedded AWS: saving tables failed: {exc!r}", file=sys.stderr)

    _wait_for_signals(args, save)
    server.shutdown()
    if asked:
        save()
    if journal is not None:
        journal.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4566)
    parser.add_argument("--save-to", default=None)
    parser.add_argument("--keyring", default=None)
    parser.add_argument("--table-prefix", default="cronhook-local-")
    parser.add_argument("--parent", type=int, default=0)
    return _serve(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
