"""The moto release the embedded AWS's patches were written against, checked before each patch.

Every ``moto_*`` module here replaces or wraps moto internals (private names, copied function
bodies). They are correct for one moto release only: on any other, each ``make_*`` fails
at once with this message instead of quietly answering differently from stock moto.
``tests/unit/test_moto_version.py`` keeps ``PINNED`` equal to the pin in
``requirements-dev.txt``.
"""

from __future__ import annotations

__all__ = ["PINNED", "MotoVersionError", "require_pinned_moto"]

PINNED = "5.2.5"


class MotoVersionError(RuntimeError):
    """The installed moto is not the release the patches were written for."""


def require_pinned_moto(patch: str, installed: str | None = None) -> None:
    """Raise unless the installed moto is ``PINNED`` (``installed`` overrides, for tests)."""
    if installed is None:
        import moto

        installed = moto.__version__
    if installed != PINNED:
        raise MotoVersionError(
            f"devstack.{patch} patches moto {PINNED} internals, but moto {installed} is "
            f"installed: pip install 'moto[server]=={PINNED}' (requirements-dev.txt), or port "
            f"devstack/{patch}.py to {installed} and change PINNED in devstack/moto_version.py"
        )
