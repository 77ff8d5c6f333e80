"""The local stack's KMS key, kept across restarts under ``$CRONHOOK_DATA_DIR``.

Webhook secrets and ``http:`` targets' outbound secrets are sealed with KMS
(``store/kms.py``); the sealed text names the key and the ciphertext carries its id. The
embedded AWS (moto) makes a key with fresh random material on every start, so without
this every secret sealed before a restart would stop opening: webhook triggers would
refuse every delivery and ``http:`` targets would fail every run.

So the key's id and material are kept in ``$CRONHOOK_DATA_DIR/kms-key.json`` (mode
0600, in a 0700 directory) and put back into the embedded AWS's key on start. The file
is the local equivalent of the KMS key itself: whoever reads it opens every local
secret, which is why it is private to the user, and why nothing like it exists in AWS.

moto offers no ``ImportKeyMaterial``, so the key is made in moto's own backend: this runs
in the process that serves KMS (``embedded_aws --keyring DIR``), before it answers.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

__all__ = ["KEY_FILE", "private_dir", "write_private", "ensure_key", "saved_key_id"]

KEY_FILE = "kms-key.json"


def private_dir(path: Path) -> Path:
    """``path`` as a directory only its owner may read (made if missing)."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` with mode 0600 from the first byte (atomic rename)."""
    private_dir(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a leftover .tmp with a wider mode is narrowed too
        with os.fdopen(fd, "w") as out:
            fd = -1
            out.write(text)
    finally:
        if fd >= 0:
            os.close(fd)
    os.replace(tmp, path)


def _backend(region: str) -> object:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.kms.models import kms_backends

    return kms_backends[DEFAULT_ACCOUNT_ID][region]


def ensure_key(data_dir: Path, *, region: str) -> str:
    """Make the local secrets key in this process's moto, with the kept id and material.

    The first start keeps the new key's id and material; every later start gives the new
    key that id and material, so ciphertexts sealed before the restart open again.
    """
    keys = _backend(region).keys  # type: ignore[attr-defined]
    key = _backend(region).create_key(  # type: ignore[attr-defined]
        policy=None,
        key_usage="ENCRYPT_DECRYPT",
        key_spec="SYMMETRIC_DEFAULT",
        description="cronhook local secrets",
        tags=None,
    )
    path = data_dir / KEY_FILE
    if not path.exists():
        write_private(
            path,
            json.dumps(
                {
                    "key_id": key.id,
                    "material": base64.b64encode(key.key_material).decode("ascii"),
                }
            ),
        )
        return key.id
    private_dir(data_dir)
    os.chmod(path, 0o600)
    saved = json.loads(path.read_text())
    saved_id = str(saved["key_id"])
    del keys[key.id]
    key.id = saved_id
    key.arn = key.arn.rsplit("/", 1)[0] + "/" + saved_id
    key.key_material = base64.b64decode(saved["material"])
    keys[saved_id] = key
    return saved_id


def saved_key_id(data_dir: Path) -> str:
    """The id of the key ``ensure_key`` made (read by the stack, in its own process)."""
    return str(json.loads((data_dir / KEY_FILE).read_text())["key_id"])
