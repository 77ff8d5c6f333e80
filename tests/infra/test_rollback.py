"""``make rollback STAGE=``: the release before the current one, redeployed from the bucket.

(After test_redeploy on purpose: it changes the stack the other tests read.) Two new
releases are deployed into the moto stack, each with its own code (a zip that differs)
and template; the rollback must put the functions back on the previous release's code.
"""

from __future__ import annotations

import json
import shutil
import zipfile

import pytest

from infra.deploy import KEEP_RELEASES, DeployOptions, deploy, rollback
from tests.infra.conftest import STAGE, adapt_for_moto


def _release_dir(packaged, tmp_path, name: str):
    """A copy of the packaged build whose zip and template differ (a new release)."""
    out = tmp_path / name
    shutil.copytree(packaged.dir, out)
    with zipfile.ZipFile(out / "deployment.zip", "a") as z:
        z.writestr("RELEASE", name)
    template = json.loads((out / "sam.json").read_text())
    template["Description"] += f" Release {name}."
    (out / "sam.json").write_text(json.dumps(template))
    return out


def _options(deployed, build_dir) -> DeployOptions:
    return DeployOptions(
        stage=STAGE,
        region="us-east-1",
        endpoint_url=deployed.endpoint,
        expand_sam=True,
        adapt=lambda t: adapt_for_moto(t, {}),
        build_dir=build_dir,
        poll_s=0.05,
        interactive=False,
    )


def _manifest(deployed) -> list[dict]:
    s3 = deployed.client("s3")
    bucket = "cronhook-artifacts-123456789012-us-east-1"
    body = s3.get_object(Bucket=bucket, Key=f"cronhook/{STAGE}/releases.json")["Body"].read()
    return json.loads(body)["releases"]


def _deployed_code_key(deployed) -> str:
    """The S3 key the stack's functions load their code from (the deployed template)."""
    cfn = deployed.client("cloudformation")
    body = cfn.get_template(StackName=deployed.stack_name)["TemplateBody"]
    template = body if isinstance(body, dict) else json.loads(body)
    keys = {
        r["Properties"]["Code"]["S3Key"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    }
    (key,) = keys
    return key


def test_rollback_redeploys_the_previous_release_and_the_deploy_keeps_the_last_few(
    deployed, packaged, tmp_path
):
    first = _deployed_code_key(deployed)
    deploy(_options(deployed, _release_dir(packaged, tmp_path, "b")))
    second = _deployed_code_key(deployed)
    assert second != first
    releases = _manifest(deployed)
    assert [r["code_key"] for r in releases][-2:] == [first, second]

    done = rollback(_options(deployed, packaged.dir))
    assert done["code_key"] == first and done["kind"] == "rollback"
    assert _deployed_code_key(deployed) == first
    (stack,) = deployed.client("cloudformation").describe_stacks(StackName=deployed.stack_name)[
        "Stacks"
    ]
    assert stack["StackStatus"] == "UPDATE_COMPLETE"
    # The rolled-back-from release is not "good": a second rollback does not go back to it.
    assert _manifest(deployed)[-1]["rolled_back_from"] == releases[-1]["template_key"]

    # The deploy keeps the last KEEP_RELEASES releases and deletes older artifacts.
    for n in range(KEEP_RELEASES + 1):
        deploy(_options(deployed, _release_dir(packaged, tmp_path, f"r{n}")))
    kept = _manifest(deployed)
    assert len(kept) == KEEP_RELEASES
    s3 = deployed.client("s3")
    listed = s3.list_objects_v2(
        Bucket="cronhook-artifacts-123456789012-us-east-1", Prefix=f"cronhook/{STAGE}/"
    )
    stored = {o["Key"] for o in listed["Contents"]}
    wanted = {r[k] for r in kept for k in ("code_key", "template_key")}
    assert stored == wanted | {f"cronhook/{STAGE}/releases.json"}
    assert first not in stored  # pruned with its release


def test_rollback_refuses_when_there_is_no_stack(deployed, packaged):
    options = _options(deployed, packaged.dir)
    options.stack_name = "cronhook-nothing-here"
    with pytest.raises(SystemExit) as stopped:
        rollback(options)
    assert "does not exist" in str(stopped.value)
