"""Successors only with evidence (issue 18 kind 14): `diff` names what replaces a symbol that is
gone only when a member names the old one in a rename / deprecation note or as the legacy name,
the old body was a wrapper of a remaining function, git saw the file renamed, a new name has a
body like the old one, or the same qualified tail is defined in the same module family. A close
name alone, or the same name in unrelated code, is no successor."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair
from knowledge_support import by_target, git, harness_json, write_tree
from sglang_api import HOOK_REGISTRY

SCHED = "sglang.srt.managers.scheduler.Scheduler"
OP = "sglang.srt.layers.utils.multi_platform.MultiPlatformOp"
COMPRESSOR = "sglang.srt.layers.attention.compressor.Compressor"

BATCH_BODY = """
                batch = [r for r in batch if not r.finished]
                batch.sort(key=lambda r: r.priority)
                self.running = batch
                return len(batch)
"""

OLD = {
    "sglang/srt/layers/utils/__init__.py": "",
    "sglang/srt/layers/utils/multi_platform.py": """
        class MultiPlatformOp:
            def __init__(self):
                self._forward_method = self.dispatch_forward()

            def dispatch_forward(self):
                return self.forward_cuda

            def forward_native(self, *args, **kwargs):
                raise NotImplementedError

            def forward_cuda(self, *args, **kwargs):
                raise NotImplementedError
        """,
    "sglang/srt/layers/attention/compressor.py": """
        from sglang.srt.layers.utils.multi_platform import MultiPlatformOp

        class Compressor(MultiPlatformOp):
            def forward_native(self, x):
                return x
        """,
    "sglang/srt/layers/elementwise.py": """
        def fused_add_rmsnorm(x, residual, weight, eps):
            x = x + residual
            return x * weight
        """,
    "sglang/srt/distributed/__init__.py": "from sglang.srt.distributed.parallel_state import *\n",
    "sglang/srt/distributed/parallel_state.py": """
        def get_pp_rank():
            return 0
        """,
    "sglang/srt/managers/scheduler.py": """
        class Scheduler:
            def get_next_batch(self):
                return None

            def _refresh_batch(self, batch):""" + BATCH_BODY + """
            def get_load(self):
                return len(self.running)

            def update_stats(self, stats):
                self.stats = stats

            def poll(self):
                return self.queue.get_nowait()
        """,
}

NEW = {
    "sglang/kernels/__init__.py": "",
    "sglang/kernels/fused_op.py": """
        class BaseFusedOp:
            def forward_native(self, *args, **kwargs):
                raise NotImplementedError

            def forward_kda(self, *args, **kwargs):
                raise NotImplementedError

            def _resolve_forward_method(self):
                return self.forward_native
        """,
    "sglang/srt/layers/utils/__init__.py": "",
    "sglang/srt/layers/utils/multi_platform.py": """
        from sglang.kernels.fused_op import BaseFusedOp

        class MultiPlatformOp(BaseFusedOp):
            \"\"\"Deprecated alias of BaseFusedOp.\"\"\"
        """,
    "sglang/srt/layers/attention/compressor.py": """
        from sglang.kernels.fused_op import BaseFusedOp

        class Compressor(BaseFusedOp):
            def forward_native(self, x):
                return x
        """,
    # an unrelated package defines a method of the same name
    "sglang/multimodal_gen/__init__.py": "",
    "sglang/multimodal_gen/runtime/__init__.py": "",
    "sglang/multimodal_gen/runtime/layers/__init__.py": "",
    "sglang/multimodal_gen/runtime/layers/custom_op.py": """
        class CustomOp:
            def dispatch_forward(self):
                return self.forward_native
        """,
    # the package stops re-exporting what its submodule still defines
    "sglang/srt/distributed/__init__.py": "from sglang.srt.distributed.parallel_state import *\n",
    "sglang/srt/distributed/parallel_state.py": """
        __all__ = ["get_tp_rank"]

        def get_tp_rank():
            return 0

        def get_pp_rank():
            return 0
        """,
    # the function moved within sglang.srt.layers, and changed
    "sglang/srt/layers/norm_rope.py": """
        def fused_add_rmsnorm(x, residual, weight, eps, *, inplace=False):
            if inplace:
                residual += x
                return residual * weight
            return (x + residual) * weight
        """,
    "sglang/srt/managers/scheduler.py": """
        class Scheduler:
            def get_next_batch(self):
                return None

            def refresh_batch(self, batch):
                # drop finished requests, then order by priority""" + BATCH_BODY + """
            def get_lora(self, name):
                return self.loras[name]

            def record_stats(self, stats):
                \"\"\"Replaces update_stats (renamed in 0.10).\"\"\"
                self.stats = stats
                self.history.append(stats)

            def handle(self):
                # like poll, but blocking
                return self.queue.get()
        """,
}

TARGETS = [f"{COMPRESSOR}.forward_cuda", f"{OP}.dispatch_forward", "sglang.srt.layers.elementwise.fused_add_rmsnorm", "sglang.srt.distributed.get_pp_rank",
           f"{SCHED}._refresh_batch", f"{SCHED}.get_load", f"{SCHED}.update_stats", f"{SCHED}.poll"]


def hooks_plugin(tmp_path, targets: list[str]):
    lines = "".join(f'    HookRegistry.register("{t}", _replacement, HookType.REPLACE)\n' for t in targets)
    return plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"hooks": "hooks:register"}),
        "hooks.py": "from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n\n"
                    "def _replacement(*args, **kwargs):\n    return None\n\n\ndef register():\n" + lines,
    })


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old=OLD, new=NEW)


def test_diff_names_successors_only_with_evidence(upstreams, tmp_path):
    old, new = upstreams
    code, doc = harness_json("diff", "--from", old, "--to", new, "--plugin", str(hooks_plugin(tmp_path, TARGETS)), "--out", str(tmp_path / "out"))
    assert code == 0, doc
    findings = by_target(doc["findings"])
    assert all(findings[t]["status"] == "missing" for t in TARGETS), {t: findings[t]["status"] for t in TARGETS}
    successor = {t: (findings[t]["successor"], findings[t]["successor_reason"]) for t in TARGETS}
    # a method renamed on its class, its body unchanged
    assert successor[f"{SCHED}._refresh_batch"][0] == f"{SCHED}.refresh_batch"
    assert "100% like the old one" in successor[f"{SCHED}._refresh_batch"][1]
    # the new method's docstring says it replaces the old one
    assert successor[f"{SCHED}.update_stats"][0] == f"{SCHED}.record_stats"
    assert "names update_stats" in successor[f"{SCHED}.update_stats"][1]
    # the same function in the same package family (sglang.srt.layers), though its body changed
    moved = successor["sglang.srt.layers.elementwise.fused_add_rmsnorm"]
    assert moved[0] == "sglang.srt.layers.norm_rope.fused_add_rmsnorm" and "family of sglang.srt.layers.elementwise" in moved[1]
    # the package's submodule still defines the name it no longer re-exports
    assert successor["sglang.srt.distributed.get_pp_rank"][0] == "sglang.srt.distributed.parallel_state.get_pp_rank"
    # no evidence, no successor: a close name on the new base (forward_kda, 0.87 alike), a close
    # new name with another body (get_lora), a comment that merely mentions the old name, and
    # the same method name on a class of an unrelated package (multimodal_gen's CustomOp)
    for target in (f"{COMPRESSOR}.forward_cuda", f"{SCHED}.get_load", f"{SCHED}.poll", f"{OP}.dispatch_forward"):
        assert successor[target] == (None, None), (target, successor[target])


def test_check_on_one_release_names_a_misspelling_but_guesses_no_rename(upstreams, tmp_path):
    _, new = upstreams
    root = hooks_plugin(tmp_path, [f"{SCHED}.get_next_btach", f"{SCHED}.get_load", f"{SCHED}.update_stats", f"{COMPRESSOR}.forward_cuda"])
    code, doc = check(root, new)
    assert code == 1
    findings = by_target(doc["findings"])
    typo = findings[f"{SCHED}.get_next_btach"]
    assert typo["successor"] == f"{SCHED}.get_next_batch" and "misspelling" in typo["successor_reason"]
    # without the older release there is no body to compare: a close name is no rename
    assert findings[f"{SCHED}.get_load"]["successor"] is None
    assert findings[f"{COMPRESSOR}.forward_cuda"]["successor"] is None
    # a rename note needs no older release
    assert findings[f"{SCHED}.update_stats"]["successor"] == f"{SCHED}.record_stats"


def test_a_file_renamed_in_git_history_carries_its_functions(tmp_path):
    """Between two refs of one repo, `git diff -M` sees the module's file renamed: its functions
    are where the file went, even in another package family and with a changed body."""
    repo = tmp_path / "sglang-git"
    body = "".join(f"    step_{i} = x + {i}\n" for i in range(12))
    write_tree(repo, {
        "python/sglang/__init__.py": "",
        "python/sglang/srt/plugins/__init__.py": "",
        "python/sglang/srt/plugins/hook_registry.py": HOOK_REGISTRY,
        "python/sglang/srt/distributed/__init__.py": "",
        "python/sglang/srt/distributed/vmm_utils.py": f"def check_drv(x):\n{body}    return x\n",
    })
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "v1")
    git(repo, "tag", "v1")
    (repo / "python/sglang/srt/utils").mkdir(parents=True)
    (repo / "python/sglang/srt/utils/__init__.py").write_text("")
    git(repo, "mv", "python/sglang/srt/distributed/vmm_utils.py", "python/sglang/srt/utils/cuda_vmm_utils.py")
    moved = repo / "python/sglang/srt/utils/cuda_vmm_utils.py"
    moved.write_text(moved.read_text().replace("return x", "return x * 2").replace("+ 0", "- 0").replace("+ 1\n", "- 1\n"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "move vmm utils")
    git(repo, "tag", "v2")
    root = hooks_plugin(tmp_path, ["sglang.srt.distributed.vmm_utils.check_drv"])
    code, doc = harness_json("diff", "--from", f"{repo}@v1", "--to", f"{repo}@v2", "--plugin", str(root), "--out", str(tmp_path / "out"))
    assert code == 0, doc
    finding = by_target(doc["findings"])["sglang.srt.distributed.vmm_utils.check_drv"]
    assert finding["successor"] == "sglang.srt.utils.cuda_vmm_utils.check_drv"
    assert "git diff -M" in finding["successor_reason"] and "cuda_vmm_utils.py" in finding["successor_reason"]
