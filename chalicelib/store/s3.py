"""Event bodies too large for a DynamoDB item, in S3, encrypted with the stack's KMS key."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from chalicelib.domain.errors import ServiceUnavailable
from chalicelib.settings import get_settings
from chalicelib.store.aws import client

__all__ = ["put_body", "get_body", "body_exists", "delete_body"]


def _bucket() -> str:
    bucket = get_settings().bucket
    if not bucket:
        raise ServiceUnavailable("no bucket is configured for large event bodies")
    return bucket


def put_body(key: str, body: bytes) -> None:
    """Store ``body`` under ``key`` (SSE-KMS with the stack's key when one is configured)."""
    settings = get_settings()
    extra: dict = {"ServerSideEncryption": "AES256"}
    if settings.kms_key_id:
        # A bucket key makes S3 ask KMS for a data key per bucket and period, not per object.
        extra = {
            "ServerSideEncryption": "aws:kms",
            "SSEKMSKeyId": settings.kms_key_id,
            "BucketKeyEnabled": True,
        }
    try:
        client("s3").put_object(
            Bucket=_bucket(),
            Key=key,
            Body=body,
            ContentType="application/octet-stream",
            **extra,
        )
    except (ClientError, BotoCoreError) as exc:
        raise ServiceUnavailable("the event body could not be stored; try again") from exc


def get_body(key: str) -> bytes:
    """The body stored under ``key``."""
    answer = client("s3").get_object(Bucket=_bucket(), Key=key)
    return answer["Body"].read()


def body_exists(key: str) -> bool:
    """True if a body is stored under ``key`` (the lifecycle rule may have expired it)."""
    try:
        client("s3").head_object(Bucket=_bucket(), Key=key)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return False
        raise ServiceUnavailable("the event body could not be read; try again") from exc
    except BotoCoreError as exc:
        raise ServiceUnavailable("the event body could not be read; try again") from exc
    return True


def delete_body(key: str) -> None:
    """Delete a body nobody points at (best effort: the bucket's lifecycle rule is the backstop)."""
    try:
        client("s3").delete_object(Bucket=_bucket(), Key=key)
    except (ClientError, BotoCoreError):
        pass
