"""Plugin-private platform methods: a method on the plugin's platform class that no upstream
base declares is the plugin's own extension point (status `extension`, never breaking) when
the plugin calls it itself or the release it declares never had it either; `not_on_base` stays
for methods upstream used to call and for close names of a base method (issue 18 kind 3)."""

from __future__ import annotations

import pytest
from kinds_support import IFACE, check, plugin, pyproject, upstream_pair
from knowledge_support import by_target, harness_json

from harness.knowledge.model.findings import BREAKING, Status


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    # 0.10.0 drops get_mha_kv_pool_cls and adds get_kv_pool_cls
    return upstream_pair(tmp_path_factory, new={
        "sglang/srt/platforms/interface.py": """
            from sglang.srt.platforms.device_mixin import DeviceMixin

            class SRTPlatform(DeviceMixin):
                def get_default_attention_backend(self) -> str:
                    raise NotImplementedError

                def get_kv_pool_cls(self, *, kind) -> type:
                    raise NotImplementedError

                def init_backend(self) -> None:
                    pass
            """,
    })


def platform_plugin(tmp_path):
    return plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"priv": "priv:activate"}, plugins={"priv_hooks": "priv.hooks:register"}),
        "priv/__init__.py": """
            def activate():
                return "priv.platform:PrivPlatform"
            """,
        "priv/platform.py": """
            from sglang.srt.platforms.interface import SRTPlatform


            class PrivPlatform(SRTPlatform):
                def get_default_attention_backend(self) -> str:
                    return "torch_native"

                def get_sampler_chunk_size(self) -> int:
                    return 4096

                def uses_paged_cache(self) -> bool:
                    return self.get_sampler_chunk_size() > 0

                def get_mha_kv_pool_cls(self):
                    return object

                def get_default_attention_backnd(self) -> str:
                    return "typo"
            """,
        "priv/hooks.py": """
            from sglang.srt.platforms import current_platform
            from sglang.srt.plugins.hook_registry import HookRegistry, HookType


            def _chunked(original_fn, self, logits, *args, **kwargs):
                self.chunk = current_platform.get_sampler_chunk_size()
                if getattr(current_platform, "uses_paged_cache")():
                    pass
                return original_fn(self, logits, *args, **kwargs)


            def register():
                HookRegistry.register("sglang.srt.layers.sampler.Sampler.forward", _chunked, HookType.AROUND)
            """,
    })


def test_methods_the_plugin_calls_itself_are_extensions(upstreams, tmp_path):
    old, new = upstreams
    root = platform_plugin(tmp_path)
    code, doc = check(root, old)
    findings = by_target(doc["findings"])
    for name in ("get_sampler_chunk_size", "uses_paged_cache"):
        finding = findings[f"{IFACE}.{name}"]
        assert finding["status"] == Status.extension.value and finding["breaking"] is False, finding
        assert "priv/hooks.py:" in finding["detail"] or "priv/platform.py:" in finding["detail"], finding
    # a close name of a base method is a typo or a rename: still not_on_base, with the successor
    typo = findings[f"{IFACE}.get_default_attention_backnd"]
    assert typo["status"] == Status.not_on_base.value and typo["breaking"]
    assert typo["successor"] == f"{IFACE}.get_default_attention_backend"
    assert code == 1
    # on 0.10.0 get_mha_kv_pool_cls left the base, which upstream used to call (a --baseline tells)
    code, doc = check(root, new, "--baseline", old)
    findings = by_target(doc["findings"])
    assert findings[f"{IFACE}.get_mha_kv_pool_cls"]["status"] == Status.not_on_base.value
    assert findings[f"{IFACE}.get_mha_kv_pool_cls"]["breaking"]
    assert findings[f"{IFACE}.get_sampler_chunk_size"]["status"] == Status.extension.value
    code, doc = harness_json("diff", "--from", old, "--to", new, "--plugin", str(root), "--out", str(tmp_path / "diff"))
    findings = by_target(doc["findings"])
    assert findings[f"{IFACE}.get_mha_kv_pool_cls"]["status"] == Status.not_on_base.value
    assert findings.get(f"{IFACE}.get_sampler_chunk_size", {"status": "extension"})["status"] == Status.extension.value


def test_a_method_the_declared_release_never_had_is_a_dead_override_never_red(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"own": "own:activate"}),
        "own/__init__.py": """
            from sglang.srt.platforms.interface import SRTPlatform


            class OwnPlatform(SRTPlatform):
                def get_default_attention_backend(self) -> str:
                    return "torch_native"

                def describe_device_topology(self) -> str:
                    return "ring"


            def activate():
                return "own:OwnPlatform"
            """,
    })
    code, doc = check(root, new, "--baseline", old)
    finding = by_target(doc["findings"])[f"{IFACE}.describe_device_topology"]
    # upstream did not call it on the release the plugin declares either: nothing is lost now
    assert finding["status"] == Status.dead_override.value and not finding["breaking"]
    assert code == 0
    # on its own base (the baseline is the release checked) the same
    code, doc = check(root, new, "--baseline", new)
    assert by_target(doc["findings"])[f"{IFACE}.describe_device_topology"]["status"] == Status.dead_override.value
    assert code == 0 and doc["baseline"] == doc["upstream"]
    # without a baseline nothing says upstream never called it: the old verdict stands
    code, doc = check(root, new, "--baseline", "none")
    assert by_target(doc["findings"])[f"{IFACE}.describe_device_topology"]["status"] == Status.not_on_base.value


def test_extension_is_never_a_breaking_status():
    assert Status.extension not in BREAKING
