"""Issue 19, item 2: the forms of "one upstream change a person decides once", each one feature
listing every plugin site, titled old → new with enough of the path to tell them apart. The
findings are shaped as the judge writes them for the real 0.5.17 → 0.5.23 changes cited."""

from __future__ import annotations

from harness.knowledge.products.diffing import FeatureDiff, SymbolChange
from harness.knowledge.model.findings import Finding, Status
from harness.knowledge.products.triage import group_features

IFACE = "sglang.srt.platforms.interface.SRTPlatform"
ALLOC = "sglang.srt.mem_cache.allocator"


def _diff(findings: list[Finding], changes: list[SymbolChange] | None = None) -> FeatureDiff:
    return FeatureDiff(from_label="a", to_label="b", from_fingerprint="a", to_fingerprint="b", generated_at="now",
                       files={}, changes=changes or [], findings=findings)


def _missing(target: str, successor: str, file: str, line: int, kind: str = "import", **extra) -> Finding:
    return Finding(kind=kind, target=target, status=Status.missing, successor=successor, file=file, line=line,
                   scope="module", **extra)


def test_a_renamed_class_and_its_methods_are_one_feature():
    # a class renamed in its module, the plugin subclassing it and calling two of its methods
    findings = [
        _missing(f"{ALLOC}.TokenToKVPoolAllocator", f"{ALLOC}.KVAllocator", "p/pool.py", 3),
        _missing(f"{ALLOC}.TokenToKVPoolAllocator.alloc", f"{ALLOC}.KVAllocator.alloc", "p/pool.py", 9, kind="subclass",
                 runs_in="p.pool.Pool.grow"),
        _missing(f"{ALLOC}.TokenToKVPoolAllocator.free", f"{ALLOC}.KVAllocator.free", "p/pool.py", 12, kind="subclass",
                 runs_in="p.pool.Pool.shrink"),
    ]
    [feature] = group_features(_diff(findings))
    assert feature.title == "allocator.TokenToKVPoolAllocator → allocator.KVAllocator: alloc, free"
    assert feature.sites == ["p/pool.py:3", "p/pool.py:9", "p/pool.py:12"]
    assert feature.changes == 3 and feature.fails_at == "import"  # the class statement at module level


def test_methods_one_new_method_replaces_are_one_feature():
    # 0.5.23 sglang/srt/platforms/interface.py: get_kv_pool_cls replaces get_mha_kv_pool_cls and get_mla_kv_pool_cls
    findings = [
        Finding(kind="override", target=f"{IFACE}.get_mha_kv_pool_cls", status=Status.not_on_base,
                successor=f"{IFACE}.get_kv_pool_cls", file="p/platform.py", line=44, runs_in="p.platform.P.get_mha_kv_pool_cls"),
        Finding(kind="override", target=f"{IFACE}.get_mla_kv_pool_cls", status=Status.not_on_base,
                successor=f"{IFACE}.get_kv_pool_cls", file="p/platform.py", line=49, runs_in="p.platform.P.get_mla_kv_pool_cls"),
    ]
    [feature] = group_features(_diff(findings))
    assert feature.id == "get-kv-pool-cls"
    assert feature.title == "SRTPlatform.get_mha_kv_pool_cls, SRTPlatform.get_mla_kv_pool_cls → SRTPlatform.get_kv_pool_cls"
    assert feature.sites == ["p/platform.py:44", "p/platform.py:49"]


def test_families_from_modules_of_one_short_name_are_told_apart():
    # 0.5.17 sglang/kernels/ops/attention/dsv4/elementwise.py:109,140 → 0.5.23 …/dsv4/norm_rope.py:142,193;
    # a second family from another module into the same one stays its own feature
    old, new = "sglang.kernels.ops.attention.dsv4.elementwise", "sglang.kernels.ops.attention.dsv4.norm_rope"
    findings = [
        _missing(f"{old}.fused_rope_inplace", f"{new}.fused_rope_inplace", "p/a.py", 1),
        _missing(f"{old}.fused_q_norm_rope", f"{new}.fused_q_norm_rope", "p/b.py", 2),
        _missing("sglang.jit_kernel.dsv4.elementwise.fused_rope_inplace", "sglang.kernels.jit.dsv4.fused_rope_inplace", "p/c.py", 3),
    ]
    features = group_features(_diff(findings))
    titles = sorted(f.title for f in features)
    assert titles == ["attention.dsv4.elementwise → dsv4.norm_rope: fused_q_norm_rope, fused_rope_inplace",
                      "jit_kernel.dsv4.elementwise → jit.dsv4: fused_rope_inplace"]
    family = next(f for f in features if f.id == "elementwise-to-norm-rope")
    assert family.sites == ["p/a.py:1", "p/b.py:2"]
    assert not any(" replaces " in t for t in titles)


def test_one_signature_change_is_one_feature_with_every_site():
    # 0.5.17 → 0.5.23 sglang/srt/layers/moe/fused_moe_triton/layer.py:137 → :175 create_moe_dispatcher gained quant_method
    target = "sglang.srt.layers.moe.fused_moe_triton.layer.create_moe_dispatcher"
    findings = [Finding(kind="call", target=target, status=Status.signature_changed, breaking=True, file=f"p/m{i}.py", line=i,
                        scope="function", runs_in=f"p.m{i}.build") for i in (1, 2, 3)]
    change = SymbolChange(symbol=target, change="signature_changed", kind="function",
                          detail="(moe_runner_config) -> (moe_runner_config, quant_method)")
    [feature] = group_features(_diff(findings, [change]))
    assert feature.title == "layer.create_moe_dispatcher: signature changed (quant_method added)"
    assert feature.sites == ["p/m1.py:1", "p/m2.py:2", "p/m3.py:3"]
    # called by the plugin's own functions only, and no upstream to walk: undecided, said so
    assert feature.fails_at is None and feature.fails_reason.startswith("undecided:")


def test_warnings_rank_after_failures_whatever_their_risk():
    findings = [
        Finding(kind="hook", target="sglang.srt.layers.ops.op.op", status=Status.body_changed, file="p/x.py", line=1, risk=90,
                hook_type="AROUND", runs_in="p.x.around"),
        _missing("sglang.a.old_mod.f", "sglang.a.new_mod.f", "p/y.py", 2, risk=10),
    ]
    ranked = group_features(_diff(findings))
    assert [(f.id, f.fails_at) for f in ranked] == [("f", "import"), ("op-op", "never")]
