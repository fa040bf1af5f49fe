"""Issue 19, items 2 and 3: on a generated ~100-module plugin against a generated two-version
upstream (tests/support/triage_plugin.py), one feature per upstream change, each saying when
the plugin fails, ranked by it — the three startup blockers first; and the same on the real
sglang 0.5.17 → 0.5.23 wheels."""

from __future__ import annotations

from pathlib import Path

import pytest
from knowledge_support import write_tree
from real_releases import real_releases
from triage_plugin import FAMILY, MOE_MODELS, write_case

from harness.knowledge.products.diffing import diff_upstreams
from harness.knowledge.products.triage import group_features
from harness.knowledge.upstream.source import resolve_upstream

OLD_FAMILY = "sglang.kernels.ops.attention.dsv4.elementwise"
NEW_FAMILY = "sglang.kernels.ops.attention.dsv4.norm_rope"


def _features(old: str, new: str, plugin: Path):
    before, after = resolve_upstream(old), resolve_upstream(new)
    return group_features(diff_upstreams(before, after, plugin), before, after)


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return write_case(tmp_path_factory.mktemp("triage"))


def test_one_feature_per_upstream_change_startup_blockers_first(case):
    old, new, plugin = case
    assert sum(1 for _ in plugin.rglob("*.py")) >= 100  # the size of the plugin in the issue
    features = _features(str(old), str(new), plugin)
    impacted = [f for f in features if f.kind == "impacted"]
    # one feature per upstream change: four breaking changes, three body changes (warnings)
    assert len(impacted) == 7, [f.title for f in impacted]
    targets = [t for f in impacted for t in f.targets]
    assert len(targets) == len(set(targets))  # no upstream symbol in two features
    titles = [f.title for f in impacted]
    assert len(set(titles)) == len(titles) and not any("replaces" in t for t in titles)

    # the three startup blockers first: the two every model hits, then the MoE models' one
    first = [f.id for f in impacted[:3]]
    assert first == ["numa-utils-set-cpu-affinity", "parallel-state-groupcoordinator", "layer-create-moe-dispatcher"] or \
        first == ["parallel-state-groupcoordinator", "numa-utils-set-cpu-affinity", "layer-create-moe-dispatcher"]
    by_id = {f.id: f for f in impacted}
    scheduler = new / "sglang/srt/managers/scheduler.py"
    affinity = by_id["numa-utils-set-cpu-affinity"]
    assert affinity.fails_at == "startup" and affinity.sites == ["xpu_plugin/numa.py:4"]
    assert affinity.title == "numa_utils.set_cpu_affinity: signature changed (tp_rank removed, nnodes removed)"
    assert affinity.proof == f"sglang/srt/managers/scheduler.py:{_line_of(scheduler, 'set_cpu_affinity(gpu_id)')}"
    assert "Scheduler.__init__ → numa_utils.set_cpu_affinity" in affinity.fails_reason

    # the plugin's call sits in its REPLACE hook on init_model_parallel_group, which
    # initialize_model_parallel calls when process groups are set up
    group = by_id["parallel-state-groupcoordinator"]
    assert group.fails_at == "startup" and group.sites == ["xpu_plugin/distributed.py:7"]
    assert group.title == "parallel_state.GroupCoordinator: signature changed (use_custom_allreduce removed)"
    state = new / "sglang/srt/distributed/parallel_state.py"
    assert group.proof == f"sglang/srt/distributed/parallel_state.py:{_line_of(state, '_TP = init_model_parallel_group(')}"
    assert "through the hook on parallel_state.init_model_parallel_group at xpu_plugin/distributed.py:5" in group.fails_reason

    # every MoE model's construction calls the factory with the argument the plugin's replacement lacks
    factory = by_id["layer-create-moe-dispatcher"]
    assert factory.fails_at == "startup" and factory.hits == len(MOE_MODELS)
    assert all(model in factory.fails_reason for model in MOE_MODELS)
    layer = new / "sglang/srt/layers/moe/layer.py"
    assert factory.proof == f"sglang/srt/layers/moe/layer.py:{_line_of(layer, 'self.dispatcher = create_moe_dispatcher(')}"

    # the kernel family moved between modules: one feature, both plugin sites, on the DeepSeek-V4 path
    family = impacted[3]
    assert family.id == "elementwise-to-norm-rope" and family.fails_at == "path"
    assert family.title == f"dsv4.elementwise → dsv4.norm_rope: {', '.join(sorted(FAMILY))}"
    assert family.targets == sorted([f"{OLD_FAMILY}.{n}" for n in FAMILY] + [f"{NEW_FAMILY}.{n}" for n in FAMILY])
    assert family.sites == ["xpu_plugin/models/deepseek_v4.py:8", "xpu_plugin/models/dsv4_kernels.py:2"]
    assert "deepseek_v4 model" in family.fails_reason
    assert family.proof.startswith("sglang/srt/models/deepseek_v4.py:")

    # the rest never fail: warnings, last
    assert [f.fails_at for f in impacted[4:]] == ["never"] * 3
    assert all(f.fails_reason and "body" in f.fails_reason for f in impacted[4:])


def test_a_module_level_import_fails_at_plugin_load_a_setattr_does_not(case, tmp_path):
    old, new, _ = case
    plugin = tmp_path / "p"
    write_tree(plugin, {
        "pyproject.toml": '[project]\nname = "p"\nversion = "0.1"\n[project.entry-points."sglang.srt.plugins"]\np = "p:load"\n',
        "p/__init__.py": f"""
            from sglang.srt.distributed import parallel_state
            from {OLD_FAMILY} import fused_rope_inplace


            def _set_affinity(gpu_id, tp_rank, nnodes):
                return None


            def load():
                return fused_rope_inplace


            def _ensure(*args, **kwargs):
                return None


            # assigning a module attribute never raises: the patch is lost where upstream called it
            setattr(parallel_state, "ensure_model_parallel_initialized", _ensure)


            def helper(group_ranks):
                # called only by the plugin's own code: when it runs is not known
                return parallel_state.GroupCoordinator(group_ranks, 0, "gloo", use_custom_allreduce=True)
            """,
    })
    impacted = {f.id: f for f in _features(str(old), str(new), plugin) if f.kind == "impacted"}
    family = impacted["fused-rope-inplace"]
    assert family.title == "dsv4.elementwise → dsv4.norm_rope: fused_rope_inplace"
    assert family.fails_at == "import" and "skips the whole plugin" in family.fails_reason
    loader = new / "sglang/srt/plugins/__init__.py"
    assert family.proof == f"sglang/srt/plugins/__init__.py:{_line_of(loader, 'func = ep.load()')}"
    # the call inside a helper nothing upstream calls: undecided, not guessed
    helper = impacted["parallel-state-groupcoordinator"]
    assert helper.fails_at is None and helper.fails_reason.startswith("undecided: p.helper is called by the plugin's own code")
    # the patch of a function the new release dropped: not at import; the old release called it
    # when process groups were set up, and the plugin's code no longer runs there
    patch = impacted["parallel-state-ensure-model-parallel-initialized"]
    assert patch.fails_at == "startup" and "where the old release called" in patch.fails_reason
    old_state = old / "sglang/srt/distributed/parallel_state.py"
    assert patch.proof == f"sglang/srt/distributed/parallel_state.py:{_line_of(old_state, '    ensure_model_parallel_initialized(')}"
    assert next(iter(impacted)) == "fused-rope-inplace"  # the plugin-load failure ranks first


@pytest.mark.network
@pytest.mark.slow
def test_real_moved_family_and_moe_factory_on_0_5_17_to_0_5_23(tmp_path):
    real_releases("sglang==0.5.17", "sglang==0.5.23")
    plugin = tmp_path / "rp"
    write_tree(plugin, {
        "pyproject.toml": '[project]\nname = "rp"\nversion = "0.1"\n[project.entry-points."sglang.srt.plugins"]\nrp = "rp.plugin:load"\n',
        "rp/__init__.py": "",
        "rp/plugin.py": """
            from rp import kernels, moe  # noqa: F401


            def load():
                return None
            """,
        # 0.5.17 sglang/kernels/ops/attention/dsv4/elementwise.py:109,140,260 define these;
        # 0.5.23 has no elementwise.py: norm_rope.py:142,193,304 define them
        "rp/kernels.py": f"""
            from {OLD_FAMILY} import (
                fused_k_norm_rope_flashmla,
                fused_q_norm_rope,
                fused_rope_inplace,
            )
            """,
        # 0.5.17 sglang/srt/layers/moe/fused_moe_triton/layer.py:137 create_moe_dispatcher(moe_runner_config);
        # 0.5.23 layer.py:175 takes (moe_runner_config, quant_method), called so at layer.py:595 in FusedMoE.__init__
        "rp/moe.py": """
            from sglang.srt.plugins.hook_registry import HookType, plugin_hook


            @plugin_hook("sglang.srt.layers.moe.fused_moe_triton.layer.create_moe_dispatcher", type=HookType.REPLACE)
            def create_moe_dispatcher(moe_runner_config):
                return None
            """,
    })
    impacted = [f for f in _features("sglang==0.5.17", "sglang==0.5.23", plugin) if f.kind == "impacted"]
    assert [f.id for f in impacted] == ["elementwise-to-norm-rope", "layer-create-moe-dispatcher"]
    family, factory = impacted
    assert family.title == "dsv4.elementwise → dsv4.norm_rope: fused_k_norm_rope_flashmla, fused_q_norm_rope, fused_rope_inplace"
    assert family.fails_at == "import" and family.sites == ["rp/kernels.py:1"]
    # 0.5.23 sglang/srt/plugins/__init__.py:80: `func = ep.load()` inside try/except Exception
    assert family.proof == "sglang/srt/plugins/__init__.py:80"
    assert factory.title == "layer.create_moe_dispatcher: signature changed (quant_method added)"
    assert factory.fails_at == "startup" and factory.proof == "sglang/srt/layers/moe/fused_moe_triton/layer.py:595"
    assert "mixtral" in factory.fails_reason and factory.hits >= 5  # every model that builds a FusedMoE
