"""The HTTP side of the command: one client of the public REST API, errors for people."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import click
import requests

__all__ = ["DEFAULT_TIMEOUT_S", "DEFAULT_URL", "ApiError", "Client"]

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT_S = 30.0

_ERRNO_RE = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")
_NOT_JSON = object()


class ApiError(click.ClickException):
    """The API refused the request or could not be reached: exit 1, message on stderr."""

    exit_code = 1


class Client:
    """Calls the cronhook REST API; every failure becomes an ``ApiError`` for people."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        session: requests.Session | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.session = session or requests.Session()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
    ) -> Any:
        """Send one request; return the decoded JSON answer (``None`` for an empty one)."""
        headers = {"Accept": "application/json", "User-Agent": "cronhook-cli"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        query = {k: v for k, v in (params or {}).items() if v is not None and v != ""}
        try:
            response = self.session.request(
                method,
                self.base_url + path,
                params=query,
                json=body,
                headers=headers,
                timeout=self.timeout_s,
            )
        except requests.Timeout as exc:
            raise ApiError(
                f"cronhook at {self.base_url} did not answer within {self.timeout_s:g} s"
            ) from exc
        except requests.RequestException as exc:
            raise ApiError(self._unreachable(exc)) from exc

        data: Any = None
        if response.content:
            try:
                data = response.json()
            except ValueError:
                data = _NOT_JSON
        if response.status_code >= 400:
            raise ApiError(self._refusal(response, data))
        if data is _NOT_JSON:
            raise ApiError(
                f"unexpected answer from {self.base_url}{path}: "
                f"HTTP {response.status_code} is not JSON (is this a cronhook URL?)"
            )
        return data

    def pages(
        self,
        path: str,
        params: dict[str, Any],
        *,
        limit: int | None = None,
        keep: Callable[[dict], bool] | None = None,
    ) -> tuple[list[dict], str | None]:
        """Follow ``next_cursor`` until the end or ``limit`` kept items; return them and cursor."""
        items: list[dict] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = self.request("GET", path, params={**params, "cursor": cursor})
            if not isinstance(page, dict):
                raise ApiError(f"unexpected answer from {self.base_url}{path}: not a page")
            items.extend(item for item in page.get("items") or [] if keep is None or keep(item))
            cursor = page.get("next_cursor")
            if limit is not None and len(items) >= limit:
                return items[:limit], cursor
            if not cursor:
                return items, None
            # A server that hands back a cursor it already gave would loop us forever.
            if cursor in seen:
                raise ApiError(f"{self.base_url}{path} repeated page cursor {cursor!r}")
            seen.add(cursor)

    def _unreachable(self, exc: requests.RequestException) -> str:
        # requests nests urllib3's reason several levels deep; the errno text is the part
        # a person can act on ("Connection refused", "Name or service not known").
        found = _ERRNO_RE.search(str(exc))
        reason = found.group(1).strip() if found else type(exc).__name__
        message = f"cannot reach cronhook at {self.base_url}: {reason}"
        if urlsplit(self.base_url).hostname in ("127.0.0.1", "localhost", "::1"):
            message += " (is the local stack running? start it with `make run`)"
        return message

    def _refusal(self, response: requests.Response, data: Any) -> str:
        error = data.get("error") if isinstance(data, dict) else None
        status = response.status_code
        if isinstance(error, dict) and error.get("message"):
            code = error.get("code")
            message = f"{status}{' ' + str(code) if code else ''}: {error['message']}"
            if error.get("field"):
                message += f" (field: {error['field']})"
        else:
            snippet = response.text.strip().replace("\n", " ")[:200]
            message = f"{status} {response.reason or ''}".rstrip()
            if snippet:
                message += f": {snippet}"
        if status == 401:
            if self.api_key:
                message += " - check CRONHOOK_API_KEY or --api-key"
            else:
                message += " - no API key given: set CRONHOOK_API_KEY or pass --api-key"
        return message
