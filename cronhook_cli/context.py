"""What every command shares: the client in the context, the global options, usage errors.

The group's options (``--url``, ``--api-key``, ``--timeout``, ``-o``) are accepted after the
subcommand too: each command takes them again, and their callbacks change the one client
the group built (or the root context's output choice).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

import click

from cronhook_cli.client import Client
from cronhook_cli.output import OUTPUT_META_KEY, OUTPUTS, emit, say
from cronhook_cli.parsing import check_url

__all__ = [
    "OUTPUT_HELP",
    "Decorator",
    "client_of",
    "command",
    "delete",
    "global_options",
    "id_path",
    "stack",
    "trigger_path",
    "usage",
]

OUTPUT_HELP = "Output: table (for people), json or yaml (for programs)."

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]
Setter = Callable[[click.Context, click.Parameter, Any], Any]


def stack(*decorators: Decorator) -> Decorator:
    """Apply ``decorators`` as if written one above the other, the first on top."""

    def apply(func: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return apply


def client_of(ctx: click.Context) -> Client:
    """The client the ``cli`` group built for this command line."""
    client = ctx.find_object(Client)
    assert client is not None, "the cli group callback builds the client"
    return client


def usage(message: str) -> NoReturn:
    """Stop with exit 2 and ``message``, before anything is sent."""
    raise click.UsageError(message)


def id_path(kind: str, value: str, prefix: str, action: str = "") -> str:
    """``prefix/value[action]``; an empty id or one with a slash is a usage error."""
    if not value.strip() or "/" in value:
        usage(f"{value!r} is not {kind}")
    return f"{prefix}/{value}{action}"


def trigger_path(trigger_id: str, action: str = "") -> str:
    """The path of one trigger, or of one of its actions (``/fire``, ``/runs``...)."""
    return id_path("a trigger id", trigger_id, "/v1/triggers", action)


def _client_setter(attr: str, convert: Setter) -> Setter:
    def set_on_client(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None:
            setattr(client_of(ctx), attr, convert(ctx, param, value))
        return value

    return set_on_client


def _set_output(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if value is not None:
        ctx.find_root().meta[OUTPUT_META_KEY] = value
    return value


# The group's options, accepted after the subcommand too (``cronhook runs --url ...``).
global_options = stack(
    click.option("--json", "as_json", is_flag=True, help="Print the raw JSON answer."),
    click.option(
        "-o",
        "--output",
        type=click.Choice(OUTPUTS),
        callback=_set_output,
        expose_value=False,
        help=OUTPUT_HELP,
    ),
    click.option(
        "--url",
        callback=_client_setter("base_url", check_url),
        expose_value=False,
        help="Base URL of the cronhook API.",
    ),
    click.option(
        "--api-key",
        callback=_client_setter("api_key", lambda ctx, param, value: value or None),
        expose_value=False,
        help="API key (Bearer).",
    ),
    click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        callback=_client_setter("timeout_s", lambda ctx, param, value: value),
        expose_value=False,
        help="Seconds to wait for each answer.",
    ),
)


def command(
    name: str, *params: Decorator, group: click.Group | None = None, **attrs: Any
) -> Callable[[Callable[..., Any]], click.Command]:
    """A command (of ``group``) taking ``params``, then the global options, and the context."""
    register = group.command(name, **attrs) if group is not None else click.command(name, **attrs)
    prepare = stack(*params, global_options, click.pass_context)
    return lambda func: register(prepare(func))


def delete(ctx: click.Context, path: str, deleted_id: str, *, as_json: bool) -> None:
    """Send DELETE and confirm it; programs still get one document to parse."""
    client_of(ctx).request("DELETE", path)
    # The API answers 204 with no body.
    emit(ctx, {"id": deleted_id, "deleted": True}, as_json, lambda: say(f"Deleted {deleted_id}"))
