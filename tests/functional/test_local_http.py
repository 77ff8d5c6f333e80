"""The local stack's HTTP server: bodies it cannot take are answered, never a broken pipe.

Real sockets against ``devstack.http.serve`` (waitress, with the adapter to the
Chalice app): a body over 8 MiB gets its 413 (the client reads it, whether it sent a
Content-Length, chunks, or asked ``Expect: 100-continue``); a body that cannot be framed
(a bad or negative chunk size, a bad Content-Length, two Content-Lengths that disagree)
gets a 400 naming why and a transfer coding other than chunked a 501 (``gzip, chunked``,
``xchunked``: the old hand-written framing read both as chunked), then the connection is
closed and what followed is not read as a request; an idle connection is closed.
"""

from __future__ import annotations

import json
import socket
import threading

import pytest
import requests

from devstack.http import MAX_BODY_BYTES, serve
from tests.conftest import ROOT_KEY


@pytest.fixture
def port(aws):
    server = serve("127.0.0.1", 0, idle_timeout_s=1)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def exchange(port: int, head: bytes, chunks=(), *, read_first: bool = False) -> bytes:
    """Send ``head`` then each chunk, then read the whole answer until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        if read_first:
            sock.sendall(head)
            return _first_answer(sock)
        small = head + b"".join(chunks)
        if len(small) <= 16384:
            # One send: the server reads it whole, so when it refuses the head and closes
            # there is no unread data left for the kernel to answer with a reset.
            sock.sendall(small)
        else:
            for part in (head, *chunks):
                sock.sendall(part)
        answer = b""
        while data := sock.recv(65536):
            answer += data
        return answer


def _first_answer(sock: socket.socket) -> bytes:
    """The first answer on ``sock``, whole: its head, then Content-Length bytes of body
    (the server may write them in separate sends; one recv can return the head alone)."""
    raw = b""
    while b"\r\n\r\n" not in raw and (data := sock.recv(65536)):
        raw += data
    head, _, body = raw.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length and (data := sock.recv(65536)):
        body += data
    return head + b"\r\n\r\n" + body


def parsed(raw: bytes) -> tuple[int, dict, dict]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body)


POST = b"POST /hooks/trg_x.token HTTP/1.1\r\nHost: 127.0.0.1\r\n"


def test_a_body_over_8_mib_with_a_content_length_gets_its_413(port):
    answer = requests.post(
        f"http://127.0.0.1:{port}/hooks/trg_x.token",
        data=b"x" * (MAX_BODY_BYTES + 1),
        timeout=60,
    )
    assert answer.status_code == 413
    assert answer.json()["error"] == {
        "code": "too_large",
        "message": "the body is larger than 8 MiB",
    }


def test_a_chunked_body_over_8_mib_gets_its_413(port):
    chunk = b"x" * 65536
    body = [b"10000\r\n" + chunk + b"\r\n"] * (MAX_BODY_BYTES // 65536 + 8) + [b"0\r\n\r\n"]
    raw = exchange(port, POST + b"Transfer-Encoding: chunked\r\n\r\n", body)
    status, _, answer = parsed(raw)
    assert status == 413 and answer["error"]["code"] == "too_large"


def test_a_client_that_asks_first_is_told_413_before_sending_the_body(port):
    head = POST + b"Content-Length: 1073741824\r\nExpect: 100-continue\r\n\r\n"
    raw = exchange(port, head, read_first=True)
    status, _, answer = parsed(raw)
    assert status == 413 and answer["error"]["code"] == "too_large"


@pytest.mark.parametrize(
    ("size_line", "why"),
    [
        (b"-5", "Invalid chunk size"),
        (b"zz", "Invalid chunk size"),
        (b"0x5", "Invalid chunk size"),
        (b" 5", "Invalid chunk size"),
        (b"5 5", "Invalid chunk size"),
    ],
)
def test_a_bad_or_negative_chunk_size_is_400_naming_it_and_the_connection_closes(
    port, size_line, why
):
    raw = exchange(
        port,
        POST + b"Transfer-Encoding: chunked\r\n\r\n",
        [size_line + b"\r\nabcde\r\n0\r\n\r\n", b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"],
    )
    status, headers, answer = parsed(raw)
    assert status == 400 and answer["error"]["code"] == "bad_request"
    assert why in answer["error"]["message"]
    assert headers["Connection"] == "close"
    assert raw.count(b"HTTP/1.1 ") == 1  # what followed was not taken for a request


def test_a_chunk_not_followed_by_crlf_is_400(port):
    raw = exchange(
        port, POST + b"Transfer-Encoding: chunked\r\n\r\n", [b"3\r\nabcdef\r\n0\r\n\r\n"]
    )
    status, _, answer = parsed(raw)
    assert status == 400 and "not properly terminated" in answer["error"]["message"]


@pytest.mark.parametrize("length", [b"-1", b"12abc", b"1e3"])
def test_a_bad_content_length_is_400(port, length):
    raw = exchange(port, POST + b"Content-Length: " + length + b"\r\n\r\n", [b"{}"])
    status, _, answer = parsed(raw)
    assert status == 400 and "Content-Length" in answer["error"]["message"]


def test_a_well_formed_chunked_body_with_extensions_and_trailers_reaches_the_route(port):
    body = json.dumps({"cron": "0 8 * * 1", "from": "2026-01-01T00:00:00Z", "count": 1}).encode()
    head = (
        b"POST /v1/schedules/preview HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Authorization: Bearer " + ROOT_KEY.encode() + b"\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        b"Connection: close\r\n\r\n"
    )
    half = len(body) // 2
    chunks = [
        f"{half:x};name=value\r\n".encode() + body[:half] + b"\r\n",
        f"{len(body) - half:X}\r\n".encode() + body[half:] + b"\r\n",
        b"0\r\nX-Trailer: yes\r\n\r\n",
    ]
    status, _, answer = parsed(exchange(port, head, chunks))
    assert status == 200, answer
    assert answer["fires"] == ["2026-01-05T08:00:00.000Z"]


FOLLOWING = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"


def test_two_content_lengths_that_disagree_are_400_and_the_connection_closes(port):
    # The old framing took the first one: 2 bytes of body, then "}GET /healthz..." as the
    # next request; a proxy that took the last would have seen another request.
    head = (
        POST + b"Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 6\r\n\r\n"
    )
    raw = exchange(port, head, [b"{}{}{}", FOLLOWING])
    status, headers, answer = parsed(raw)
    assert status == 400 and answer["error"]["code"] == "bad_request"
    assert "Content-Length" in answer["error"]["message"]
    assert headers["Connection"] == "close"
    assert raw.count(b"HTTP/1.1 ") == 1


@pytest.mark.parametrize("coding", [b"gzip, chunked", b"xchunked", b"chunked, gzip", b"identity"])
def test_a_transfer_coding_other_than_chunked_is_refused_not_read_as_chunked(port, coding):
    head = POST + b"Content-Type: application/json\r\nTransfer-Encoding: " + coding + b"\r\n\r\n"
    raw = exchange(port, head, [b"2\r\n{}\r\n0\r\n\r\n", FOLLOWING])
    status, headers, answer = parsed(raw)
    # RFC 9112 6.1: a transfer coding the server does not understand is 501.
    assert status == 501 and answer["error"]["code"] == "not_implemented"
    assert headers["Connection"] == "close"
    assert raw.count(b"HTTP/1.1 ") == 1


def test_an_idle_connection_is_closed(port):
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        assert sock.recv(1) == b""  # closed by the server (the fixture's idle timeout: 1 s)


def test_a_request_stalled_half_way_is_closed(port):
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(POST + b"Content-Length: 100\r\n\r\n{")
        assert sock.recv(65536) == b""


def test_a_connection_kept_alive_serves_requests_one_after_another(port):
    with requests.Session() as session:
        for _ in range(3):
            answer = session.get(f"http://127.0.0.1:{port}/healthz", timeout=30)
            assert answer.status_code == 200
