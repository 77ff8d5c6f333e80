"""The embedded AWS keeps a client's connection open between calls (``devstack/keep_alive``),
and closes it as before when it cannot tell where a request's body ends."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator

import boto3
import pytest
from werkzeug.serving import make_server

from devstack.keep_alive import KeepAliveHandler, KeepAliveMotoServer, keeps_alive

_TARGET = "DynamoDB_20120810.ListTables"
_AUTH = (
    "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, "
    "SignedHeaders=host, Signature=0"
)


@pytest.fixture(params=["embedded AWS's server", "tests' and bench's server"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, int]]:
    """The handler behind werkzeug as the embedded AWS serves it, and moto's in-process
    server as the tests and the bench start it (``KeepAliveMotoServer``)."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    if request.param.startswith("tests"):
        moto = KeepAliveMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        moto.start()
        try:
            yield moto.get_host_and_port()
        finally:
            moto.stop()
        return
    app = DomainDispatcherApplication(create_backend_app)
    srv = make_server("127.0.0.1", 0, app, threaded=True, request_handler=KeepAliveHandler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield "127.0.0.1", srv.server_port
    finally:
        srv.shutdown()
        srv.server_close()


def _request(body: bytes = b"{}", *, extra: str = "", length: bool = True) -> bytes:
    head = (
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"X-Amz-Target: {_TARGET}\r\nContent-Type: application/x-amz-json-1.0\r\n"
        f"Authorization: {_AUTH}\r\n{extra}"
    )
    if length:
        head += f"Content-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


def _answer(sock: socket.socket) -> tuple[dict[str, str], bytes]:
    """One HTTP answer read off ``sock``: its headers (lower-cased) and body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed before an answer: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0].startswith("HTTP/1.1 200"), lines[0]
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    length = int(headers["content-length"])
    while len(body) < length:
        body += sock.recv(65536)
    return headers, body[:length]


def _tables(body: bytes) -> bool:
    """A whole ListTables answer (the in-process moto may hold other tests' tables)."""
    answer = json.loads(body)
    return set(answer) <= {"TableNames", "LastEvaluatedTableName"} and isinstance(
        answer["TableNames"], list
    )


def _closed(sock: socket.socket) -> bool:
    sock.settimeout(5)
    return sock.recv(1) == b""


def test_one_connection_serves_call_after_call(server: tuple[str, int]) -> None:
    with socket.create_connection(server, timeout=5) as sock:
        for _ in range(5):
            sock.sendall(_request(b'{"Limit": 10}'))
            headers, body = _answer(sock)
            assert headers.get("connection") != "close"
            assert _tables(body)


def test_two_calls_sent_back_to_back_are_both_answered_in_order(
    server: tuple[str, int],
) -> None:
    # The first body is read whole before the first answer: the second request line is
    # what the server reads next, not the rest of a body.
    with socket.create_connection(server, timeout=5) as sock:
        sock.sendall(_request(b'{"Limit": 5}') + _request(b'{"Limit": 6}'))
        assert _tables(_answer(sock)[1])
        assert _tables(_answer(sock)[1])


def test_a_client_that_asks_for_close_gets_it(server: tuple[str, int]) -> None:
    with socket.create_connection(server, timeout=5) as sock:
        sock.sendall(_request(extra="Connection: close\r\n"))
        headers, _ = _answer(sock)
        assert headers["connection"] == "close"
        assert _closed(sock)


def test_a_chunked_body_is_answered_and_the_connection_closed(server: tuple[str, int]) -> None:
    body = b'{"Limit": 7}'
    chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    with socket.create_connection(server, timeout=5) as sock:
        sock.sendall(_request(chunked, extra="Transfer-Encoding: chunked\r\n", length=False))
        headers, answer = _answer(sock)
        assert _tables(answer)
        assert headers["connection"] == "close"
        assert _closed(sock)


def test_boto3_reuses_its_connection(server: tuple[str, int]) -> None:
    host, port = server
    import urllib3.util.connection

    opened = []
    real = urllib3.util.connection.create_connection

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(args[0])
        return real(*args, **kwargs)

    client = boto3.client(
        "dynamodb",
        endpoint_url=f"http://{host}:{port}",
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(urllib3.util.connection, "create_connection", counting)
        for _ in range(10):
            client.list_tables()
    assert len(opened) == 1, opened


@pytest.mark.parametrize(
    ("version", "headers", "keeps"),
    [
        ("HTTP/1.1", {"Content-Length": "12"}, True),
        ("HTTP/1.1", {}, True),  # no body
        ("HTTP/1.0", {"Content-Length": "12"}, False),
        ("HTTP/1.1", {"Content-Length": "12", "Connection": "close"}, False),
        ("HTTP/1.1", {"Transfer-Encoding": "chunked"}, False),
        ("HTTP/1.1", {"Content-Length": "-1"}, False),
        ("HTTP/1.1", {"Content-Length": "lots"}, False),
        ("HTTP/1.1", {"Content-Length": str(1 << 40)}, False),
    ],
)
def test_which_requests_keep_their_connection(version: str, headers: dict, keeps: bool) -> None:
    assert keeps_alive(version, headers) is keeps
