"""Sealed secrets survive a restart of the local stack: webhooks verify, http targets sign.

Before the local KMS key was kept under ``$CRONHOOK_DATA_DIR``, every start made a new
key: after a restart each webhook trigger answered 503 for good (which also told a real
token from an unknown one) and every ``http:`` target failed its runs.
"""

from __future__ import annotations

import stat
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
import standardwebhooks

from tests.e2e.conftest import start_stack, stop_stack
from tests.signing import delivery_body, signed_headers

pytestmark = pytest.mark.e2e


class Receiver:
    """An http target on this machine that keeps every fire whose signature verifies."""

    def __init__(self) -> None:
        self.secret = "whsec_" + "A" * 44
        self.verified: list[dict] = []
        self.refused = 0
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    fire = standardwebhooks.Webhook(outer.secret).verify(body, headers)
                except standardwebhooks.WebhookVerificationError:
                    outer.refused += 1
                    status, answer = 401, b'{"error": "bad signature"}'
                else:
                    outer.verified.append(fire)
                    status, answer = 200, b"{}"
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _deliver(stack, url: str, secret: str, n: int) -> requests.Response:
    # Distinct content: the generic scheme signs no id, so identical bodies are one delivery.
    body = delivery_body("webhook", f"d{n}", delivery_number=n)
    headers = signed_headers("webhook", secret, body, ts=int(time.time()), delivery=f"d{n}")
    return requests.post(url, data=body, headers=headers, timeout=30)


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_webhook_and_http_target_secrets_still_work_after_a_restart(tmp_path):
    receiver = Receiver()
    # The receiver is on this machine: the one setting that lets a target reach it.
    env = {"CRONHOOK_ALLOW_PRIVATE_TARGETS": "1"}
    first = start_stack(tmp_path, env=env)
    try:
        hook = first.call(
            "POST", "/v1/triggers", {"workflow": "echo", "event": {"source": "webhook"}}
        ).json()
        url, secret = hook["webhook"]["url"], hook["webhook"]["secret"]
        target = first.call(
            "POST",
            "/v1/triggers",
            {"workflow": f"http:{receiver.url}", "schedule": {"interval_s": 1}},
        ).json()
        receiver.secret = target["outbound_secret"]
        assert _deliver(first, url, secret, 1).status_code == 202
        first.wait_for(lambda: len(receiver.verified) >= 1)
    finally:
        stop_stack(first)
    assert first.process.returncode == 0
    data = tmp_path / "data"
    assert _mode(data / "kms-key.json") == 0o600
    assert _mode(data / "tables.json") == 0o600
    assert _mode(data) == 0o700

    seen_before = len(receiver.verified)
    restarted_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    second = start_stack(tmp_path, env=env)
    url = second.url + "/hooks/" + url.rsplit("/", 1)[1]  # a new port each start
    try:
        assert _deliver(second, url, secret, 2).status_code == 202
        # A wrong secret on the real token and any secret on an unknown token: one answer.
        wrong = _deliver(second, url, "not-the-secret", 3)
        unknown = _deliver(second, url.rsplit("/", 1)[0] + "/tok_unknown", secret, 4)
        assert wrong.status_code == unknown.status_code == 401
        assert wrong.json() == unknown.json()
        second.wait_for(lambda: len(receiver.verified) > seen_before, timeout_s=90)

        def succeeded_since_restart() -> list:
            runs = second.call("GET", f"/v1/triggers/{target['id']}/runs").json()["items"]
            return [
                r
                for r in runs
                if r["status"] == "succeeded" and (r["finished_at"] or "") > restarted_at
            ]

        second.wait_for(succeeded_since_restart, timeout_s=90)
        assert receiver.refused == 0
    finally:
        stop_stack(second)
        receiver.close()
