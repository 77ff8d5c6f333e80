"""The artifact bucket: the code and the template of every release, content-addressed under
``cronhook/<stage>/``, and ``releases.json``, the last ``KEEP_RELEASES`` (``--rollback``
redeploys one of them)."""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

from infra.deploy_options import DeployOptions, _Aws, _say

__all__ = ["KEEP_RELEASES", "point_code_at", "expand_sam"]

KEEP_RELEASES = 5  # releases (code + template) kept in the artifact bucket for rollback


def _packaged(options: DeployOptions) -> tuple[dict, Path]:
    """``build/<stage>/``'s template and the path of its code (``make package`` made them)."""
    assert options.build_dir is not None
    template_path = options.build_dir / "sam.json"
    zip_path = options.build_dir / "deployment.zip"
    if not template_path.exists() or not zip_path.exists():
        raise SystemExit(
            f"{template_path} not found: run `make package STAGE={options.stage}` first"
        )
    template = json.loads(template_path.read_text())
    return template, zip_path


def _upload_release(
    aws: _Aws, options: DeployOptions, bucket: str, template: dict, zip_path: Path
) -> tuple[dict, dict[str, str]]:
    """Upload the code, point the template at it, upload the template. Returns the
    template as deployed and where the release is (``code_key``, ``code_sha256``,
    ``template_key``)."""
    code = zip_path.read_bytes()
    code_sha = hashlib.sha256(code).hexdigest()
    code_key = f"cronhook/{options.stage}/{code_sha}.zip"
    _say(
        f"uploading {zip_path.name} ({len(code) / 1024 / 1024:.1f} MiB) to s3://{bucket}/{code_key}"
    )
    _upload(aws, bucket, code_key, code)
    template = point_code_at(template, bucket=bucket, key=code_key)
    if options.expand_sam:
        template = expand_sam(template, region=aws.region)
    if options.adapt is not None:
        template = options.adapt(template)
    body = json.dumps(template, indent=1).encode()
    template_key = f"cronhook/{options.stage}/{hashlib.sha256(body).hexdigest()}.template.json"
    _upload(aws, bucket, template_key, body)
    return template, {"code_key": code_key, "code_sha256": code_sha, "template_key": template_key}


def _record_deploy(aws: _Aws, bucket: str, stage: str, uploaded: dict[str, str]) -> None:
    """Record the release, unless it is the one deployed last (nothing changed)."""
    release = {
        "deployed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "kind": "deploy",
        **uploaded,
    }
    template_key = uploaded["template_key"]
    releases = _read_manifest(aws, bucket, stage)
    if not releases or releases[-1]["template_key"] != template_key:
        _record_release(aws, bucket, stage, release)


def point_code_at(template: dict, *, bucket: str, key: str) -> dict:
    """A copy of ``template`` whose functions load their code from ``s3://bucket/key``."""
    out = copy.deepcopy(template)
    for resource in out["Resources"].values():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = {"Bucket": bucket, "Key": key}
    return out


def expand_sam(template: dict, *, region: str) -> dict:
    """Translate the SAM transform locally into plain CloudFormation."""
    import boto3
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    translator = Translator(
        managed_policy_map=None,
        sam_parser=Parser(),
        boto_session=boto3.session.Session(region_name=region),
    )
    return translator.translate(
        sam_template=copy.deepcopy(template),
        parameter_values={},
        get_managed_policy_map=lambda: {},
    )


def _ensure_bucket(aws: _Aws, name: str | None) -> str:
    from botocore.exceptions import ClientError

    s3 = aws.client("s3")
    if name is None:
        account = aws.client("sts").get_caller_identity()["Account"]
        name = f"cronhook-artifacts-{account}-{aws.region}"
    try:
        s3.head_bucket(Bucket=name)
        return name
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
            raise
    _say(f"creating artifact bucket {name}")
    kwargs: dict = {"Bucket": name}
    if aws.region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": aws.region}
    s3.create_bucket(**kwargs)
    s3.put_public_access_block(
        Bucket=name,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    return name


def _upload(aws: _Aws, bucket: str, key: str, body: bytes) -> None:
    from botocore.exceptions import ClientError

    s3 = aws.client("s3")
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return  # content-addressed: already there
    except ClientError:
        pass
    s3.put_object(Bucket=bucket, Key=key, Body=body)


def _template_url(aws: _Aws, bucket: str, key: str) -> str:
    suffix = ".cn" if aws.region.startswith("cn-") else ""
    return f"https://s3.{aws.region}.amazonaws.com{suffix}/{bucket}/{key}"


def _read_manifest(aws: _Aws, bucket: str, stage: str) -> list[dict]:
    from botocore.exceptions import ClientError

    try:
        body = aws.client("s3").get_object(Bucket=bucket, Key=_manifest_key(stage))["Body"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
            return []
        raise
    return list(json.loads(body.read()).get("releases", []))


def _manifest_key(stage: str) -> str:
    return f"cronhook/{stage}/releases.json"


def _record_release(aws: _Aws, bucket: str, stage: str, release: dict) -> list[dict]:
    """Append ``release``, keep the last ``KEEP_RELEASES``, delete artifacts no one keeps."""
    releases = [*_read_manifest(aws, bucket, stage), release][-KEEP_RELEASES:]
    s3 = aws.client("s3")
    s3.put_object(
        Bucket=bucket,
        Key=_manifest_key(stage),
        Body=json.dumps({"stage": stage, "releases": releases}, indent=1).encode(),
        ContentType="application/json",
    )
    kept = {r[k] for r in releases for k in ("code_key", "template_key")}
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"cronhook/{stage}/")
    stale = [
        o["Key"]
        for o in listed.get("Contents", [])
        if o["Key"] not in kept and o["Key"] != _manifest_key(stage)
    ]
    if stale:
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in stale]})
    return releases
