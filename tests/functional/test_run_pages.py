"""A run's page: payload and error detail, rerun, logs, a busy trigger's manual fire queued."""

from __future__ import annotations

import pytest

import app as app_module
from chalicelib import assembly
from chalicelib.store.state import StateModel
from chalicelib.workflows import REGISTRY, Result, Workflow, WorkflowFailed
from devstack.gateway import contract_client as Client
from tests.functional.api_client import Api

HOURLY = {"workflow": "echo", "schedule": {"cron": "0 * * * *"}}


def _explode(fire):
    """Fails with a traceback that names this function."""
    raise KeyError(f"no such customer {fire.payload.get('customer')}")


def _report(fire):
    return Result(output={"got": fire.payload})


@pytest.fixture
def api(aws, monkeypatch):
    monkeypatch.setitem(REGISTRY, "explode", Workflow(name="explode", func=_explode))
    monkeypatch.setitem(REGISTRY, "report", Workflow(name="report", func=_report))
    with Client(app_module.app, stage_name="test") as client:
        api = Api(client)
        api.aws = aws
        yield api


def _drain(api):
    return api.aws.drain(assembly.build_runner())


def _detail_items(run_id: str) -> int:
    return StateModel.count(f"{run_id}#detail")


def test_a_failed_run_shows_its_error_type_message_traceback_and_payload(api):
    created = api.create_trigger({"workflow": "explode", "schedule": {"cron": "0 * * * *"}})
    fired = api.call("POST", f"/v1/triggers/{created['id']}/fire", {"payload": {"customer": 7}})
    _drain(api)
    run = api.call("GET", f"/v1/runs/{fired.body['run_id']}")
    assert run.status == 200, run.body
    body = run.body
    assert body["status"] == "failed"
    assert body["error_detail"]["type"] == "KeyError"
    assert "no such customer 7" in body["error_detail"]["message"]
    assert "_explode" in body["error_detail"]["traceback"]
    assert "Traceback (most recent call last)" in body["error_detail"]["traceback"]
    assert body["payload"] == {"customer": 7}
    assert body["payload_source"] == "run"
    assert body["duration_ms"] is not None and body["duration_ms"] >= 0


def test_a_success_on_the_triggers_own_payload_writes_no_detail_item(api):
    created = api.create_trigger({**HOURLY, "payload": {"from": "trigger"}})
    fired = api.call("POST", f"/v1/triggers/{created['id']}/fire")
    _drain(api)
    run_id = fired.body["run_id"]
    assert _detail_items(run_id) == 0
    body = api.call("GET", f"/v1/runs/{run_id}").body
    assert (body["status"], body["payload"], body["payload_source"]) == (
        "succeeded",
        {"from": "trigger"},
        "trigger",
    )
    assert body["error_detail"] is None


def test_a_payload_over_4_kb_is_kept_clipped(api):
    created = api.create_trigger({"workflow": "explode", "schedule": {"cron": "0 * * * *"}})
    big = {"customer": 1, "blob": "x" * 6000}
    fired = api.call("POST", f"/v1/triggers/{created['id']}/fire", {"payload": big})
    _drain(api)
    body = api.call("GET", f"/v1/runs/{fired.body['run_id']}").body
    assert body["payload_clipped"] is True
    assert isinstance(body["payload"], str) and len(body["payload"].encode()) <= 4096
    again = api.call("POST", f"/v1/runs/{fired.body['run_id']}/rerun")
    assert again.status == 409, again.body


def test_a_traceback_is_clipped_to_8_kb(api, monkeypatch):
    def deep(fire):
        raise ValueError("y" * 20_000)

    monkeypatch.setitem(REGISTRY, "deep", Workflow(name="deep", func=deep))
    created = api.create_trigger({"workflow": "deep", "schedule": {"cron": "0 * * * *"}})
    fired = api.call("POST", f"/v1/triggers/{created['id']}/fire")
    _drain(api)
    detail = api.call("GET", f"/v1/runs/{fired.body['run_id']}").body["error_detail"]
    assert len(detail["traceback"].encode()) <= 8192
    assert detail["traceback"].endswith("...[clipped]")
    assert len(detail["message"].encode()) <= 1000


def test_a_workflow_failed_with_state_keeps_its_message_as_the_detail(api, monkeypatch):
    def partial(fire):
        raise WorkflowFailed("page 3 of 9 failed", state={"page": 3})

    monkeypatch.setitem(REGISTRY, "partial", Workflow(name="partial", func=partial))
    created = api.create_trigger({"workflow": "partial", "schedule": {"cron": "0 * * * *"}})
    fired = api.call("POST", f"/v1/triggers/{created['id']}/fire")
    _drain(api)
    detail = api.call("GET", f"/v1/runs/{fired.body['run_id']}").body["error_detail"]
    assert (detail["type"], detail["message"]) == ("WorkflowFailed", "page 3 of 9 failed")


def test_rerun_runs_again_with_the_same_payload_and_links_the_new_run(api):
    created = api.create_trigger({"workflow": "report", "schedule": {"cron": "0 * * * *"}})
    fired = api.call("POST", f"/v1/triggers/{created['id']}/fire", {"payload": {"n": 41}})
    _drain(api)
    first = fired.body["run_id"]
    again = api.call("POST", f"/v1/runs/{first}/rerun")
    assert again.status == 202, again.body
    assert again.body["rerun_of"] == first
    _drain(api)
    run = api.call("GET", f"/v1/runs/{again.body['run_id']}").body
    assert (run["status"], run["surface"], run["rerun_of"]) == ("succeeded", "manual", first)
    assert run["output"] == {"got": {"n": 41}}
    listed = api.call("GET", f"/v1/triggers/{created['id']}/runs").body["items"]
    assert {r["id"]: r["rerun_of"] for r in listed}[again.body["run_id"]] == first


def test_rerun_of_a_run_on_the_triggers_payload_uses_the_triggers_payload(api):
    created = api.create_trigger(
        {"workflow": "report", "schedule": {"cron": "0 * * * *"}, "payload": {"p": 1}}
    )
    fired = api.call("POST", f"/v1/triggers/{created['id']}/fire")
    _drain(api)
    again = api.call("POST", f"/v1/runs/{fired.body['run_id']}/rerun")
    _drain(api)
    run = api.call("GET", f"/v1/runs/{again.body['run_id']}").body
    assert run["output"] == {"got": {"p": 1}}
    assert run["payload_source"] == "trigger"


def test_rerun_needs_an_operator_and_keeps_the_tenant_wall(api):
    created = api.create_trigger(HOURLY)
    fired = api.call("POST", f"/v1/triggers/{created['id']}/fire")
    _drain(api)
    run_id = fired.body["run_id"]
    api.make_key("viewer", "viewer")
    api.make_key("other", "operator", tenant="other")
    assert api.call("POST", f"/v1/runs/{run_id}/rerun", key="viewer").status == 403
    assert api.call("POST", f"/v1/runs/{run_id}/rerun", key="other").status == 404
    assert api.call("GET", f"/v1/runs/{run_id}", key="other").status == 404
    assert api.call("GET", f"/v1/runs/{run_id}/logs", key="other").status == 404
    assert api.call("POST", "/v1/runs/nope/rerun").status == 404


def test_a_manual_fire_on_a_busy_trigger_is_queued_and_runs_after(api):
    created = api.create_trigger({"workflow": "report", "schedule": {"cron": "0 * * * *"}})
    path = f"/v1/triggers/{created['id']}/fire"
    first = api.call("POST", path, {"payload": 1})
    second = api.call("POST", path, {"payload": 2})
    assert first.status == 202 and first.body["queued"] is False
    assert second.status == 202, second.body
    assert second.body["queued"] is True
    waiting = api.call("GET", f"/v1/runs/{second.body['run_id']}")
    assert (waiting.status, waiting.body["status"]) == (200, "queued")
    refused = api.call("POST", path, {"payload": 3, "if_idle": True})
    assert refused.status == 409
    assert "busy" in refused.error["message"]
    _drain(api)
    for run_id, n in ((first.body["run_id"], 1), (second.body["run_id"], 2)):
        run = api.call("GET", f"/v1/runs/{run_id}").body
        assert (run["status"], run["output"]) == ("succeeded", {"got": n})


def test_a_queued_run_delivered_twice_runs_once(api):
    created = api.create_trigger({"workflow": "report", "schedule": {"cron": "0 * * * *"}})
    path = f"/v1/triggers/{created['id']}/fire"
    api.call("POST", path)
    second = api.call("POST", path).body
    api.aws.purge_delays()
    messages = api.aws.receive()
    queued = [m for m in messages if second["run_id"] in m["Body"]]
    assert queued, messages
    for _ in range(2):  # SQS delivers at least once: here, three times
        api.aws.sqs().send_message(QueueUrl=api.aws.queue_url, MessageBody=queued[0]["Body"])
    api.aws.sqs().change_message_visibility_batch(
        QueueUrl=api.aws.queue_url,
        Entries=[
            {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
            for n, m in enumerate(messages)
        ],
    )
    statuses = _drain(api)
    assert statuses.count("succeeded") == 2, statuses  # the first fire and the queued one
    runs = api.call("GET", f"/v1/triggers/{created['id']}/runs").body["items"]
    assert [r["id"] for r in runs].count(second["run_id"]) == 1


def test_if_idle_must_be_a_boolean(api):
    created = api.create_trigger(HOURLY)
    answer = api.call("POST", f"/v1/triggers/{created['id']}/fire", {"if_idle": "yes"})
    assert answer.status == 422
    assert answer.error["field"] == "if_idle"


def test_a_paused_triggers_preview_lists_no_fires(api):
    created = api.create_trigger(HOURLY)
    assert len(api.call("GET", f"/v1/triggers/{created['id']}/preview").body["fires"]) == 10
    api.call("POST", f"/v1/triggers/{created['id']}/disable")
    paused = api.call("GET", f"/v1/triggers/{created['id']}/preview").body
    assert paused["fires"] == []
    assert paused["status"] == "disabled"


def test_run_logs_answer_the_local_lines_of_that_run(api, tmp_path, monkeypatch):
    from chalicelib.settings import reset_settings

    log_file = tmp_path / "cronhook.log"
    monkeypatch.setenv("CRONHOOK_LOG_FILE", str(log_file))
    reset_settings()
    created = api.create_trigger(HOURLY)
    fired = api.call("POST", f"/v1/triggers/{created['id']}/fire").body
    run_id = fired["run_id"]
    log_file.write_text(
        "\n".join(
            [
                '{"level":"INFO","message":"fire handled","timestamp":"2026-12-04 16:51:43,931+0000",'
                f'"run_id":"{run_id}","status":"succeeded"}}',
                '{"level":"INFO","message":"other","timestamp":"2026-12-04 16:51:44,000+0000",'
                f'"run_id":"{run_id}x"}}',
                "not json " + run_id,
            ]
        )
    )
    logs = api.call("GET", f"/v1/runs/{run_id}/logs")
    assert logs.status == 200, logs.body
    assert logs.body["source"] == "local"
    assert logs.body["items"] == [
        {
            "at": "2026-12-04T16:51:43.931Z",
            "level": "INFO",
            "message": "fire handled status=succeeded",
        }
    ]


@pytest.mark.parametrize("clean", [True, False])
def test_a_run_lost_to_a_stop_of_the_local_stack_says_how_it_stopped(api, clean):
    from chalicelib.domain.ids import manual_run_id
    from chalicelib.store import claims
    from devstack.restore import ENDED_ERROR, STOPPED_ERROR, recover_claims

    created = api.create_trigger(HOURLY)
    run_id = manual_run_id(created["id"], 1_900_000_000_000)
    outcome, _ = claims.claim_and_start(
        created["id"],
        run_id=run_id,
        surface="manual",
        lease_ms=1_900_000_400_000,
        capacity=1,
        shard="0",
    )
    assert outcome == claims.ClaimResult.CLAIMED
    recover_claims(clean_stop=clean)
    run = api.call("GET", f"/v1/runs/{run_id}").body
    assert run["status"] == "lost"
    assert run["error"] == (STOPPED_ERROR if clean else ENDED_ERROR)
    assert "crashed or timed out" not in run["error"]


def test_a_run_between_its_settle_and_its_record_is_shown_from_last_run(api):
    from chalicelib.store.runs import RunModel

    created = api.create_trigger({"workflow": "explode", "schedule": {"cron": "0 * * * *"}})
    fired = api.call("POST", f"/v1/triggers/{created['id']}/fire").body
    _drain(api)
    run_id = fired["run_id"]
    RunModel.get(created["id"], run_id).delete()  # as if its record were not written yet
    run = api.call("GET", f"/v1/runs/{run_id}")
    assert run.status == 200, run.body
    assert (run.body["status"], run.body["surface"]) == ("failed", "manual")
    assert api.call("GET", f"/v1/runs/{run_id}/logs").status == 200


def test_a_run_read_between_its_settle_and_its_record_shows_its_output(api):
    import threading

    from chalicelib.store.runs import RunModel

    created = api.create_trigger({"workflow": "report", "schedule": {"cron": "0 * * * *"}})
    fired = api.call("POST", f"/v1/triggers/{created['id']}/fire").body
    _drain(api)
    record = RunModel.get(created["id"], fired["run_id"])
    record.delete()  # settled (last_run names it), its record not written yet
    late = threading.Timer(0.3, record.save)  # the runner's next write
    late.start()
    try:
        run = api.call("GET", f"/v1/runs/{fired['run_id']}")
    finally:
        late.join()
    assert run.status == 200, run.body
    assert (run.body["status"], run.body["output"]) == ("succeeded", {"got": None})


def test_a_rerun_in_flight_already_names_the_run_it_reruns(api):
    created = api.create_trigger({"workflow": "report", "schedule": {"cron": "0 * * * *"}})
    fired = api.call("POST", f"/v1/triggers/{created['id']}/fire").body
    _drain(api)
    again = api.call("POST", f"/v1/runs/{fired['run_id']}/rerun").body
    waiting = api.call("GET", f"/v1/runs/{again['run_id']}").body  # claimed, not run yet
    assert (waiting["status"], waiting["rerun_of"]) == ("queued", fired["run_id"])


def test_run_logs_in_aws_answer_the_insights_query_and_its_console_link(api, monkeypatch):
    from chalicelib.settings import reset_settings

    created = api.create_trigger(HOURLY)
    run_id = api.call("POST", f"/v1/triggers/{created['id']}/fire").body["run_id"]
    monkeypatch.setenv("CRONHOOK_STAGE", "prod")
    monkeypatch.delenv("CRONHOOK_LOG_FILE", raising=False)
    reset_settings()
    try:
        # No log group yet (or a role without Logs Insights): the query and the link, no 500.
        logs = api.call("GET", f"/v1/runs/{run_id}/logs")
    finally:
        monkeypatch.setenv("CRONHOOK_STAGE", "test")
        reset_settings()
    assert logs.status == 200, logs.body
    assert (logs.body["source"], logs.body["complete"], logs.body["items"]) == (
        "cloudwatch",
        False,
        [],
    )
    assert f'filter run_id = "{run_id}"' in logs.body["query"]
    assert "/aws/lambda/cronhook-prod-runner" in logs.body["console_url"].replace("*2F", "/")


def test_a_run_says_whether_it_wrote_the_state(api, monkeypatch):
    def keep(fire):
        return Result(state={"seen": True})

    monkeypatch.setitem(REGISTRY, "keep", Workflow(name="keep", func=keep))
    writes = api.create_trigger({"workflow": "keep", "schedule": {"cron": "0 * * * *"}})
    plain = api.create_trigger({"workflow": "report", "schedule": {"cron": "0 * * * *"}})
    ran = {
        t["id"]: api.call("POST", f"/v1/triggers/{t['id']}/fire").body["run_id"]
        for t in (writes, plain)
    }
    _drain(api)
    assert api.call("GET", f"/v1/runs/{ran[writes['id']]}").body["state_written"] is True
    assert api.call("GET", f"/v1/runs/{ran[plain['id']]}").body["state_written"] is False


def test_a_rerun_takes_no_body_or_an_empty_object(api):
    created = api.create_trigger({"workflow": "report", "schedule": {"cron": "0 * * * *"}})
    fired = api.call("POST", f"/v1/triggers/{created['id']}/fire", {"payload": {"n": 1}})
    _drain(api)
    run_id = fired.body["run_id"]
    assert api.call("POST", f"/v1/runs/{run_id}/rerun").status == 202
    _drain(api)
    again = api.call("POST", f"/v1/runs/{run_id}/rerun", {})
    assert again.status == 202, again.body
    assert again.body["rerun_of"] == run_id


@pytest.mark.parametrize(
    ("raw", "status", "field"),
    [
        ("{bad", 400, None),
        ('{"payload": {"x": 1}}', 422, "payload"),
        ('{"if_idle": true}', 422, "if_idle"),
        ("[1]", 422, None),
    ],
)
def test_a_rerun_refuses_a_malformed_body_or_any_field_and_runs_nothing(api, raw, status, field):
    created = api.create_trigger({"workflow": "report", "schedule": {"cron": "0 * * * *"}})
    fired = api.call("POST", f"/v1/triggers/{created['id']}/fire", {"payload": {"n": 1}})
    _drain(api)
    answer = api.call("POST", f"/v1/runs/{fired.body['run_id']}/rerun", raw=raw)
    assert answer.status == status, answer.body
    assert answer.error.get("field") == field
    if field:
        assert repr(field) in answer.error["message"]
    _drain(api)
    runs = api.call("GET", f"/v1/triggers/{created['id']}/runs").body["items"]
    assert [r["id"] for r in runs] == [fired.body["run_id"]]


def test_a_queued_manual_run_is_listed_until_it_runs_with_the_shape_of_its_page(api):
    created = api.create_trigger({"workflow": "report", "schedule": {"cron": "0 * * * *"}})
    path = f"/v1/triggers/{created['id']}/fire"
    first = api.call("POST", path, {"payload": 1}).body["run_id"]
    second = api.call("POST", path, {"payload": 2}).body
    assert second["queued"] is True
    waiting = second["run_id"]
    page = api.call("GET", f"/v1/runs/{waiting}").body
    assert page["status"] == "queued" and page["fire_at"] is None
    listed = api.call("GET", f"/v1/triggers/{created['id']}/runs").body["items"]
    assert [r["id"] for r in listed] == [waiting, first]  # newest first
    assert listed[0] == {k: v for k, v in page.items() if k in listed[0]}
    assert set(page) - set(listed[0]) == {
        "payload",
        "payload_clipped",
        "payload_source",
        "error_detail",
    }
    queued = api.call("GET", "/v1/runs?status=queued").body["items"]
    assert waiting in [r["id"] for r in queued]
    assert [r["status"] for r in queued if r["id"] == waiting] == ["queued"]
    everything = api.call("GET", "/v1/runs").body["items"]
    assert [r["id"] for r in everything][:2] == [waiting, first]
    _drain(api)
    for listing in (f"/v1/triggers/{created['id']}/runs", "/v1/runs"):
        runs = api.call("GET", listing).body["items"]
        assert {r["id"]: r["status"] for r in runs} == {first: "succeeded", waiting: "succeeded"}
        assert all("fire_at" in r for r in runs)
    assert api.call("GET", "/v1/runs?status=queued").body["items"] == []
