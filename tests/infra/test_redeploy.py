"""``make deploy`` again: an update in place that keeps the parameters it was not given.

(Last in this package on purpose: it changes the stack the other tests read.)
"""

from __future__ import annotations

import pytest

from infra.deploy import DeployOptions, deploy
from tests.infra.conftest import STAGE, adapt_for_moto


def test_a_second_deploy_updates_the_stack_and_keeps_earlier_parameters(deployed, packaged):
    cfn = deployed.client("cloudformation")

    def parameters() -> dict[str, str]:
        (stack,) = cfn.describe_stacks(StackName=deployed.stack_name)["Stacks"]
        return {p["ParameterKey"]: p["ParameterValue"] for p in stack["Parameters"]}

    def again(**params: str) -> None:
        deploy(
            DeployOptions(
                stage=STAGE,
                region="us-east-1",
                endpoint_url=deployed.endpoint,
                expand_sam=True,
                adapt=lambda t: adapt_for_moto(t, {}),
                build_dir=packaged.dir,
                parameters=params,
                poll_s=0.05,
            )
        )

    # An operator turned firing off in an incident: no deploy may turn it back on.
    ssm = deployed.client("ssm")
    switch = deployed.outputs["SwitchParameterName"]
    ssm.put_parameter(Name=switch, Value="off", Type="String", Overwrite=True)
    again(AlarmEmail="ops@example.com", LogRetentionDays="90")
    assert ssm.get_parameter(Name=switch)["Parameter"]["Value"] == "off"
    ssm.put_parameter(Name=switch, Value="on", Type="String", Overwrite=True)
    (stack,) = cfn.describe_stacks(StackName=deployed.stack_name)["Stacks"]
    assert stack["StackStatus"] == "UPDATE_COMPLETE"
    assert parameters()["AlarmEmail"] == "ops@example.com"
    again(LogRetentionDays="30")  # AlarmEmail not given: the deployed value stays
    assert parameters()["AlarmEmail"] == "ops@example.com"
    assert parameters()["LogRetentionDays"] == "30"
    # The update left the data where it was.
    tables = deployed.client("dynamodb").list_tables()["TableNames"]
    assert "cronhook-dev-triggers" in tables


def test_deploy_stops_before_touching_the_stack_when_the_root_key_is_missing(deployed, packaged):
    options = DeployOptions(
        stage=STAGE,
        region="us-east-1",
        endpoint_url=deployed.endpoint,
        build_dir=packaged.dir,
        parameters={"RootKeyParameterName": "/cronhook/dev/no-such-key"},
    )
    with pytest.raises(SystemExit) as stopped:
        deploy(options)
    assert "aws ssm put-parameter --type SecureString --name /cronhook/dev/no-such-key" in str(
        stopped.value
    )
