"""The due shard count is a stack parameter every function reads (item 4 of issue 12)."""

from __future__ import annotations

from chalicelib.settings import Settings
from chalicelib.store.shard_registry import PROBE_SHARDS
from infra.iam import FUNCTIONS
from infra.template import MAX_DUE_SHARDS


def test_every_function_reads_the_due_shards_parameter(packaged):
    param = packaged.template["Parameters"]["DueShards"]
    assert param["Type"] == "Number" and param["MinValue"] == 1
    assert param["Default"] == Settings().due_shards  # the stack's default is the code's
    # A count the stack may name is one the registry's first probe would find again.
    assert param["MaxValue"] == MAX_DUE_SHARDS == PROBE_SHARDS
    for logical in FUNCTIONS.values():
        env = packaged.template["Resources"][logical]["Properties"]["Environment"]["Variables"]
        assert env["CRONHOOK_DUE_SHARDS"] == {"Fn::Sub": "${DueShards}"}, logical
