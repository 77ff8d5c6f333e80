"""The root key read from SSM is cached for ROOT_KEY_TTL_S on a monotonic clock, not forever."""

from __future__ import annotations

import pytest

from chalicelib.domain.errors import Unauthorized
from chalicelib.services import auth
from chalicelib.settings import reset_settings

PARAM = "/cronhook/test/root-key"


class FakeSsm:
    """SSM's GetParameter for one parameter, counting reads; ``fail`` makes reads raise."""

    def __init__(self, value: str):
        self.value = value
        self.reads = 0
        self.fail = False

    def get_parameter(self, *, Name: str, WithDecryption: bool) -> dict:  # noqa: N803
        assert Name == PARAM and WithDecryption
        self.reads += 1
        if self.fail:
            raise ConnectionError("SSM is unreachable")
        return {"Parameter": {"Name": Name, "Value": self.value}}


class Monotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def ssm(monkeypatch):
    monkeypatch.delenv("CRONHOOK_API_KEY", raising=False)
    monkeypatch.setenv("CRONHOOK_ROOT_KEY_PARAM", PARAM)
    reset_settings()
    fake = FakeSsm("chr_old")
    monkeypatch.setattr("chalicelib.store.aws.client", lambda name: fake)
    monkeypatch.setattr(auth, "_root_cache", {})
    yield fake
    reset_settings()


@pytest.fixture
def mono(monkeypatch):
    clock = Monotonic()
    monkeypatch.setattr(auth, "_monotonic", clock)
    return clock


def test_the_ttl_is_a_bounded_module_constant():
    assert 0 < auth.ROOT_KEY_TTL_S <= 15 * 60


def test_the_root_key_is_read_once_within_the_ttl(ssm, mono):
    assert auth.root_key() == "chr_old"
    mono.now += auth.ROOT_KEY_TTL_S - 1
    assert auth.root_key() == "chr_old"
    assert ssm.reads == 1


def test_after_a_rotation_the_old_key_stops_working_once_the_ttl_has_passed(ssm, mono):
    assert auth.authenticate("Bearer chr_old").is_root
    ssm.value = "chr_new"  # rotated in SSM
    mono.now += auth.ROOT_KEY_TTL_S - 0.001
    assert auth.authenticate("Bearer chr_old").is_root  # still cached
    with pytest.raises(Unauthorized):
        auth.authenticate("Bearer chr_new")
    mono.now += 0.001
    assert auth.authenticate("Bearer chr_new").is_root
    with pytest.raises(Unauthorized):
        auth.authenticate("Bearer chr_old")
    assert ssm.reads == 2


def test_a_clock_that_goes_backwards_reads_again(ssm, mono):
    auth.root_key()
    mono.now -= 10  # cannot happen with a monotonic clock; never trust such an entry
    auth.root_key()
    assert ssm.reads == 2


def test_a_failed_refresh_keeps_the_last_key_for_one_more_ttl_then_raises(ssm, mono):
    assert auth.root_key() == "chr_old"
    ssm.fail = True
    mono.now += auth.ROOT_KEY_TTL_S
    assert auth.root_key() == "chr_old"  # SSM blip: not a 503 for every request
    mono.now += auth.ROOT_KEY_TTL_S - 1
    assert auth.root_key() == "chr_old"
    assert ssm.reads == 3  # every call past the TTL tries again
    mono.now += 1
    with pytest.raises(ConnectionError):
        auth.root_key()
    ssm.fail = False
    assert auth.root_key() == "chr_old"
    mono.now += auth.ROOT_KEY_TTL_S - 1
    assert auth.root_key() == "chr_old"
    assert ssm.reads == 5


def test_a_first_read_that_fails_raises(ssm, mono):
    ssm.fail = True
    with pytest.raises(ConnectionError):
        auth.root_key()


def test_the_environment_key_is_used_as_is_and_never_cached(monkeypatch, mono):
    monkeypatch.setenv("CRONHOOK_API_KEY", "chr_env")
    monkeypatch.setenv("CRONHOOK_ROOT_KEY_PARAM", PARAM)
    reset_settings()
    monkeypatch.setattr(auth, "_root_cache", {})
    try:
        assert auth.root_key() == "chr_env"
        assert auth._root_cache == {}
    finally:
        reset_settings()
