"""A patch on an upstream class whose members are computed at import (SGLang 0.5.23's ServerArgs,
rebuilt by `msgspec.defstruct` from fields read off other classes): a name its listed members
lack may be one it has after all, and setting an attribute on a class never fails by itself, so
the patch is no certain failure (thirty-first set F05-k2: a grafting decorator keeping upstream's
method as `_upstream_<name>` on the rebuilt class). One the plugin reads itself is its own
addition; one nothing reads is `unknown`. On a class whose members are all listed, a patch of a
name the release dropped stays `missing`."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

CONFIG = """
    import msgspec

    from sglang.srt.cfg_fields import DeviceFields


    class Cfg:
        def resolve(self):
            return None


    Cfg.__annotations__ = {**DeviceFields.__annotations__}
    Cfg = msgspec.defstruct("Cfg", [(name, kind) for name, kind in Cfg.__annotations__.items()],
                            namespace={k: v for k, v in vars(Cfg).items() if k not in ("__dict__", "__annotations__")})


    class Plain:
        def resolve(self):
            return None
    """
FIELDS = """
    class DeviceFields:
        device: str = "cuda"
    """


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    tree = {"sglang/srt/cfg.py": CONFIG, "sglang/srt/cfg_fields.py": FIELDS}
    return upstream_pair(tmp_path_factory, old=tree, new=tree)


KEEPS = {
    "assignment": "Cfg._orig_resolve = Cfg.resolve\n",
    "setattr": "setattr(Cfg, '_orig_resolve', getattr(Cfg, 'resolve'))\n",
    "loop_with_a_computed_name": "for name in ('resolve',):\n    setattr(Cfg, f'_orig_{name}', getattr(Cfg, name))\n",
}


@pytest.mark.parametrize("spelling", sorted(KEEPS))
def test_a_name_a_patch_adds_to_a_computed_class_is_no_certain_failure(upstreams, tmp_path, spelling):
    _, new = upstreams
    source = ("from sglang.srt.cfg import Cfg\n\n\ndef mine(self):\n    return self._orig_resolve()\n\n\n"
              "def register():\n    " + KEEPS[spelling].replace("\n", "\n    ").rstrip() + "\n    Cfg.resolve = mine\n    Cfg.unread_helper = mine\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}, name=spelling)
    code, doc = check(root, new)
    found = {f["target"].rpartition(".")[2]: f for f in doc["findings"] if f["kind"] == "patch"}
    assert found["_orig_resolve"]["status"] == "extension" and found["resolve"]["status"] == "ok", found
    assert found["unread_helper"]["status"] == "unknown" and not any(f["breaking"] for f in found.values()) and code != 1, found


def test_a_patch_of_a_name_a_listed_class_lacks_is_missing(upstreams, tmp_path):
    _, new = upstreams
    source = "from sglang.srt.cfg import Plain\n\n\ndef mine(self):\n    return None\n\n\ndef register():\n    Plain.unread_helper = mine\n"
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}), new)
    found = next(f for f in doc["findings"] if f["kind"] == "patch")
    assert (found["status"], found["breaking"], code) == ("missing", True, 1), found
