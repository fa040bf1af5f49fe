"""Methods a class body defines in a branch (twenty-third set F29-c2): `if HAVE_SMI: def m … else:
def m …` on a run-time flag, a def under a class-body `try`, and one under a test of this
release (a hasattr, a flag a try sets from upstream imports): each is the class's method where its branch runs, judged as an override of upstream's
(before, a def nested in a class-body `if` or `try` was no method at all: its override never
reported, a signature upstream's callers break never flagged). A branch a test of this release
rules out defines nothing."""

from __future__ import annotations

import textwrap

import pytest
from kinds_support import IFACE, check, plugin, pyproject, upstream_pair

BODIES = {
    "if_else_on_a_flag": """
        if HAVE_SMI:
            def get_device_name(self, device_id: int = 0) -> str:
                return "smi"
        else:
            def get_device_name(self, device_id: int = 0) -> str:
                return "sysfs"
    """,
    "try_in_the_class_body": """
        try:
            import smi_vendor_lib as _smi

            def get_device_name(self, device_id: int = 0) -> str:
                return _smi.name(device_id)
        except ImportError:
            pass
    """,
    # a flag a try sets from upstream imports that resolve on this release (twenty-third set F10-c2)
    "if_of_a_try_import_flag": """
        if HAVE_MIXIN:
            def get_device_name(self, device_id: int = 0) -> str:
                return "kept"
        else:
            def get_device_name(self) -> str:
                return "never: the import resolves on this release"
    """,
    "else_of_a_release_test": """
        if hasattr(SRTPlatform, "no_such_capability"):
            def get_device_name(self) -> str:
                return "never: this release has no such capability"
        else:
            def get_device_name(self, device_id: int = 0) -> str:
                return "kept"
    """,
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


@pytest.mark.parametrize("body", sorted(BODIES))
def test_a_method_defined_in_a_branch_of_the_class_body_is_an_override(upstreams, tmp_path, body):
    source = f"""
from sglang.srt.platforms.interface import SRTPlatform

try:
    import smi_vendor_lib  # noqa: F401
    HAVE_SMI = True
except ImportError:
    HAVE_SMI = False

try:
    from sglang.srt.platforms.device_mixin import DeviceMixin  # noqa: F401
    HAVE_MIXIN = True
except ImportError:
    HAVE_MIXIN = False


class DevPlatform(SRTPlatform):
    def get_default_attention_backend(self) -> str:
        return "torch_native"

{textwrap.indent(textwrap.dedent(BODIES[body]), "    ")}
"""
    root = plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"cb": "cb:activate"}),
                             "cb/__init__.py": "def activate():\n    return 'cb.platform.DevPlatform'\n",
                             "cb/platform.py": source})
    code, doc = check(root, upstreams[1])
    overrides = [f for f in doc["findings"] if f["kind"] == "override" and f["target"] == f"{IFACE}.get_device_name"]
    lines = (root / "cb/platform.py").read_text().splitlines()
    assert overrides, doc["findings"]
    for found in overrides:  # the def judged is one a run of this release can have, upstream's parameters kept
        assert "device_id: int = 0" in lines[found["line"] - 1] and found["status"] == "ok", found
    assert code == 0, doc["findings"]
