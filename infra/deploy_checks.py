"""Before the change set: the parameters the stack needs in SSM (the root key, the switch),
the parameters given (known ones only; a protected stage's first create without deletion
protection), the account's Lambda concurrency, the region's API Gateway log role, and
somebody to tell when an alarm fires."""

from __future__ import annotations

import secrets
from typing import Any

from infra.deploy_options import DeployOptions, _ask, _Aws, _interactive, _loud, _say
from infra.stage import PROTECTED_STAGES

__all__ = ["MIN_UNRESERVED", "RESERVATIONS", "check_concurrency"]

# AWS keeps this much of the account's concurrency unreserved (or all of it when the
# account's quota is lower: new accounts often have 10, and can then reserve nothing).
MIN_UNRESERVED = 100
RESERVATIONS = {"HeartbeatReservedConcurrency": "heartbeat", "RunnerReservedConcurrency": "runner"}


def _ensure_parameters(aws: _Aws, template: dict, options: DeployOptions) -> None:
    """The root key exists (or is made, ``--create-root-key``); the switch exists."""
    _check_root_key(aws, _root_key_param(template, options), create=options.create_root_key)
    if "SwitchParameter" in template.get("Parameters", {}):
        switch = options.parameters.get(
            "SwitchParameter", template["Parameters"]["SwitchParameter"]["Default"]
        )
        _ensure_switch(aws, switch)


def _check_parameters(options: DeployOptions, declared: dict, change_type: str) -> bool:
    """Refuse unknown parameters. Returns whether the tables' deletion protection is to be
    turned on after the create (then this create goes without it)."""
    unknown = set(options.parameters) - set(declared)
    if unknown:
        raise SystemExit(f"unknown parameter(s): {', '.join(sorted(unknown))}")
    protect_later = (
        change_type == "CREATE"
        and options.stage in PROTECTED_STAGES
        and "TableDeletionProtection" in declared
        and "TableDeletionProtection" not in options.parameters
    )
    if protect_later:
        # Deletion protection would stop a failed first create from rolling back its tables.
        options.parameters["TableDeletionProtection"] = "false"
    return protect_later


def _stack_parameters(
    declared: dict, given: dict[str, str], previous: dict[str, str]
) -> list[dict]:
    """Each declared parameter: as given, else as deployed (none: the template's default)."""
    parameters = []
    for key in declared:
        if key in given:
            parameters.append({"ParameterKey": key, "ParameterValue": given[key]})
        elif key in previous:  # as `aws cloudformation deploy`: keep what was deployed
            parameters.append({"ParameterKey": key, "UsePreviousValue": True})
    return parameters


def _root_key_param(template: dict, options: DeployOptions) -> str:
    return options.parameters.get(
        "RootKeyParameterName", template["Parameters"]["RootKeyParameterName"]["Default"]
    )


def _check_root_key(aws: _Aws, name: str, *, create: bool) -> None:
    ssm = aws.client("ssm")
    found = ssm.describe_parameters(ParameterFilters=[{"Key": "Name", "Values": [name]}])
    if found.get("Parameters"):
        return
    if not create:
        raise SystemExit(
            f"the root key parameter {name} does not exist. Create it once (CloudFormation "
            "cannot make a SecureString):\n"
            f"  aws ssm put-parameter --type SecureString --name {name} "
            '--value "chr_$(openssl rand -hex 24)"\n'
            "or rerun with --create-root-key (docs/deploy.md)."
        )
    key = "chr_" + secrets.token_urlsafe(24)
    ssm.put_parameter(
        Name=name, Type="SecureString", Value=key, Description="cronhook root API key"
    )
    _say(f"created the root key in {name}; it is shown once:\n  {key}")


def _ensure_switch(aws: _Aws, name: str) -> None:
    """Create the on/off switch (``on``) if missing; an existing value is never touched."""
    from botocore.exceptions import ClientError

    ssm = aws.client("ssm")
    try:
        ssm.put_parameter(
            Name=name,
            Type="String",
            Value="on",
            Overwrite=False,
            Description="cronhook on/off switch: 'off' stops all firing (docs/runbook.md).",
        )
        _say(f"created the switch {name} = on")
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ParameterAlreadyExists":
            raise
        value = ssm.get_parameter(Name=name)["Parameter"]["Value"]
        if value.strip().lower() in ("off", "false", "0", "disabled"):
            _loud([f"the switch {name} is '{value}': nothing fires; this deploy leaves it so."])


def check_concurrency(lam: Any, wanted: dict[str, int], current: dict[str, int]) -> None:
    """Refuse, before any change set, reservations the account's Lambda quota cannot hold.

    ``wanted``: function -> reserved concurrency asked for (0: none); ``current``: what
    those functions reserve now (an update gives it back before taking the new one).
    AWS keeps ``min(100, quota)`` of the account unreserved.
    """
    settings = lam.get_account_settings()
    quota = int(settings["AccountLimit"]["ConcurrentExecutions"])
    unreserved = int(settings["AccountLimit"]["UnreservedConcurrentExecutions"])
    floor = min(MIN_UNRESERVED, quota)
    extra = sum(wanted.values()) - sum(current.get(f, 0) for f in wanted)
    room = unreserved - floor
    if extra <= room:
        return
    asked = ", ".join(f"{f} {n}" for f, n in wanted.items() if n)
    raise SystemExit(
        f"this account's Lambda concurrency cannot hold the reservations asked for ({asked}):"
        f" its quota is {quota} concurrent executions, {unreserved} unreserved, and AWS keeps "
        f"at least {floor} unreserved, so at most {max(room, 0)} more can be reserved.\n"
        "Either deploy without reservations (the heartbeat may then overlap itself, which "
        "is safe: every claim is a conditional write; the runner stays bounded by the queue "
        "mapping's MaximumConcurrency):\n"
        "  --param HeartbeatReservedConcurrency=0 --param RunnerReservedConcurrency=0\n"
        "or ask for a higher quota (Service Quotas > AWS Lambda > Concurrent executions, "
        "code L-B99A9384) and deploy again."
    )


def _reserved_now(lam: Any, names: dict[str, str]) -> dict[str, int]:
    out = {}
    for function, name in names.items():
        try:
            found = lam.get_function_concurrency(FunctionName=name)
        except Exception:  # noqa: BLE001 - no such function yet: nothing reserved
            continue
        out[function] = int(found.get("ReservedConcurrentExecutions") or 0)
    return out


def _effective(key: str, declared: dict, given: dict[str, str], previous: dict[str, str]) -> str:
    if key in given:
        return given[key]
    if key in previous:
        return previous[key]
    return str(declared.get(key, {}).get("Default", ""))


def _preflight(
    aws: _Aws, options: DeployOptions, declared: dict, previous: dict[str, str], creating: bool
) -> None:
    """Checks and questions before the change set; may add to ``options.parameters``."""
    from botocore.exceptions import BotoCoreError, ClientError

    params = options.parameters
    # Reserved concurrency against the account's quota.
    if set(RESERVATIONS) <= set(declared):
        wanted = {
            f: int(_effective(k, declared, params, previous)) for k, f in RESERVATIONS.items()
        }
        runner = wanted["runner"]
        ceiling = int(declared["RunnerReservedConcurrency"]["Default"])
        if 0 < runner < ceiling:
            raise SystemExit(
                f"RunnerReservedConcurrency={runner} is below the job ceiling ({ceiling}, the "
                "queue mapping's MaximumConcurrency): Lambda's poller would throttle messages "
                "into the dead-letter queue. Use 0 (no reservation) or at least the ceiling."
            )
        lam = aws.client("lambda")
        names = {f: f"cronhook-{options.stage}-{f}" for f in RESERVATIONS.values()}
        try:
            check_concurrency(lam, wanted, _reserved_now(lam, names))
        except (BotoCoreError, ClientError) as exc:
            _say(f"warning: could not read the account's Lambda concurrency ({exc}); going on")
    # Access logs need the region's API Gateway CloudWatch role.
    key = "ConfigureApiGatewayAccount"
    if key in declared and key not in params and (creating or key not in previous):
        try:
            role = aws.client("apigateway").get_account().get("cloudwatchRoleArn")
        except (BotoCoreError, ClientError) as exc:
            role = "unknown"
            _say(f"warning: could not read API Gateway's account settings ({exc})")
        if not role:
            params[key] = "true"
            _loud(
                [
                    f"{aws.region} has no API Gateway CloudWatch role (access logs need one):",
                    f"this stack ({options.stack_name}) sets it: ConfigureApiGatewayAccount=true.",
                    "Other stages deploy with the default (false). Delete this stage last,",
                    "or their access logs stop (docs/deploy.md, 'API Gateway logging').",
                ]
            )
    # Somebody must be told when an alarm fires.
    if "AlarmEmail" in declared and not _effective("AlarmEmail", declared, params, previous):
        if _interactive(options):
            email = _ask(options, "email address for alarms (empty: nobody is told): ").strip()
            if email:
                params["AlarmEmail"] = email
                _say(f"alarms go to {email}: confirm the subscription in the email AWS sends")
                return
        _loud(
            [
                "NO ALARM EMAIL: alarms fire into an SNS topic that nobody is subscribed to.",
                "Nobody will be told when runs are lost, the heartbeat stops or the DLQ fills.",
                f'Fix: make deploy STAGE={options.stage} DEPLOY_ARGS="--param '
                'AlarmEmail=ops@example.com"',
            ]
        )
