"""The dependency kinds are one table (harness.engines.kinds): every Kind has its
spec, and the sets the judge and the steps ask for come out of it."""

from __future__ import annotations

from typing import get_args

from harness.engines import profile
from harness.engines.kinds import ATTRIBUTE_ERRORS, CALL_ERRORS, IMPORT_ERRORS, KEY_ERRORS, Kind


def test_every_kind_has_one_spec():
    assert set(profile().kinds) == set(get_args(Kind))
    assert all(kind == spec.kind for kind, spec in profile().kinds.items())


def test_the_sets_asked_for():
    sglang = profile()
    assert sglang.kinds_where("usage") == {"import", "reference", "call", "subclass", "registry_key", "field", "architecture"}
    assert sglang.kinds_where("target") == {"hook", "patch", "kernel", "attention_backend", "server_arg"}
    assert sglang.kinds_where("registration") == {"attention_backend", "kernel", "model"}
    assert sglang.spec("subclass").errors == ATTRIBUTE_ERRORS | CALL_ERRORS
    assert sglang.spec("import").errors == IMPORT_ERRORS and sglang.spec("call").errors == CALL_ERRORS
    assert not sglang.spec("hook").errors and sglang.spec("registry_key").errors == KEY_ERRORS  # REGISTRY[key]
    assert sglang.spec("override").landing == "platform factory method"
    assert sglang.spec("server_arg").landing is None


def test_the_upstream_package_is_the_profiles():
    sglang = profile()
    assert sglang.is_upstream("sglang") and sglang.is_upstream("sglang.srt.layers")
    assert not sglang.is_upstream("sglang_plugin.hooks") and not sglang.is_upstream(None)
