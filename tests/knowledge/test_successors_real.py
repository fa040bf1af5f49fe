"""Successors on real SGLang releases (issue 18 kind 14): `diff` from 0.5.17 to 0.5.23 names the
successor of a vanished symbol where the release source shows it moved or was renamed, and
none where the only link is a close or equal name in unrelated code (what it named before)."""

from __future__ import annotations

import pytest
from knowledge_support import by_target, harness_json
from real_releases import real_releases
from test_successors import hooks_plugin

pytestmark = [pytest.mark.network, pytest.mark.slow]

# target on 0.5.17 -> (successor on 0.5.23, words of the evidence)
RIGHT = {
    # schedule_batch.py:1228 (0.5.17) `Req._refresh_fill_ids` is `Req.refresh_fill_ids` at
    # schedule_batch.py:1672 (0.5.23), the body unchanged
    "sglang.srt.managers.schedule_batch.Req._refresh_fill_ids": (
        "sglang.srt.managers.schedule_batch.Req.refresh_fill_ids", "100% like the old one"),
    # disaggregation/encode_receiver.py:322 -> disaggregation/encoder/receiver.py:364: the
    # module moved into a subpackage of its own package
    "sglang.srt.disaggregation.encode_receiver._grpc_target": (
        "sglang.srt.disaggregation.encoder.receiver._grpc_target", "family of sglang.srt.disaggregation.encode_receiver"),
    # mm_utils.py:919 -> mm_schedule.py:655 (mm_utils.py:502 of 0.5.23 only mentions it in a
    # comment, which made embed_mm_inputs its "successor" before)
    "sglang.srt.managers.mm_utils._get_multimodal_mask": (
        "sglang.srt.managers.mm_schedule._get_multimodal_mask", "family of sglang.srt.managers.mm_utils"),
    # compilation/weak_ref_tensor.py:17 -> model_executor/runner_backend_utils/weak_ref_tensor.py:17:
    # another package, the same body
    "sglang.srt.compilation.weak_ref_tensor.weak_ref_tensors": (
        "sglang.srt.model_executor.runner_backend_utils.weak_ref_tensor.weak_ref_tensors", "100% like the old one"),
    # re-exported by distributed/__init__.py:2 (`from ...parallel_state import *`) until 0.5.23's
    # parallel_state.py:3555 `__all__` left it out; parallel_state.py:3228 still defines it
    "sglang.srt.distributed.get_pipeline_model_parallel_rank": (
        "sglang.srt.distributed.parallel_state.get_pipeline_model_parallel_rank", "family of sglang.srt.distributed"),
    # model_runner.py:1276-1279 (0.5.17) only called numa_utils.init_threads_binding, which 0.5.23 keeps
    "sglang.srt.model_executor.model_runner.ModelRunner.init_threads_binding": (
        "sglang.srt.utils.numa_utils.init_threads_binding", "only called numa_utils.init_threads_binding"),
}
NONE = [
    # inherited from MultiPlatformOp (multi_platform.py:88 of 0.5.17); on 0.5.23 Compressor
    # (layers/attention/dsv4/compressor.py:37) derives from BaseFusedOp, whose forward_kda
    # (kernels/fused_op.py:432) is only a close name: it was the "successor" before
    "sglang.srt.layers.attention.dsv4.compressor.Compressor.forward_cuda",
    # multi_platform.py:109 of 0.5.17; 0.5.23 defines dispatch_forward only on the multimodal
    # CustomOp (multimodal_gen/runtime/layers/custom_op.py:93), which was the "successor" before
    "sglang.srt.layers.utils.multi_platform.MultiPlatformOp.dispatch_forward",
    # compilation/pass_manager.py:47 of 0.5.17; was ProfileManager.configure (utils/profile_utils.py:92)
    "sglang.srt.compilation.pass_manager.PostGradPassManager.configure",
]


@pytest.fixture(scope="module")
def releases():
    return real_releases("sglang==0.5.17", "sglang==0.5.23")


def test_real_successors_rest_on_evidence(releases, tmp_path):
    root = hooks_plugin(tmp_path, [*RIGHT, *NONE])
    code, doc = harness_json("diff", "--from", "sglang==0.5.17", "--to", "sglang==0.5.23", "--plugin", str(root), "--out", str(tmp_path / "out"))
    assert code == 0, doc
    findings = by_target(doc["findings"])
    for target, (successor, evidence) in RIGHT.items():
        finding = findings[target]
        assert finding["status"] == "missing" and finding["successor"] == successor, (target, finding)
        assert evidence in finding["successor_reason"], (target, finding["successor_reason"])
    for target in NONE:
        assert findings[target]["status"] == "missing" and findings[target]["successor"] is None, (target, findings[target])
