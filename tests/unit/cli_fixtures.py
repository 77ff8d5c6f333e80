"""The fixtures of the ``cronhook`` command's tests: the fake API running, a closed port.

Test modules import them as ``api_fixture`` and ``closed_port_url_fixture``; pytest knows
them by their ``name``, ``api`` and ``closed_port_url``.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from tests.unit.cli_fake import FakeCronhook, QuietServer, handler_for


@pytest.fixture(name="api")
def api_fixture() -> Iterator[FakeCronhook]:
    fake = FakeCronhook()
    server = QuietServer(("127.0.0.1", 0), handler_for(fake))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield fake
    fake.release.set()
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture(name="closed_port_url")
def closed_port_url_fixture() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
