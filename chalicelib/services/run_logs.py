"""``GET /v1/runs/{id}/logs``: the log lines about one run.

Every line the engine writes about a run carries its ``run_id`` (``observability``).

- Locally the stack and its runners also write their lines to a file in the data dir
  (``CRONHOOK_LOG_FILE``, set by the stack): its tail is read and filtered on the run id.
- In AWS the lines are in CloudWatch Logs (the API's and the runner's log groups): a Logs
  Insights query on ``run_id``, waited for a few seconds, with a link that opens the same
  query in the AWS console (a query still running answers what it has, and the link).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from botocore.exceptions import BotoCoreError, ClientError

from chalicelib.domain.errors import NotFound
from chalicelib.observability import logger
from chalicelib.services.auth import Principal
from chalicelib.services.run_pages import get_run_page, owned_trigger_of_run
from chalicelib.settings import get_settings

__all__ = [
    "MAX_LINES",
    "TAIL_BYTES",
    "run_logs",
    "lines_of_run",
    "insights_query",
    "insights_console_url",
]

MAX_LINES = 500
# How much of the local log's end is read (a busy stack writes ~400 B a fire).
TAIL_BYTES = 16 * 1024 * 1024
# How long the API waits for a Logs Insights query (API Gateway answers within 29 s).
QUERY_WAIT_S = 8.0
# The keys every line has; the others are shown after the message, as key=value.
_BASE_KEYS = {"level", "location", "message", "timestamp", "service", "xray_trace_id"}


def _iso(stamp: Any) -> str | None:
    """Powertools' ``2026-12-04 16:51:43,931+0000`` (or an ISO string) as ISO UTC ``Z``."""
    if not isinstance(stamp, str):
        return None
    text = stamp.replace(",", ".")
    try:
        at = datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f%z")
    except ValueError:
        try:
            at = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
    at = at.astimezone(UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def _line(record: dict) -> dict:
    extras = " ".join(
        f"{k}={v}" for k, v in record.items() if k not in _BASE_KEYS and k != "run_id"
    )
    message = str(record.get("message", ""))
    return {
        "at": _iso(record.get("timestamp")),
        "level": str(record.get("level", "INFO")),
        "message": f"{message} {extras}".strip(),
    }


def lines_of_run(lines: Iterable[str], run_id: str) -> list[dict]:
    """The JSON log lines about ``run_id`` (oldest first, at most ``MAX_LINES``: the last)."""
    found: list[dict] = []
    for raw in lines:
        if run_id not in raw:
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("run_id") == run_id:
            found.append(_line(record))
    return found[-MAX_LINES:]


def _tail(path: Path) -> list[str]:
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - TAIL_BYTES))
            data = handle.read()
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()


def insights_query(run_id: str) -> str:
    """The Logs Insights query for one run's lines."""
    quoted = json.dumps(run_id)
    return (
        "fields @timestamp, level, message, @message"
        f" | filter run_id = {quoted}"
        f" | sort @timestamp asc | limit {MAX_LINES}"
    )


def _console_escape(text: str) -> str:
    # The console's hash takes URL-encoded values with ``%`` written as ``*``.
    return quote(text, safe="").replace("%", "*")


def insights_console_url(
    *, region: str, groups: list[str], query: str, start: datetime, end: datetime
) -> str:
    """A link that opens ``query`` over ``groups`` in the CloudWatch console."""
    sources = "".join(f"~'{_console_escape(g)}" for g in groups)
    stamp = "%Y-%m-%dT%H:%M:%S.000Z"
    detail = (
        f"~(end~'{_console_escape(end.strftime(stamp))}"
        f"~start~'{_console_escape(start.strftime(stamp))}"
        f"~timeType~'ABSOLUTE~tz~'UTC~editorString~'{_console_escape(query)}"
        f"~source~({sources}))"
    )
    return (
        f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}"
        f"#logsV2:logs-insights$3FqueryDetail$3D{detail}"
    )


def _log_groups(stage: str) -> list[str]:
    return [f"/aws/lambda/cronhook-{stage}-runner", f"/aws/lambda/cronhook-{stage}-api"]


def _query_cloudwatch(
    run_id: str, *, start: datetime, end: datetime, sleep: Callable[[float], None]
) -> dict:
    settings = get_settings()
    groups = _log_groups(settings.stage)
    query = insights_query(run_id)
    link = insights_console_url(
        region=settings.region, groups=groups, query=query, start=start, end=end
    )
    try:
        answer = _run_query(groups, query, start=start, end=end, sleep=sleep)
    except (ClientError, BotoCoreError) as exc:
        # Not allowed (a role without Logs Insights: infra/iam.py grants it), or no such
        # group yet (no run logged):
        # the link still opens the query with the caller's own console session.
        logger.info("run logs query failed", extra={"run_id": run_id, "why": str(exc)[:200]})
        return {
            "items": [],
            "source": "cloudwatch",
            "complete": False,
            "query": query,
            "console_url": link,
        }
    items = []
    for row in answer.get("results", []):
        fields = {f.get("field"): f.get("value") for f in row}
        try:
            record = json.loads(fields.get("@message") or "{}")
        except ValueError:
            record = {"message": fields.get("@message")}
        items.append(_line(record if isinstance(record, dict) else {"message": record}))
    return {
        "items": items,
        "source": "cloudwatch",
        "complete": answer.get("status") == "Complete",
        "query": query,
        "console_url": link,
    }


def _run_query(
    groups: list[str], query: str, *, start: datetime, end: datetime, sleep: Callable[[float], None]
) -> dict:
    """Start the Logs Insights query and wait for it a few seconds; its last answer."""
    from chalicelib.store.aws import client

    logs = client("logs")
    started = logs.start_query(
        logGroupNames=groups,
        startTime=int(start.timestamp()),
        endTime=math.ceil(end.timestamp()),  # whole seconds: rounded up, the last line in
        queryString=query,
        limit=MAX_LINES,
    )
    deadline = time.monotonic() + QUERY_WAIT_S
    answer: dict = {"status": "Running", "results": []}
    while time.monotonic() < deadline:
        answer = logs.get_query_results(queryId=started["queryId"])
        if answer.get("status") not in ("Scheduled", "Running"):
            break
        sleep(0.5)
    return answer


def run_logs(
    principal: Principal,
    run_id: str,
    *,
    now: datetime,
    sleep: Callable[[float], None] = time.sleep,
) -> dict:
    """The run's log lines: ``{items: [{at, level, message}], source, ...}``."""
    if owned_trigger_of_run(principal, run_id) is None:  # 404 for another tenant's run
        raise NotFound(f"run {run_id!r} not found")
    settings = get_settings()
    if settings.log_file or settings.stage in ("local", "test"):
        lines = _tail(Path(settings.log_file)) if settings.log_file else []
        return {"items": lines_of_run(lines, run_id), "source": "local", "complete": True}
    page = get_run_page(principal, run_id)
    began = page.get("scheduled_for") or page.get("started_at")
    start = datetime.fromisoformat(began.replace("Z", "+00:00")) if began else now
    return _query_cloudwatch(
        run_id,
        start=min(start, now) - timedelta(hours=1),
        end=now,
        sleep=sleep,
    )
