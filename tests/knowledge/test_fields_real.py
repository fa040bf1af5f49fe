"""Fields of upstream objects on real SGLang releases (issue 18 kind 12): ForwardBatch lost
fields release by release after 0.5.11, ServerArgs replaced `cuda_graph_bs` by
`cuda_graph_bs_decode` (and 0.5.23 assembles its fields from namespace classes). Each read is judged against the class as
that release declares it; a plugin that reads only fields its base release declares is green
there."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject
from real_releases import real_releases

FB = "sglang.srt.model_executor.forward_batch_info.ForwardBatch"
SA = "sglang.srt.server_args.ServerArgs"

PLUGIN = """
from sglang.srt.model_executor.forward_batch_info import ForwardBatch
from sglang.srt.plugins.hook_registry import HookRegistry, HookType


def pools(fb: ForwardBatch):
    return fb.token_to_kv_pool, fb.out_cache_loc_swa, fb.all_extend_in_batch, fb.can_run_dp_cuda_graph, fb.seq_lens


def graph_sizes(server_args):
    return server_args.cuda_graph_bs, server_args.tp_size


def before_forward(self, forward_batch, skip_attn_backend_init=False):
    # the class comes from ModelRunner.forward's own annotation (forward_batch: ForwardBatch)
    return forward_batch.out_cache_loc_swa


def register():
    HookRegistry.register("sglang.srt.model_executor.model_runner.ModelRunner.forward", before_forward, HookType.BEFORE)
"""
NEWER = """
from sglang.srt.model_executor.forward_batch_info import ForwardBatch


def graph_sizes(server_args, fb: ForwardBatch):
    if hasattr(fb, "out_cache_loc_swa"):
        return fb.out_cache_loc_swa
    return server_args.cuda_graph_bs_decode, server_args.disable_cuda_graph, fb.batch_size, fb.seq_lens


def register():
    pass
"""


@pytest.fixture(scope="module")
def releases():
    return real_releases("sglang==0.5.11", "sglang==0.5.14", "sglang==0.5.17", "sglang==0.5.23")


def _fields(tmp_path, body: str, version: str) -> tuple[int, dict[tuple[int, str], dict]]:
    root = plugin(tmp_path / version, {"pyproject.toml": pyproject(plugins={"rp": "rp:register"}), "rp/__init__.py": body})
    code, doc = check(root, f"sglang=={version}")
    return code, {(f["line"], f["target"]): f for f in doc["findings"] if f["kind"] == "field"}


def _statuses(fields: dict) -> dict[tuple[int, str], str]:
    return {key: f["status"] for key, f in fields.items()}


def test_fields_dropped_after_the_base_release(releases, tmp_path):
    # 0.5.11 declares every one: forward_batch_info.py:302 out_cache_loc_swa, :374 token_to_kv_pool,
    # :393 all_extend_in_batch, :394 can_run_dp_cuda_graph; server_args.py:636 cuda_graph_bs
    code, fields = _fields(tmp_path, PLUGIN, "0.5.11")
    assert fields == {} and code == 0, fields
    # 0.5.14 dropped out_cache_loc_swa and token_to_kv_pool from ForwardBatch (forward_batch_info.py:336
    # keeps a comment) and keeps all_extend_in_batch / can_run_dp_cuda_graph (:389, :390); but upstream
    # still sets token_to_kv_pool on other objects (speculative/frozen_kv_mtp_cuda_graph_runner.py:316),
    # (undecided); ServerArgs sets attributes by a name it computes only over four literal names
    # (server_args.py:2743 `for attr in ("attention_backend", …): … setattr(self, attr, "dsv4")`), and
    # cuda_graph_bs became cuda_graph_bs_decode at :1947: that read is missing
    code, fields = _fields(tmp_path, PLUGIN, "0.5.14")
    assert _statuses(fields) == {
        (6, f"{FB}.out_cache_loc_swa"): "missing", (15, f"{FB}.out_cache_loc_swa"): "missing",  # the hook's upstream annotation
        (6, f"{FB}.token_to_kv_pool"): "unknown", (10, f"{SA}.cuda_graph_bs"): "missing"}
    assert "sets 'token_to_kv_pool' on other objects" in fields[(6, f"{FB}.token_to_kv_pool")]["detail"]
    assert all(fields[key]["breaking"] for key in fields if fields[key]["status"] == "missing") and code == 1
    # 0.5.17 also dropped all_extend_in_batch (can_run_dp_cuda_graph stays, forward_batch_info.py:478);
    # server_args.py:8578 `setattr(self, field, value)`; multi_layer_eagle_worker_v2.py:635 sets token_to_kv_pool
    code, fields = _fields(tmp_path, PLUGIN, "0.5.17")
    assert _statuses(fields) == {
        (6, f"{FB}.out_cache_loc_swa"): "missing", (15, f"{FB}.out_cache_loc_swa"): "missing", (6, f"{FB}.all_extend_in_batch"): "missing",
        (6, f"{FB}.token_to_kv_pool"): "unknown", (10, f"{SA}.cuda_graph_bs"): "unknown"}
    assert code == 1
    # 0.5.23 dropped can_run_dp_cuda_graph too, and assembles ServerArgs from namespace classes
    # (server_args.py:551 msgspec.defstruct), none of which declares cuda_graph_bs (ExecGraph declares
    # cuda_graph_bs_decode, arg_groups/fields/exec_.py:640)
    code, fields = _fields(tmp_path, PLUGIN, "0.5.23")
    assert _statuses(fields) == {
        (6, f"{FB}.out_cache_loc_swa"): "missing", (15, f"{FB}.out_cache_loc_swa"): "missing", (6, f"{FB}.all_extend_in_batch"): "missing",
        (6, f"{FB}.can_run_dp_cuda_graph"): "missing", (10, f"{SA}.cuda_graph_bs"): "missing", (6, f"{FB}.token_to_kv_pool"): "unknown"}
    assert all(f["breaking"] for f in fields.values() if f["status"] == "missing") and code == 1


def test_a_plugin_written_for_the_newer_releases(releases, tmp_path):
    # cuda_graph_bs_decode: server_args.py:1947 (0.5.14), :1833 (0.5.17), ExecGraph in
    # arg_groups/fields/exec_.py:640 (0.5.23); disable_cuda_graph likewise; the hasattr guard is false there
    for version in ("0.5.14", "0.5.17", "0.5.23"):
        code, fields = _fields(tmp_path, NEWER, version)
        guarded = fields[(6, f"{FB}.out_cache_loc_swa")]
        assert guarded["status"] == "missing" and guarded["guard"]["outcome"] == "skipped" and not guarded["breaking"], version
        assert len(fields) == 1 and code == 0, (version, fields)
    # on 0.5.11 the newer field is missing, but the function returns before it: hasattr is true there
    code, fields = _fields(tmp_path, NEWER, "0.5.11")
    newer = fields[(7, f"{SA}.cuda_graph_bs_decode")]
    assert set(fields) == {(7, f"{SA}.cuda_graph_bs_decode")} and newer["status"] == "missing"
    assert newer["guard"]["outcome"] == "skipped" and not newer["breaking"] and code == 0


RUNTIMES = """
from sglang.srt.model_executor.model_runner_components.ngram_embedding_manager import NgramEmbeddingManager


def read_k(manager: NgramEmbeddingManager):
    return manager.k, manager.table
"""


def test_writes_in_another_runtime_of_the_package_are_no_evidence(releases, tmp_path):
    # 0.5.23's NgramEmbeddingManager (model_runner_components/ngram_embedding_manager.py:25) declares
    # `table` but no `k`; the only `.k = …` on a handed object is in sglang.multimodal_gen
    # (runtime/layers/kvcache/qvg_packed_cache.py:212), a separate runtime whose code never
    # receives an srt object: the read is missing, not undecided
    code, fields = _fields(tmp_path, RUNTIMES, "0.5.23")
    target = "sglang.srt.model_executor.model_runner_components.ngram_embedding_manager.NgramEmbeddingManager"
    assert _statuses(fields) == {(5, f"{target}.k"): "missing"}, fields
    assert "multimodal_gen" not in fields[(5, f"{target}.k")]["detail"] and code == 1


# 0.5.23's ServerArgs takes the fields of its namespace classes (arg_groups/fields/__init__.py:31
# msgspec.structs.fields): annotated names only. ExecMamba's `enable_mamba_extra_buffer =
# Derived(...)` (arg_groups/fields/exec_.py:474) is an unannotated class attribute, so no field
# (F05 variant s2); cuda_graph_bs_decode is annotated (exec_.py:640). Read through the settings
# name, an annotated parameter, or a hook's target
DERIVED = {
    "settings_name": "def flags(server_args):\n    return server_args.enable_mamba_extra_buffer, server_args.cuda_graph_bs_decode\n\n\ndef register():\n    pass\n",
    "annotated_parameter": ("from sglang.srt.server_args import ServerArgs\n\n\n"
                            "def flags(args: ServerArgs):\n    return args.enable_mamba_extra_buffer, args.cuda_graph_bs_decode\n\n\ndef register():\n    pass\n"),
    "getattr_by_name": ("from sglang.srt.server_args import ServerArgs\n\n\n"
                        "def flags(args: ServerArgs):\n    return getattr(args, 'enable_mamba_extra_buffer'), getattr(args, 'cuda_graph_bs_decode')\n\n\n"
                        "def register():\n    pass\n"),
}


@pytest.mark.parametrize("spelling", sorted(DERIVED))
def test_an_unannotated_attribute_of_a_namespace_class_is_no_field(releases, tmp_path, spelling):
    code, fields = _fields(tmp_path, DERIVED[spelling], "0.5.23")
    statuses = {target.rsplit(".", 1)[-1]: f["status"] for (_, target), f in fields.items()}
    assert statuses.get("enable_mamba_extra_buffer") == "missing" and statuses.get("cuda_graph_bs_decode", "ok") == "ok", fields
    assert code == 1
