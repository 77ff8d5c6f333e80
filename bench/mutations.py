"""The planted bugs of ``make mutants`` (``bench/mutants.py`` plants and runs them).

Each is one exact text replacement in one file, which must match exactly once
(``tests/unit/test_mutants_apply.py`` checks that every one still applies).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Mutation", "MUTATIONS"]


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str
    focus: str = ""  # a -k expression for the tests expected to catch it (run first)


MUTATIONS = [
    Mutation(
        "start fence accepts a started run",
        "chalicelib/store/claims.py",
        '            condition=t.in_flight[run_id]["s"] == 0,\n        )\n    except UpdateError as exc:\n        fresh, mine',
        "            condition=t.in_flight[run_id].exists(),\n        )\n    except UpdateError as exc:\n        fresh, mine",
        focus="manual_fire_delivered_twice",
    ),
    Mutation(
        "claim fence accepts a slot already run",
        "chalicelib/store/claims.py",
        "    fence = t.next_slot == slot_ms if standing else t.next_fire_at == slot_ms\n",
        "    fence = t.next_slot == slot_ms if standing else t.sched.exists()\n",
        focus="delivered_again_after_its_run_settled",
    ),
    Mutation(
        "a standing row's claim fence accepts a slot already run",
        "chalicelib/store/claims.py",
        "    fence = t.next_slot == slot_ms if standing else t.next_fire_at == slot_ms\n",
        "    fence = t.next_slot.exists() if standing else t.next_fire_at == slot_ms\n",
        focus="standing_slot_delivered_twice",
    ),
    Mutation(
        "a standing message drops the due pointer's slot (its earlier slot passed unrun)",
        "chalicelib/services/runner/claim.py",
        "        if not standing or current > max(slot.slot_ms, ms(now)):\n",
        "        if True:\n",
        focus="behind_a_due_pointer or later_slot_s_message",
    ),
    Mutation(
        "a standing message runs its own slot over the due pointer (the pointer's slot lost)",
        "chalicelib/store/claims.py",
        "    fence = t.next_slot == slot_ms if standing else t.next_fire_at == slot_ms\n",
        "    fence = t.next_slot <= slot_ms if standing else t.next_fire_at == slot_ms\n",
        focus="later_slot_s_message",
    ),
    Mutation(
        "a standing row's slots over the cap are lost (the window not ended there)",
        "chalicelib/services/heartbeat/shards.py",
        "        if reach is not None and self.standing_reach is not None:\n",
        "        if False:\n",
        focus="over_its_slot_cap",
    ),
    Mutation(
        "claim dropped after a failed send (cursor not moved back)",
        "chalicelib/services/heartbeat/send.py",
        "    if not new_failed or cursor_after is None:\n        return",
        "    if True:\n        return",
        focus="failed_send_is_sent_again",
    ),
    Mutation(
        "claim dropped after a failed write (error taken for a lost race)",
        "chalicelib/store/claims.py",
        "        if condition_failed(exc):\n            return ClaimResult.LOST, None\n        raise\n    return ClaimResult.CLAIMED, trigger_record(item)\n\n\ndef _slot_actions",
        "        return ClaimResult.LOST, None\n    return ClaimResult.CLAIMED, trigger_record(item)\n\n\ndef _slot_actions",
        focus="claim_that_raised",
    ),
    Mutation(
        "settle skipped when a workflow raises",
        "chalicelib/services/runner/core.py",
        "            if outcome.deferred:\n                status = defer(",
        '            if outcome.status == "failed" and outcome.error:\n                return outcome.status\n'
        "            if outcome.deferred:\n                status = defer(",
        focus="three_times_at_once",
    ),
    Mutation(
        "overlap check ignores the running run",
        "chalicelib/store/claims.py",
        '        & (t.status == "active")\n        & (size(t.in_flight) < capacity)\n        & t.in_flight[run_id].does_not_exist()\n    )\n    item = TriggerModel(trigger_id)',
        '        & (t.status == "active")\n        & t.in_flight[run_id].does_not_exist()\n    )\n    item = TriggerModel(trigger_id)',
        focus="skipped_and_runs_never_overlap",
    ),
    Mutation(
        "reaper takes a live lease",
        "chalicelib/services/heartbeat/reaper.py",
        "        if (lease > now_ms and not reap_all) or run_id == sparing:\n            continue",
        "        if run_id == sparing:\n            continue",
        focus="never_reaped_while_its_lease_is_live",
    ),
    Mutation(
        "event message dropped while its trigger has room",
        "chalicelib/services/events/run_start.py",
        "        head = message_for(queue[0])\n        if head is None:\n            return None\n        message = head",
        "        return None",
        focus="runs_the_queue_head",
    ),
    Mutation(
        "ingress sends every event a message (the flood)",
        "chalicelib/services/events/accept.py",
        "    return fresh is not None and len(triggers.in_flight_of(fresh)) >= capacity",
        "    return False",
        focus="one_message_per_run",
    ),
    Mutation(
        "a newer event's message runs its own event ahead of an older waiting one",
        "chalicelib/services/events/run_start.py",
        "    if queue and queue[0].id != message.event_id:",
        "    if False:",
        focus="oldest_waiting_event or arrival_order or runs_the_queue_head",
    ),
    Mutation(
        "a body too large for the hot event item stays inline",
        "chalicelib/services/events/accept.py",
        "    if record.body is None or item_bytes(record) > HOT_ITEM_BYTES:",
        "    if record.body is None:",
        focus="under_1_kb",
    ),
    Mutation(
        "a body that goes to S3 is never written (a stored event without its body)",
        "chalicelib/services/events/accept.py",
        "        s3.put_body(s3_key, body)\n",
        "        pass\n",
        focus="under_1_kb or 700_kb",
    ),
    Mutation(
        "a pull that still fails is swallowed",
        "chalicelib/services/events/pull.py",
        '    raise PullFailed(f"{len(pending)} pull message(s) for {trigger_id} could not be sent")',
        "    return 0",
        focus="pull_that_failed",
    ),
    Mutation(
        "a finish hook that keeps failing is swallowed",
        "chalicelib/services/pipeline.py",
        '            raise AfterSettleFailed("; ".join(failures))',
        "            return",
        focus="bookkeeping_that_keeps_failing",
    ),
    Mutation(
        "two ticks may enqueue the same window (cursor not fenced)",
        "chalicelib/store/cursors.py",
        '        arguments["ConditionExpression"] = "#c = :old"\n        values[":old"] = {"N": str(expected)}',
        '        arguments["ConditionExpression"] = "attribute_exists(id) OR #c = :old"\n        values[":old"] = {"N": str(expected)}',
        focus="concurrent_heartbeats_dispatch_each_slot_once",
    ),
    Mutation(
        "started_at read before the guards",
        "chalicelib/services/runner/core.py",
        "        started_at = self.clock()\n",
        "        started_at = ctx.now\n",
        focus="really_started_and_ended",
    ),
    Mutation(
        "a lost at trigger stays active",
        "chalicelib/services/heartbeat/reaper.py",
        "    if reason is not None and triggers.disable_trigger(fresh.id, reason=reason, now_ms=ms(now)):",
        '    if reason == "failures" and triggers.disable_trigger(fresh.id, reason=reason, now_ms=ms(now)):',
        focus="only_run_is_lost",
    ),
    Mutation(
        "first cursor write not fenced (two ticks send a shard's first window)",
        "chalicelib/store/cursors.py",
        '        arguments["ConditionExpression"] = "attribute_not_exists(#c)"',
        '        arguments["ConditionExpression"] = "attribute_not_exists(#c) OR attribute_exists(#c)"',
        focus="twenty_concurrent_heartbeats",
    ),
    Mutation(
        "a lowered shard count stops reading the old shards",
        "chalicelib/store/shard_registry.py",
        "        if found.in_use is not None and found.in_use >= current:\n            return found.in_use",
        "        if found.in_use is not None and found.in_use >= current:\n            return current",
        focus="lowered_shard_count",
    ),
    Mutation(
        "an old shard still holding a row is retired",
        "chalicelib/store/shard_registry.py",
        "    while target > current and (target - 1) in empty:",
        "    while target > current:",
        focus="old_shard_holding_a_row",
    ),
    Mutation(
        "a batch reports a failed message as succeeded (its fire is lost)",
        "chalicelib/fire_batch.py",
        "        if isinstance(outcome, BaseException):\n            raise outcome",
        '        if isinstance(outcome, BaseException):\n            return "failed"',
        focus="only_the_failing_message_is_reported",
    ),
    Mutation(
        "the cursor moves after the rows are read (a slot created meanwhile waits 120 s)",
        "chalicelib/services/heartbeat/shards.py",
        "        planned = self._take_window()\n        try:\n"
        "            reach = self._read(deadline=deadline, planned=planned)\n",
        "        planned = self.horizon_ms if self.cursor is None else max(self.cursor, self.horizon_ms)\n"
        "        try:\n            reach = self._read(deadline=deadline, planned=planned)\n"
        "            planned = self._take_window()\n",
        focus="created_while_a_tick_runs",
    ),
    Mutation(
        "a claim with room left does not reap the expired lease beside it",
        "chalicelib/services/runner/claim.py",
        "            reap_expired(item, now=now, pipeline=pipeline, sparing=message.run_id)\n"
        "            _record_passed(item, plan, now=now)\n",
        "            _record_passed(item, plan, now=now)\n",
        focus="room_left_reaps",
    ),
    Mutation(
        "an edit that keeps the next slot leaves the new schedule's later slots unsent",
        "chalicelib/services/triggers/patch.py",
        "    elif updated.sched != sched_before:\n",
        "    elif False:\n",
        focus="faster_schedule",
    ),
    Mutation(
        "a slot set inside the taken window sends only the next slot, not those after it",
        "chalicelib/services/heartbeat/slots.py",
        "    while following is not None and ms(following) <= cursor and len(slots) < MAX_SLOTS_PER_ROW:\n",
        "    while False:\n",
        focus="faster_schedule",
    ),
    Mutation(
        "LinkedIn's challenge answers any code (a signing oracle for notifications)",
        "chalicelib/domain/signatures/linkedin.py",
        "    if not keys or not is_challenge_code(code):\n",
        "    if not keys or not isinstance(code, str) or not code:\n",
        focus="forged_delivery or not_a_uuid",
    ),
    Mutation(
        "a delete is unfenced (every concurrent caller releases the quota and audits)",
        "chalicelib/store/removal.py",
        '    try:\n        answer = client("dynamodb").delete_item(\n'
        '            TableName=table,\n            Key={"id": {"S": stored.id}},\n'
        '            ConditionExpression="attribute_exists(#id)",\n',
        '    client("dynamodb").delete_item(TableName=table, Key={"id": {"S": stored.id}})\n'
        "    return item\n"
        '    try:\n        answer = client("dynamodb").delete_item(\n'
        '            TableName=table,\n            Key={"id": {"S": stored.id}},\n'
        '            ConditionExpression="attribute_exists(#id)",\n',
        focus="simultaneous_deletes",
    ),
    Mutation(
        "a run's start is not on its record (the runner's Outcome dropped at settle)",
        "chalicelib/services/runner/settle.py",
        "        started_at=outcome.started_ms if outcome.started_ms is not None else run.started_at,\n",
        "        started_at=run.started_at,\n",
        focus="really_started_and_ended",
    ),
    Mutation(
        "a rerun's record does not say so (the record keep_detail marks is dropped)",
        "chalicelib/services/runner/settle.py",
        "        run = keep_detail(\n",
        "        keep_detail(\n",
        focus="rerun",
    ),
    Mutation(
        "the reaper records a run lost over the record of its settle (the put not fenced)",
        "chalicelib/services/heartbeat/reaper.py",
        "    if not runs_store.put_run_if_in_flight(run, lease_ms=lease):\n"
        "        return False  # settled, or reaped by another, since the trigger was read\n",
        "    runs_store.put_run(run)\n",
        focus="settles_after_the_reapers_read",
    ),
    Mutation(
        "the local save rotates its journal after the dump (a write made during it is lost)",
        "devstack/embedded_aws.py",
        "    covered = journal.rotate() if journal is not None else None\n"
        "    snapshot = {\n"
        '        "saved_at": datetime.now(UTC).isoformat(),\n'
        '        "tables": dump_tables(prefix),\n'
        '        "objects": dump_objects(prefix),\n'
        "    }\n",
        "    snapshot = {\n"
        '        "saved_at": datetime.now(UTC).isoformat(),\n'
        '        "tables": dump_tables(prefix),\n'
        '        "objects": dump_objects(prefix),\n'
        "    }\n"
        "    covered = journal.rotate() if journal is not None else None\n",
        focus="writes_made_during_a_save",
    ),
    Mutation(
        "an Idempotency-Key is ignored (a retry with a rebuilt body runs twice)",
        "chalicelib/services/events/accept.py",
        "    idempotency = signatures.idempotency_key(headers)\n",
        "    idempotency = None\n",
        focus="idempotency",
    ),
    Mutation(
        "the Idempotency-Key's alias is put before its event, not with it (a replay takes the key)",
        "chalicelib/store/event_writes.py",
        '        client("dynamodb").transact_write_items(TransactItems=puts)\n',
        '        for put in reversed(puts):\n            client("dynamodb").put_item(**put["Put"])\n',
        focus="idempotency",
    ),
]
