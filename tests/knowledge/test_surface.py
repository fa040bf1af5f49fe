"""The platform surface a plugin follows even when nothing breaks: per-device server-argument
defaults and deprecation shims, read from the real releases, and grouped into features."""

from __future__ import annotations

import textwrap

import pytest
from real_releases import real_releases

from harness.knowledge.upstream.index import load_index
from harness.knowledge.judge.surface import (
    deprecation_shims,
    platform_defaults,
    server_arg_fields,
)
from harness.knowledge.upstream.source import resolve_upstream


@pytest.fixture(scope="module")
def releases():
    return real_releases("sglang==0.5.17", "sglang==0.5.23")


@pytest.mark.network
def test_per_device_server_arg_defaults_of_the_real_releases(releases):
    old, new = releases
    old_fields, new_fields = server_arg_fields(load_index(old)), server_arg_fields(load_index(new))
    # 0.5.23 assembles ServerArgs from the arg_groups namespace classes: their fields count
    assert {"device", "attention_backend", "enable_symm_mem"} <= new_fields and len(new_fields) > 500
    before, after = platform_defaults(old, old_fields), platform_defaults(new, new_fields)
    # declare_resolution(server_args, ..., enable_symm_mem=False) under `not (is_cuda or is_hip)`
    assert any(p.startswith("sglang/srt/arg_groups/platform_hook.py:") for p in after["enable_symm_mem"])
    assert "enable_symm_mem" not in before
    # the NPU's set_default_server_args: a hardware backend's file is the device's own
    assert any(p.startswith("sglang/srt/hardware_backend/npu/utils.py:") for p in after["attention_backend"])
    # a backend's own `self.device` is not a server argument
    assert not any("attention/ascend_backend.py" in p for p in after.get("device", []))


@pytest.mark.network
def test_the_kv_pool_shim_of_0_5_23_and_the_legacy_names_it_serves(releases):
    old, new = releases
    assert "sglang.srt.platforms.interface.SRTPlatform.get_kv_pool_cls" not in deprecation_shims(old)
    shim = deprecation_shims(new)["sglang.srt.platforms.interface.SRTPlatform.get_kv_pool_cls"]
    assert shim.legacy == ["get_dsa_kv_pool_cls", "get_mha_kv_pool_cls", "get_mla_kv_pool_cls"]
    assert shim.horizon == "no removal version given" and "deprecated and will be removed" in shim.message
    assert shim.where.startswith("sglang/srt/platforms/interface.py:")


def test_a_shim_that_names_its_removal_version(tmp_path):
    platforms = tmp_path / "sglang" / "srt" / "platforms"
    platforms.mkdir(parents=True)
    (platforms / "interface.py").write_text(textwrap.dedent('''
        import warnings

        class SRTPlatform:
            def get_graph_runner_cls(self):
                if hasattr(self, "get_cuda_graph_runner_cls"):
                    warnings.warn("get_cuda_graph_runner_cls is deprecated; it will be removed in "
                                  "v0.6.0, override get_graph_runner_cls", DeprecationWarning)
                    return self.get_cuda_graph_runner_cls()
                return None

            def get_default_attention_backend(self):
                warnings.warn("backend auto-selection is slow")  # not a deprecation
                return "triton"
        '''))
    source = resolve_upstream(str(tmp_path))
    shims = deprecation_shims(source)
    assert list(shims) == ["sglang.srt.platforms.interface.SRTPlatform.get_graph_runner_cls"]
    assert shims["sglang.srt.platforms.interface.SRTPlatform.get_graph_runner_cls"].horizon == "0.6.0"
