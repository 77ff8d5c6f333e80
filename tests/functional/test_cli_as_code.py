"""``cronhook apply``, ``diff`` and ``export`` against the real app served over HTTP (moto
server behind it): files in, triggers out, and back again.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from chalicelib.services import triggers
from chalicelib.services.auth import Principal
from chalicelib.settings import reset_settings
from chalicelib.store import trigger_reads
from chalicelib.store.aws import client
from cronhook_cli import cli
from cronhook_cli.as_code import DIFF_CHANGES_EXIT
from devstack.http import serve
from devstack.resources import create_sources
from tests.conftest import ROOT_KEY

ROOT = Principal("root", "local", "admin")
SECRETS = {
    "PAYMENTS_SECRET": "whsec_stripe_issued_1",
    "CHAT_SECRET": "slack-signing-secret-1",
    "SHOP_SECRET": "shopify-secret-0001",
    "SOCIAL_SECRET": "linkedin-client-secret-1",
}


@pytest.fixture
def url(aws, clock, monkeypatch):
    monkeypatch.setattr("chalicelib.routes.resource.now_utc", clock)
    # The delivered sources' AWS side (eventbridge, s3, email), as the local stack makes it.
    for name, value in create_sources().items():
        monkeypatch.setenv(name, value)
    client("s3").create_bucket(Bucket="uploads-bucket")
    reset_settings()
    server = serve("127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def run(url: str, *args: str, key: str = ROOT_KEY, env: dict | None = None) -> Result:
    environment = {"CRONHOOK_URL": url, "CRONHOOK_API_KEY": key, "COLUMNS": "200", **(env or {})}
    return CliRunner().invoke(cli, list(args), env=environment)


def write(folder: Path, name: str, *documents: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def ids(tenant: str = "local") -> list[str]:
    return list(trigger_reads.tenant_trigger_ids(tenant))


NIGHTLY = {
    "key": "nightly",
    "workflow": "echo",
    "schedule": {"cron": "30 2 * * *", "timezone": "Europe/Berlin"},
}
HOURLY = {"key": "hourly", "workflow": "echo", "schedule": {"interval_s": 3600}, "tags": ["ops"]}
HOOK = {"key": "deploys", "workflow": "echo", "event": {"source": "github"}}


def test_apply_creates_a_folder_then_changes_nothing_then_updates_and_prunes(url, tmp_path, clock):
    files = tmp_path / "triggers"
    write(files, "a.yaml", NIGHTLY, HOURLY)
    write(files, "b.yaml", HOOK)
    by_hand = triggers.create_trigger(
        ROOT, {"workflow": "echo", "schedule": {"cron": "0 9 * * *"}}, now=clock()
    )
    first = run(url, "apply", "-f", str(files))
    assert first.exit_code == 0, first.output
    assert "Plan: 3 to create, 0 to update, 0 to delete, 0 unchanged." in first.output
    assert len(ids()) == 4
    # The generated webhook secret is printed by the apply that created it, and only then.
    assert "webhook secret: " in first.output
    second = run(url, "apply", "-f", str(files))
    assert second.exit_code == 0, second.output
    assert "Plan: 0 to create, 0 to update, 0 to delete, 3 unchanged." in second.output
    assert "webhook secret" not in second.output
    assert run(url, "diff", "-f", str(files)).exit_code == 0

    write(files, "a.yaml", {**NIGHTLY, "schedule": {**NIGHTLY["schedule"], "cron": "30 3 * * *"}})
    plan = run(url, "diff", "-f", str(files), "--prune", "--from", "2027-03-26T00:00:00Z")
    assert plan.exit_code == DIFF_CHANGES_EXIT, plan.output
    assert "~ update nightly" in plan.output
    assert 'schedule.cron: "30 2 * * *" -> "30 3 * * *"' in plan.output
    assert "next 5 fires:" in plan.output
    assert "2027-03-26T02:30:00.000Z" in plan.output  # 03:30 in Berlin (UTC+1) ...
    assert "2027-03-28T01:30:00.000Z" in plan.output  # ... and 03:30 CEST after the jump
    assert "- delete hourly" in plan.output
    assert "Plan: 0 to create, 1 to update, 1 to delete, 1 unchanged." in plan.output

    pruned = run(url, "apply", "-f", str(files), "--prune")
    assert pruned.exit_code == 0, pruned.output
    left = {t["key"] for t in triggers.list_triggers(ROOT, {})["items"]}
    assert left == {"nightly", "deploys", None}
    assert by_hand["id"] in ids()


def test_the_plan_marks_the_fires_a_dst_transition_decided(url, tmp_path):
    path = write(tmp_path, "t.yaml", NIGHTLY)
    plan = run(url, "diff", "-f", str(path), "--from", "2027-03-26T00:00:00Z")
    assert plan.exit_code == DIFF_CHANGES_EXIT, plan.output
    assert "+ create nightly" in plan.output
    # 02:30 does not exist in Berlin on 2027-03-28: the fire shifts after the jump.
    assert "shifted (shift)" in plan.output


def test_dry_run_changes_nothing(url, tmp_path):
    path = write(tmp_path, "t.yaml", NIGHTLY)
    result = run(url, "apply", "-f", str(path), "--dry-run")
    assert result.exit_code == 0, result.output
    assert "+ create nightly" in result.output
    assert ids() == []


def test_a_patch_from_the_console_shows_as_drift_in_diff(url, tmp_path, clock):
    path = write(tmp_path, "t.yaml", NIGHTLY)
    assert run(url, "apply", "-f", str(path)).exit_code == 0
    trigger = triggers.get_by_key(ROOT, "nightly")
    triggers.patch_trigger(ROOT, trigger["id"], {"title": "changed in the console"}, now=clock())
    plan = run(url, "diff", "-f", str(path))
    assert plan.exit_code == DIFF_CHANGES_EXIT, plan.output
    assert 'title: "changed in the console" -> null' in plan.output
    assert "drift: edited outside apply" in plan.output
    assert "(title)" in plan.output
    as_json = json.loads(run(url, "diff", "-f", str(path), "-o", "json").stdout)
    assert as_json["steps"][0]["drift"]["fields"] == ["title"]
    assert run(url, "apply", "-f", str(path)).exit_code == 0
    assert run(url, "diff", "-f", str(path)).exit_code == 0


@pytest.mark.parametrize(
    ("documents", "expected"),
    [
        ([{**NIGHTLY, "cadence": "daily"}], "t.yaml, document 1 (key nightly): field cadence"),
        ([NIGHTLY, HOURLY, {**HOOK, "key": "nightly"}], "document 3 (key nightly): field key"),
        (
            [{**HOOK, "event": {"source": "stripe", "secret": "whsec_literal"}}],
            "document 1 (key deploys): field event.secret: a secret is never written",
        ),
        ([{**NIGHTLY, "key": "Not A Key"}], "t.yaml, document 1: field key"),
        ([{**NIGHTLY, "workflow": "nope"}], "document 1 (key nightly): 422 invalid: unknown"),
        ([HOURLY, {**HOOK, "managed_by": "me"}], "document 2 (key deploys): field managed_by"),
    ],
)
def test_bad_documents_are_refused_before_anything_is_written(url, tmp_path, documents, expected):
    path = write(tmp_path, "t.yaml", *documents)
    result = run(url, "apply", "-f", str(path))
    assert result.exit_code == 1, result.output
    assert expected in result.output
    assert "Traceback" not in result.output
    assert ids() == []


def test_a_provider_secret_is_read_from_the_environment(url, tmp_path):
    doc = {**HOOK, "event": {"source": "stripe", "secret": {"env": "PAYMENTS_SECRET"}}}
    path = write(tmp_path, "t.yaml", doc)
    missing = run(url, "apply", "-f", str(path))
    assert missing.exit_code == 1
    assert "$PAYMENTS_SECRET is not set" in missing.output
    assert "event.secret" in missing.output
    made = run(url, "apply", "-f", str(path), env={"PAYMENTS_SECRET": "whsec_from_env_1"})
    assert made.exit_code == 0, made.output
    assert "whsec_from_env_1" not in made.output
    # Unset later (another machine): the update keeps the trigger's secret.
    assert run(url, "diff", "-f", str(path)).exit_code == 0


def _mixed_documents() -> list[dict]:
    """20 triggers: every kind of schedule, every event source, limits, tags and state."""
    echo = {"workflow": "echo"}
    docs = [
        {"key": "berlin-dst", **echo, "schedule": {"cron": "30 2 * * *",
         "timezone": "Europe/Berlin", "dst": {"skipped": "skip", "repeated": "both"}}},
        {"key": "weekly", **echo, "title": "Weekly report", "tags": ["client-7", "reports"],
         "schedule": {"cron": "0 8 * * 1", "timezone": "America/New_York"}},
        {"key": "every-hour", **echo, "schedule": {"interval_s": 3600},
         "state": {"cursor": "abc", "count": 3}},
        {"key": "once", **echo, "schedule": {"at": "2031-01-01T09:00:00Z"}},
        {"key": "paused", **echo, "schedule": {"cron": "*/15 * * * *"}, "enabled": False},
        {"key": "limited", **echo, "schedule": {"interval_s": 600},
         "limits": {"max_runs": 10, "expires_at": "2031-06-01T00:00:00Z", "max_usd": 2.5,
                    "budget_period": "week", "max_failures": 3}},
        {"key": "busy", **echo, "schedule": {"interval_s": 120}, "overlap": "allow",
         "concurrency": 3, "serialize_key": "db", "secret_scope": "client-7",
         "payload": {"n": 1}, "history": "failures", "allow_destructive": True},
        {"key": "aws-cron", **echo, "schedule": {"cron": "cron(0 6 ? * MON-FRI *)",
         "timezone": "Europe/Paris"}},
        {"key": "hook", **echo, "event": {"source": "webhook"}},
        {"key": "gh", **echo, "event": {"source": "github", "filter": {"branch": "main"},
         "max_attempts": 5}},
        {"key": "payments", **echo, "event": {"source": "stripe",
         "secret": {"env": "PAYMENTS_SECRET"}, "dedupe_window_s": 3600}},
        {"key": "chat", **echo, "event": {"source": "slack", "secret": {"env": "CHAT_SECRET"}}},
        {"key": "std", **echo, "event": {"source": "standard"}},
        {"key": "shop", **echo, "event": {"source": "shopify", "secret": {"env": "SHOP_SECRET"}}},
        {"key": "social", **echo, "event": {"source": "linkedin",
         "secret": {"env": "SOCIAL_SECRET"}}},
        {"key": "bus", **echo, "event": {"source": "eventbridge",
         "pattern": {"source": ["aws.ec2"]}}},
        {"key": "uploads", **echo, "event": {"source": "s3", "bucket": "uploads-bucket",
         "prefix": "in/", "suffix": ".csv"}},
        {"key": "inbox", **echo, "event": {"source": "email", "address": "in@example.com"}},
        {"key": "drop", **echo, "event": {"source": "file"}},
        {"key": "tagged", **echo, "tags": ["only-tag"], "schedule": {"cron": "0 0 1 * *"},
         "state": {"seen": []}},
    ]  # fmt: skip
    return docs


def test_export_applied_to_an_empty_tenant_exports_byte_identical_yaml(url, tmp_path, clock):
    write(tmp_path / "src", "all.yaml", *_mixed_documents())
    made = run(url, "apply", "-f", str(tmp_path / "src"), env=SECRETS)
    assert made.exit_code == 0, made.output
    # Two made by hand, without a key: exported under their id, which adopts them.
    triggers.create_trigger(
        ROOT, {"workflow": "echo", "schedule": {"interval_s": 900}}, now=clock()
    )
    exported = run(url, "export")
    assert exported.exit_code == 0, exported.output
    text = exported.stdout
    for secret in SECRETS.values():
        assert secret not in text
    assert text.count("---") == 21
    # Taken back by the same tenant: nothing to change but the adoption's label.
    (tmp_path / "export.yaml").write_text(text)
    back = json.loads(run(url, "diff", "-f", str(tmp_path / "export.yaml"), "-o", "json",
                          env=SECRETS).stdout)  # fmt: skip
    changed = {s["key"]: s["changes"] for s in back["steps"] if s["action"] != "none"}
    assert list(changed.values()) == [{"managed_by": {"from": None, "to": "apply"}}]

    other = run(url, "keys", "create", "--role", "operator", "--tenant", "empty", "-o", "json")
    assert other.exit_code == 0, other.output
    other_key = json.loads(other.stdout)["key"]
    applied = run(url, "apply", "-f", str(tmp_path / "export.yaml"), key=other_key, env=SECRETS)
    assert applied.exit_code == 0, applied.output
    assert len(ids("empty")) == 21
    again = run(url, "export", key=other_key)
    assert again.exit_code == 0
    assert again.stdout == text


def test_export_filters_as_triggers_list(url, tmp_path):
    write(tmp_path, "t.yaml", NIGHTLY, HOURLY)
    assert run(url, "apply", "-f", str(tmp_path / "t.yaml")).exit_code == 0
    only = list(yaml.safe_load_all(run(url, "export", "--tag", "ops").stdout))
    assert [doc["key"] for doc in only] == ["hourly"]


SLACK = "https://hooks.slack.com/services/T000/B000/secretpart"
OPS = {
    "kind": "alert",
    "name": "ops",
    "match": {"tags": ["ops"]},
    "on": ["failed", "disabled"],
    "channels": [
        {"type": "email", "to": ["ops@example.com"]},
        {"type": "slack", "webhook_url": {"env": "OPS_SLACK_URL"}},
        {"type": "webhook", "url": "https://ops.example.com/cronhook"},
    ],
}


@pytest.fixture
def public_names(monkeypatch):
    """Slack's and example.com's names resolve to public addresses (no network here)."""
    from chalicelib.workflows.remote import addresses

    real = addresses._resolve
    monkeypatch.setattr(
        addresses,
        "_resolve",
        lambda host, port: (
            ["93.184.215.14"] if host.endswith(("slack.com", "example.com")) else real(host, port)
        ),
    )


def test_alert_policies_are_applied_beside_triggers_by_name(url, tmp_path, public_names):
    path = write(tmp_path, "t.yaml", HOURLY, OPS)
    env = {"OPS_SLACK_URL": SLACK}
    first = run(url, "apply", "-f", str(path), env=env)
    assert first.exit_code == 0, first.output
    assert "+ create alert ops" in first.output
    assert "Plan: 2 to create" in first.output
    assert "webhook signing secret: " in first.output  # the new policy's, once
    assert SLACK not in first.output
    assert run(url, "diff", "-f", str(path), env=env).exit_code == 0
    write(tmp_path, "t.yaml", HOURLY, {**OPS, "quiet_s": 600})
    plan = run(url, "diff", "-f", str(path), env=env)
    assert plan.exit_code == DIFF_CHANGES_EXIT, plan.output
    assert "~ update alert ops" in plan.output and "quiet_s: 3600 -> 600" in plan.output
    assert run(url, "apply", "-f", str(path), env=env).exit_code == 0
    # Back to the default: the setting left out of the file is reset, not kept.
    write(tmp_path, "t.yaml", HOURLY, OPS)
    assert run(url, "apply", "-f", str(path), env=env).exit_code == 0
    assert run(url, "diff", "-f", str(path), env=env).exit_code == 0
    policies = json.loads(run(url, "alerts", "list", "-o", "json").stdout)
    assert [p["name"] for p in policies["items"]] == ["ops"]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            {**OPS, "channels": [{"type": "slack", "webhook_url": SLACK}]},
            "document 1 (alert ops): field channels.0.webhook_url: a Slack URL is a secret",
        ),
        ({**OPS, "on": ["sometimes"]}, "document 1 (alert ops): field on.0"),
        ({**OPS, "name": None}, "document 1: field name"),
    ],
)
def test_bad_alert_documents_are_refused_before_anything_is_written(
    url, tmp_path, document, expected
):
    path = write(tmp_path, "t.yaml", document, NIGHTLY)
    result = run(url, "apply", "-f", str(path), env={"OPS_SLACK_URL": SLACK})
    assert result.exit_code == 1, result.output
    assert expected in result.output
    assert ids() == []
