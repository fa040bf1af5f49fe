"""Calls the release makes on the engine's platform instance reach the plugin's platform class
(issue 34, item 1; F29 variant t2 on vLLM): `current_platform.get_device_capability()` runs the
activated class's override however many modules make such calls (a method name called all over
the release is not scanned by receiver; calls through `current_platform` are read directly).
An override that made the base's optional parameter required cannot take a call that leaves it
out, nor one passing it under the base's name; an override that keeps it optional takes both."""

from __future__ import annotations

import pytest
from kinds_support import IFACE, check, plugin, pyproject, upstream_pair

INTERFACE = ("from sglang.srt.platforms.device_mixin import DeviceMixin\n\n\nclass SRTPlatform(DeviceMixin):\n"
             "    def get_default_attention_backend(self) -> str:\n        raise NotImplementedError\n\n"
             "    def init_backend(self) -> None:\n        pass\n\n"
             "    @classmethod\n    def get_device_capability(cls, device_id=0):\n        return (8, 0)\n")
# how the release's modules reach the platform instance (many modules: more than one receiver scan takes)
CALLERS = {
    "from_import": "from sglang.srt.platforms import current_platform\n\n\ndef f{i}():\n    return current_platform.get_device_capability({args})\n",
    "module_attribute": "import sglang.srt.platforms as platforms\n\n\ndef f{i}():\n    return platforms.current_platform.get_device_capability({args})\n",
    "at_import": "from sglang.srt.platforms import current_platform\n\nCAPABILITY{i} = current_platform.get_device_capability({args})\n",
}
OVERRIDES = {
    # (the override's signature, the arguments the release passes, whether every call fails)
    "required_no_argument": ("cls, device_index", "", True),
    "required_base_keyword": ("cls, device_index", "device_id=0", True),
    "optional_kept": ("cls, device_id=0", "", False),
}


@pytest.mark.parametrize("callers", sorted(CALLERS))
@pytest.mark.parametrize("override", sorted(OVERRIDES))
def test_calls_on_the_platform_instance_reach_the_activated_class(tmp_path_factory, tmp_path, callers, override):
    signature, args, breaks = OVERRIDES[override]
    modules = {f"sglang/srt/layers/user{i}.py": CALLERS[callers].format(i=i, args=args) for i in range(20)}
    # other objects' methods of the same name elsewhere: the receiver-by-receiver scan gives up
    modules.update({f"sglang/srt/layers/other{i}.py": f"def g{i}(gpu):\n    return gpu.get_device_capability()\n" for i in range(20)})
    _, new = upstream_pair(tmp_path_factory, new={"sglang/srt/platforms/interface.py": INTERFACE, **modules})
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"dev": "p:activate"}),
        "p/__init__.py": "def activate():\n    return 'p.platform.DevPlatform'\n",
        "p/platform.py": (f"from sglang.srt.platforms.interface import SRTPlatform\n\n\nclass DevPlatform(SRTPlatform):\n"
                          f"    @classmethod\n    def get_device_capability({signature}):\n        return (9, 0)\n"),
    })
    code, doc = check(root, new)
    (found,) = [f for f in doc["findings"] if f["target"] == f"{IFACE}.get_device_capability"]
    assert found["breaking"] is breaks, found
    if breaks:
        assert "sglang/srt/layers/user" in found["detail"] and code == 1
