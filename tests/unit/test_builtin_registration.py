"""The built-in echo/fail/sleep workflows exist only where CRONHOOK_BUILTIN_WORKFLOWS asks."""

from __future__ import annotations

import pytest

from chalicelib.settings import reset_settings
from chalicelib.workflows import REGISTRY, get_workflow, is_known_target


@pytest.fixture
def environment(monkeypatch):
    def set_to(**values: str | None) -> None:
        for name, value in values.items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        reset_settings()

    yield set_to
    reset_settings()
    get_workflow("echo")  # back to what the test session's settings say


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_a_deployed_stage_has_no_built_in_workflows(environment, stage):
    environment(CRONHOOK_STAGE=stage, CRONHOOK_BUILTIN_WORKFLOWS=None)
    for name in ("echo", "fail", "sleep"):
        assert get_workflow(name) is None
        assert not is_known_target(name)
        assert name not in REGISTRY


@pytest.mark.parametrize("stage", ["local", "test"])
def test_the_local_stack_and_the_tests_have_them(environment, stage):
    environment(CRONHOOK_STAGE=stage, CRONHOOK_BUILTIN_WORKFLOWS=None)
    assert {n for n in ("echo", "fail", "sleep") if get_workflow(n) is not None} == {
        "echo",
        "fail",
        "sleep",
    }


@pytest.mark.parametrize(("flag", "present"), [("1", True), ("0", False)])
def test_the_setting_wins_over_the_stage(environment, flag, present):
    environment(CRONHOOK_STAGE="prod", CRONHOOK_BUILTIN_WORKFLOWS=flag)
    assert (get_workflow("sleep") is not None) is present
    environment(CRONHOOK_STAGE="local", CRONHOOK_BUILTIN_WORKFLOWS=flag)
    assert (get_workflow("sleep") is not None) is present
