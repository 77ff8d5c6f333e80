"""A protected stage's first create: the tables are created without deletion protection (so
a failed create can roll them back) and the deploy turns it on once the stack exists.

Its own moto server: the packaged template deployed as the stack of a protected stage.
"""

from __future__ import annotations

from infra.deploy import DeployOptions, deploy
from infra.template import PROTECTED_STAGES
from tests.infra.conftest import adapt_for_moto
from tests.infra.harness import MotoProcess


def test_deletion_protection_goes_on_after_the_first_create(packaged, capsys):
    stage = PROTECTED_STAGES[0]
    moto = MotoProcess().start()
    try:
        deploy(
            DeployOptions(
                stage=stage,
                region="us-east-1",
                endpoint_url=moto.url,
                expand_sam=True,
                adapt=lambda t: adapt_for_moto(t, {}),
                create_root_key=True,
                build_dir=packaged.dir,
                poll_s=0.05,
                interactive=False,
            )
        )
        import boto3

        cfn = boto3.client("cloudformation", region_name="us-east-1", endpoint_url=moto.url)
        (stack,) = cfn.describe_stacks(StackName=f"cronhook-{stage}")["Stacks"]
        params = {p["ParameterKey"]: p["ParameterValue"] for p in stack["Parameters"]}
        assert params["TableDeletionProtection"] == "true"
        assert stack["StackStatus"] == "UPDATE_COMPLETE"  # created, then protected
        out = capsys.readouterr().out
        assert "(CREATE)" in out and "(UPDATE)" in out
        assert out.index("(CREATE)") < out.index("turning on the tables' deletion protection")
    finally:
        moto.stop()
