"""Fields of upstream objects on real SGLang releases (issue 18 kind 12): ForwardBatch lost its
pool fields after 0.5.11, ServerArgs replaced `cuda_graph_bs` by `cuda_graph_bs_decode` (and
0.5.23 assembles its fields from namespace classes). Each read is judged against the class as
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
    return fb.token_to_kv_pool, fb.req_to_token_pool, fb.seq_lens


def graph_sizes(server_args):
    return server_args.cuda_graph_bs, server_args.tp_size


def before_forward(self, forward_batch, skip_attn_backend_init=False):
    # the class comes from ModelRunner.forward's own annotation (forward_batch: ForwardBatch)
    return forward_batch.token_to_kv_pool


def register():
    HookRegistry.register("sglang.srt.model_executor.model_runner.ModelRunner.forward", before_forward, HookType.BEFORE)
"""
NEWER = """
from sglang.srt.model_executor.forward_batch_info import ForwardBatch


def graph_sizes(server_args, fb: ForwardBatch):
    if hasattr(fb, "token_to_kv_pool"):
        return fb.token_to_kv_pool
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


def test_fields_dropped_after_the_base_release(releases, tmp_path):
    # 0.5.11 declares all three: forward_batch_info.py:373 `req_to_token_pool: ReqToTokenPool = None`,
    # :374 `token_to_kv_pool: KVCache = None`; server_args.py:636 `cuda_graph_bs: Optional[List[int]] = None`
    code, fields = _fields(tmp_path, PLUGIN, "0.5.11")
    assert fields == {} and code == 0, fields
    # 0.5.14 dropped both pools from ForwardBatch (forward_batch_info.py:336 keeps only a comment) and
    # renamed cuda_graph_bs to cuda_graph_bs_decode (server_args.py:1947); but ServerArgs also sets
    # attributes by computed name (server_args.py:2754 `setattr(self, attr, "dsv4")`): undecided there
    code, fields = _fields(tmp_path, PLUGIN, "0.5.14")
    assert fields[(6, f"{FB}.token_to_kv_pool")]["status"] == "missing" and fields[(6, f"{FB}.token_to_kv_pool")]["breaking"]
    assert fields[(6, f"{FB}.req_to_token_pool")]["status"] == "missing"
    assert fields[(15, f"{FB}.token_to_kv_pool")]["status"] == "missing"  # through the hook's upstream annotation
    assert fields[(10, f"{SA}.cuda_graph_bs")]["status"] == "unknown" and "computed name" in fields[(10, f"{SA}.cuda_graph_bs")]["detail"]
    assert (6, f"{FB}.seq_lens") not in fields and (10, f"{SA}.tp_size") not in fields
    assert code == 1
    # 0.5.17: the same (forward_batch_info.py:426 a comment; server_args.py:8578 `setattr(self, field, value)`)
    code, fields = _fields(tmp_path, PLUGIN, "0.5.17")
    assert {key for key, f in fields.items() if f["status"] == "missing"} == {
        (6, f"{FB}.token_to_kv_pool"), (6, f"{FB}.req_to_token_pool"), (15, f"{FB}.token_to_kv_pool")}
    assert fields[(10, f"{SA}.cuda_graph_bs")]["status"] == "unknown" and code == 1
    # 0.5.23 assembles ServerArgs from namespace classes (server_args.py:551 msgspec.defstruct), none
    # of which declares cuda_graph_bs (arg_groups/fields/exec_.py:640 declares cuda_graph_bs_decode)
    code, fields = _fields(tmp_path, PLUGIN, "0.5.23")
    assert {key for key, f in fields.items() if f["status"] == "missing"} == {
        (6, f"{FB}.token_to_kv_pool"), (6, f"{FB}.req_to_token_pool"), (15, f"{FB}.token_to_kv_pool"), (10, f"{SA}.cuda_graph_bs")}
    assert all(f["breaking"] for f in fields.values()) and code == 1


def test_a_plugin_written_for_the_newer_releases(releases, tmp_path):
    # cuda_graph_bs_decode: server_args.py:1947 (0.5.14), :1833 (0.5.17), ExecGraph in
    # arg_groups/fields/exec_.py:640 (0.5.23); disable_cuda_graph likewise; the hasattr guard is false there
    for version in ("0.5.14", "0.5.17", "0.5.23"):
        code, fields = _fields(tmp_path, NEWER, version)
        guarded = fields[(6, f"{FB}.token_to_kv_pool")]
        assert guarded["status"] == "missing" and guarded["guard"]["outcome"] == "skipped" and not guarded["breaking"], version
        assert len(fields) == 1 and code == 0, (version, fields)
    # on 0.5.11 the newer field is missing, but the function returns before it: hasattr is true there
    code, fields = _fields(tmp_path, NEWER, "0.5.11")
    newer = fields[(7, f"{SA}.cuda_graph_bs_decode")]
    assert set(fields) == {(7, f"{SA}.cuda_graph_bs_decode")} and newer["status"] == "missing"
    assert newer["guard"]["outcome"] == "skipped" and not newer["breaking"] and code == 0
