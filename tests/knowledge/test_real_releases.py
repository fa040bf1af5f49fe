"""The knowledge engine on real SGLang release wheels from the package index, with the
built-in example plugin (written against the real 0.5.17 plugin API)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from knowledge_support import by_target, harness, harness_json, write_tree
from real_releases import real_releases

EXAMPLE_PLUGIN = Path(__file__).resolve().parents[2] / "harness" / "examples" / "workspace" / "plugin"
INTERFACE = "sglang.srt.platforms.interface.SRTPlatform"

pytestmark = [pytest.mark.network, pytest.mark.slow]


@pytest.fixture(scope="module")
def releases():
    return real_releases("sglang==0.5.11", "sglang==0.5.17", "sglang==0.5.23")


def test_diff_of_real_releases_finds_the_real_breakage(releases, tmp_path):
    code, doc = harness_json("diff", "--from", "sglang==0.5.17", "--to", "sglang==0.5.23", "--plugin", str(EXAMPLE_PLUGIN), "--out", str(tmp_path))
    assert code == 0
    findings = by_target(doc["findings"])
    # 0.5.23 replaced get_mha/mla/dsa_kv_pool_cls with get_kv_pool_cls(*, kind), which still
    # serves the old overrides through a legacy shim: a deprecation, not a breakage
    for legacy in ("get_mha_kv_pool_cls", "get_mla_kv_pool_cls"):
        finding = findings[f"{INTERFACE}.{legacy}"]
        assert finding["status"] == "deprecated" and finding["successor"] == f"{INTERFACE}.get_kv_pool_cls"
        assert finding["breaking"] is False and "legacy shim" in finding["successor_reason"]
    # ... and support_cuda_graph / supports_fp8 (the capabilities struct took over)
    assert findings[f"{INTERFACE}.support_cuda_graph"]["status"] == "not_on_base"
    assert findings[f"{INTERFACE}.supports_fp8"]["status"] == "not_on_base"
    threads = findings["sglang.srt.model_executor.model_runner.ModelRunner.init_threads_binding"]
    assert threads["status"] == "missing" and threads["successor"] == "sglang.srt.utils.numa_utils.init_threads_binding"
    all_reduce = findings["sglang.srt.distributed.parallel_state.GroupCoordinator.all_reduce"]
    assert all_reduce["status"] == "body_changed" and all_reduce["hook_type"] == "REPLACE"
    admission = findings["sglang.srt.managers.scheduler.Scheduler.handle_generate_request"]
    assert admission["status"] == "signature_changed" and "mm_input_error" in admission["detail"]
    assert all_reduce["risk"] > admission["risk"]  # stale REPLACE copy before pass-through AROUND
    # a server-arg default set by the platform: the field moved into a namespace class
    server_arg = findings["sglang.srt.server_args.ServerArgs.attention_backend"]
    assert server_arg["status"] == "ok" and "ExecKernel" in server_arg["detail"]
    # the dead legacy hook module is reported, not live
    assert findings["sglang.srt.model_executor.cuda_graph_runner.CudaGraphRunner.can_run"]["live"] is False
    raw_changes = yaml.safe_load((tmp_path / "feature-diff.yaml").read_text())["changes"]
    # a method that only an external base (torch.nn.Module, msgspec.Struct, …) could provide was removed, not moved
    assert not [c for c in raw_changes if c["change"] == "moved_to_base" and "sglang." not in c["detail"]]
    changes = {(c["symbol"], c["change"]) for c in raw_changes}
    assert (f"{INTERFACE}.get_kv_pool_cls", "added") in changes
    assert any(symbol == f"{INTERFACE}.get_mha_kv_pool_cls" for symbol, _ in changes)


def test_check_verdicts_on_real_releases(releases):
    assert harness("check", "--plugin", str(EXAMPLE_PLUGIN), "--upstream", "sglang==0.5.17").returncode == 0
    code, doc = harness_json("check", "--plugin", str(EXAMPLE_PLUGIN), "--upstream", "sglang==0.5.23")
    assert code == 1
    breaking = {f["target"] for f in doc["findings"] if f["breaking"]}
    assert f"{INTERFACE}.support_cuda_graph" in breaking
    assert f"{INTERFACE}.get_mha_kv_pool_cls" not in breaking  # still served by the legacy shim


def test_unknown_release_is_one_clear_error(releases):
    proc = harness("check", "--plugin", str(EXAMPLE_PLUGIN), "--upstream", "sglang==0.0.999")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("harness: error: sglang==0.0.999: no such release on the package index")


def test_a_declared_release_the_index_lacks_names_where_it_was_declared(releases, tmp_path):
    """`upgrade --from auto` on a plugin whose Dockerfile pins a release that does not exist: the
    error says which file:line declared it and what to pass instead."""
    plugin = tmp_path / "plugin"
    write_tree(plugin, {"pyproject.toml": '[project]\nname = "p"\nversion = "0.1"\n'
                                          '[project.entry-points."sglang.srt.plugins"]\np = "p:register"\n',
                        "p/__init__.py": "import sglang\n\n\ndef register():\n    return None\n",
                        "Dockerfile": "FROM lmsysorg/sglang:v0.0.999-cu126\n"})
    (tmp_path / "ws").mkdir()
    proc = harness("upgrade", "--plugin", str(plugin), "--from", "auto", "--to", "sglang==0.5.23", "--workspace", str(tmp_path / "ws"))
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("harness: error: sglang==0.0.999: no such release on the package index"), line
    assert line.endswith("; --from auto read sglang==0.0.999 from Dockerfile:1: pass --from sglang==X to upgrade from another"), line


REAL_PORT = {
    "pyproject.toml": '[project]\nname = "realport"\nversion = "0.1"\n[project.entry-points."sglang.srt.plugins"]\nrealport = "realport:register"\n',
    # written against 0.5.11, the way real plugins use upstream: plain imports, module and enum
    # references, subclasses with overrides and self./super() members
    "realport/__init__.py": """
        from sglang.srt.layers.elementwise import Softcap
        from sglang.srt.layers.communicator import CommunicateSimpleFn
        from sglang.srt.layers.attention.base_attn_backend import AttentionBackend
        from sglang.srt.layers.sampler import Sampler
        from sglang.srt.managers.schedule_batch import ScheduleBatch
        from sglang.srt.model_executor import forward_batch_info
        from sglang.srt.utils import common as sgl_utils

        DRAFT = forward_batch_info.ForwardMode.DRAFT_EXTEND
        XPU = sgl_utils.use_intel_xpu_backend


        class XAttnBackend(AttentionBackend):
            def init_forward_metadata(self, forward_batch):
                pass

            def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, req_pool_indices, seq_lens, encoder_lens, forward_mode, spec_info):
                pass


        class XSampler(Sampler):
            def forward(self, *args, **kwargs):
                self._attach_logprobs_to_output(*args)
                return super().forward(*args, **kwargs)


        class XBatch(ScheduleBatch):
            def to_worker(self):
                return self.get_model_worker_batch()


        def register():
            return XBatch.to_worker  # the plugin uses it (a method nothing names cannot fail)
        """,
}


def test_real_releases_break_imports_references_and_subclasses(releases, tmp_path):
    """0.5.11 -> 0.5.17 -> 0.5.23: each breakage a real release made, found with file:line."""
    write_tree(tmp_path, REAL_PORT)

    def breaking(spec: str) -> dict[tuple[str, int], dict]:
        code, doc = harness_json("check", "--plugin", str(tmp_path), "--upstream", spec)
        assert code in (0, 1), doc
        return {(f["kind"], f["line"]): f for f in doc["findings"] if f["breaking"]}

    assert breaking("sglang==0.5.11") == {}
    on_17 = breaking("sglang==0.5.17")
    assert set(on_17) == {("import", 1), ("reference", 9), ("subclass", 23), ("subclass", 29)}
    assert "sglang.srt.layers.elementwise" in on_17[("import", 1)]["detail"]  # the module is gone
    assert on_17[("subclass", 23)]["target"].endswith("Sampler._attach_logprobs_to_output")
    assert on_17[("subclass", 29)]["target"].endswith("ScheduleBatch.get_model_worker_batch")
    on_23 = breaking("sglang==0.5.23")
    assert set(on_23) == set(on_17) | {("import", 2), ("reference", 10)}
    assert on_23[("reference", 9)]["target"] == "sglang.srt.model_executor.forward_batch_info.ForwardMode.DRAFT_EXTEND"
    assert on_23[("reference", 10)]["target"] == "sglang.srt.utils.common.use_intel_xpu_backend"
    # across two releases: an override upstream stopped calling (the base dropped the method)
    code, doc = harness_json("diff", "--from", "sglang==0.5.11", "--to", "sglang==0.5.17", "--plugin", str(tmp_path))
    dropped = {(f["kind"], f["line"]): f for f in doc["findings"]}[("subclass", 17)]
    assert dropped["status"] == "not_on_base" and dropped["target"].endswith("AttentionBackend.init_forward_metadata_capture_cuda_graph")
