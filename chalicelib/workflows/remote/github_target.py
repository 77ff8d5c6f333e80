"""``github:<owner>/<repo>/<workflow-file>@<ref>`` targets: a confirmed ``workflow_dispatch``.

GitHub Actions' own schedules run late or not at all under load; this dispatches the
workflow on cronhook's second and succeeds only once GitHub shows the run it created.

1. **Token.** ``GITHUB_TOKEN`` from the trigger's secrets (``fire.secrets``: the tenant's
   Parameter Store / Secrets Manager entries), a token that may dispatch workflows
   (``actions: write``). It is never logged, and masked wherever the run shows text.
2. **Dispatch.** ``POST /repos/{owner}/{repo}/actions/workflows/{file}/dispatches`` with
   ``{"ref": ref, "inputs": ...}``: the inputs are the trigger's payload when it is an object
   (each value sent as a string, as workflow_dispatch inputs are); otherwise none.
   A 4xx fails the run with GitHub's own message (a bad token, a workflow without
   ``workflow_dispatch``, an undeclared input...). A 5xx, or no answer, is retried
   (``DISPATCH_ATTEMPTS``, backing off); GitHub's dispatch has no idempotency key, so a
   5xx after GitHub did create the run can start it twice: the confirmation below then
   still names one run.
3. **Confirm.** GitHub answers 204 with no run id, so the run is looked for in
   ``GET .../workflows/{file}/runs?event=workflow_dispatch``: the newest run created since
   the dispatch (less ``CLOCK_SKEW_S``) on that branch. Found: the run succeeds with
   ``{"run_id", "html_url"}``. Not listed within ``CRONHOOK_GITHUB_CONFIRM_S`` (60 s):
   the run fails, saying the dispatch was accepted but no run appeared.

The API's base URL is ``CRONHOOK_GITHUB_API_URL`` (GitHub Enterprise Server; tests point
it at a local fake). Nothing here retries past the run: a failed run is retried by the
trigger's own policy, like any other.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode

from chalicelib.settings import get_settings
from chalicelib.workflows.model import Fire, WorkflowFailed

__all__ = [
    "GithubTarget",
    "parse_github_target",
    "check_github_target",
    "invoke_github",
    "TOKEN_SECRET",
    "DISPATCH_ATTEMPTS",
]

TOKEN_SECRET = "GITHUB_TOKEN"
DISPATCH_ATTEMPTS = 3
CLOCK_SKEW_S = 10  # GitHub's clock and ours: a run created "before" the dispatch by this much
HTTP_TIMEOUT_S = 15.0
API_VERSION = "2022-11-28"
USER_AGENT = "cronhook/1 (+https://github.com/cronhook)"
_TARGET = re.compile(
    r"(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))/(?P<repo>[A-Za-z0-9._-]{1,100})/"
    r"(?P<workflow>[A-Za-z0-9._-]{1,200}\.ya?ml|\d{1,20})@(?P<ref>[^\s~^:?*\[\\]{1,255})"
)


@dataclass(frozen=True)
class GithubTarget:
    owner: str
    repo: str
    workflow: str  # the file name (deploy.yml) or the workflow's numeric id
    ref: str

    def path(self, tail: str) -> str:
        parts = (self.owner, self.repo, self.workflow)
        owner, repo, workflow = (quote(p, safe="") for p in parts)
        return f"/repos/{owner}/{repo}/actions/workflows/{workflow}/{tail}"


def parse_github_target(spec: str) -> GithubTarget | None:
    """``owner/repo/workflow.yml@ref`` parsed, or None."""
    match = _TARGET.fullmatch(spec)
    if match is None or match["repo"] in (".", "..") or ".." in match["ref"]:
        return None
    return GithubTarget(match["owner"], match["repo"], match["workflow"], match["ref"])


def check_github_target(spec: str) -> str | None:
    """Why ``github:<spec>`` is not a target, or None."""
    if parse_github_target(spec) is None:
        return (
            "a github: target is github:<owner>/<repo>/<workflow file .yml or id>@<ref> "
            f"(got {spec!r})"
        )
    return None


class _Answer:
    def __init__(self, status: int, body: bytes):
        self.status = status
        self.body = body

    def json(self) -> Any:
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    def message(self) -> str:
        doc = self.json()
        if isinstance(doc, dict) and doc.get("message"):
            return str(doc["message"])
        return self.body[:300].decode("utf-8", "replace") or f"HTTP {self.status}"


def _call(method: str, path: str, *, token: str, body: dict | None = None) -> _Answer:
    request = urllib.request.Request(
        get_settings().github_api_url + path,
        method=method,
        data=None if body is None else json.dumps(body).encode("utf-8"),
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": USER_AGENT,
            **({"Content-Type": "application/json"} if body is not None else {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as answer:  # noqa: S310
            return _Answer(answer.status, answer.read(1024 * 1024))
    except urllib.error.HTTPError as exc:
        return _Answer(exc.code, exc.read(64 * 1024))


def _inputs(payload: object) -> dict[str, str] | None:
    if not isinstance(payload, dict) or not payload:
        return None
    return {
        str(k): v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
        for k, v in payload.items()
    }


def _token(fire: Fire) -> str:
    try:
        token = fire.secrets.get(TOKEN_SECRET)
    except Exception as exc:
        raise WorkflowFailed(
            f"github target: the trigger has no {TOKEN_SECRET} secret ({type(exc).__name__})"
        ) from None
    if not token:
        raise WorkflowFailed(f"github target: the {TOKEN_SECRET} secret is empty")
    return str(token)


def _dispatch(target: GithubTarget, token: str, payload: object) -> None:
    """POST the dispatch: return on 2xx; WorkflowFailed on 4xx, or 5xx after the retries."""
    body: dict = {"ref": target.ref}
    inputs = _inputs(payload)
    if inputs is not None:
        body["inputs"] = inputs
    what = f"github {target.owner}/{target.repo}/{target.workflow}"
    last = ""
    for attempt in range(DISPATCH_ATTEMPTS):
        if attempt:
            time.sleep(min(4.0, get_settings().github_poll_s * 2**attempt))
        try:
            answer = _call("POST", target.path("dispatches"), token=token, body=body)
        except OSError as exc:  # no answer at all: retried like a 5xx
            last = f"{type(exc).__name__}: {exc}"
            continue
        if 200 <= answer.status < 300:
            return
        if answer.status < 500:
            raise WorkflowFailed(
                f"{what}: GitHub refused the dispatch ({answer.status}): {answer.message()}"[:1000]
            )
        last = f"{answer.status}: {answer.message()}"
    raise WorkflowFailed(
        f"{what}: GitHub failed the dispatch {DISPATCH_ATTEMPTS} times (last {last})"[:1000]
    )


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _find_run(target: GithubTarget, token: str, *, since: datetime) -> dict | None:
    """The newest workflow_dispatch run on the ref created at or after ``since``, or None."""
    query = urlencode({"event": "workflow_dispatch", "created": f">={_iso(since)}", "per_page": 20})
    answer = _call("GET", target.path(f"runs?{query}"), token=token)
    if answer.status >= 400:
        if answer.status < 500 and answer.status != 429:
            raise WorkflowFailed(
                f"github: the dispatch was accepted, but listing its runs was refused "
                f"({answer.status}): {answer.message()}"[:1000]
            )
        return None  # a 5xx while looking: look again
    doc = answer.json()
    runs = doc.get("workflow_runs") if isinstance(doc, dict) else None
    found = []
    for run in runs if isinstance(runs, list) else []:
        if (
            not isinstance(run, dict)
            or run.get("event", "workflow_dispatch") != "workflow_dispatch"
        ):
            continue
        created = str(run.get("created_at") or "")
        if created < _iso(since):
            continue
        branch = run.get("head_branch")
        if branch is not None and branch != target.ref.removeprefix("refs/heads/"):
            continue
        found.append(run)
    return max(found, key=lambda r: str(r.get("created_at"))) if found else None


def invoke_github(spec: str, fire: Fire) -> dict:
    """Dispatch the workflow and wait until GitHub lists the run; the run's answer."""
    target = parse_github_target(spec)
    if target is None:
        raise WorkflowFailed(f"github target refused: {check_github_target(spec)}"[:1000])
    token = _token(fire)
    settings = get_settings()
    since = datetime.now(UTC) - timedelta(seconds=CLOCK_SKEW_S)
    _dispatch(target, token, fire.payload)
    deadline = time.monotonic() + settings.github_confirm_s
    while True:
        try:
            run = _find_run(target, token, since=since)
        except OSError:
            run = None
        if run is not None:
            return {"output": {"run_id": run.get("id"), "html_url": run.get("html_url")}}
        if time.monotonic() >= deadline:
            raise WorkflowFailed(
                f"github {target.owner}/{target.repo}/{target.workflow}@{target.ref}: GitHub "
                f"accepted the dispatch but listed no run for it within "
                f"{settings.github_confirm_s:g} s"
            )
        time.sleep(settings.github_poll_s)
