"""`harness port`: copies of real upstream functions (SGLang 0.5.17 release source) carried
into a plugin with device edits, re-ported to the real 0.5.23 by a three-way merge."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from knowledge_support import git, harness, harness_json, write_tree
from real_releases import real_releases

from harness.knowledge.upstream.index import load_index

pytestmark = [pytest.mark.network, pytest.mark.slow]

FROM, TO = "sglang==0.5.17", "sglang==0.5.23"
PS = "sglang.srt.distributed.parallel_state"
POOL = "sglang.srt.mem_cache.memory_pool"
PP_INDICES = "sglang.srt.distributed.utils.get_pp_indices"
ALL_REDUCE = f"{PS}.GroupCoordinator.all_reduce"
ALL_GATHER = f"{PS}.GroupCoordinator.all_gather"
FUSED = "sglang.srt.distributed.communication_op.tensor_model_parallel_fused_allreduce_rmsnorm_quant_per_group"
KV_SIZE = f"{POOL}.MHATokenToKVPool.get_kv_size_bytes"
POOL_CLEAR = f"{POOL}.HybridReqToTokenPool.clear"
INDEX_K = f"{POOL}.DSATokenToKVPool.get_index_k_continuous"


@pytest.fixture(scope="module")
def releases():
    return real_releases(FROM, TO)


def upstream_text(source, target: str, name: str | None = None) -> str:
    """The real upstream function `target` (def line to end), dedented, renamed to `name`."""
    index = load_index(source)
    resolution = index.resolve(target)
    info = index.function_info(resolution.ref)
    lines = (source.root / index.table(resolution.ref.module).path).read_text().splitlines(keepends=True)
    text = textwrap.dedent("".join(lines[info.lineno - 1 : info.end_lineno]))
    if name:
        text = text.replace(f"def {target.rsplit('.', 1)[1]}(", f"def {name}(", 1)
    return text


def edited(text: str, old: str, new: str) -> str:
    """`text` with one device edit; fails loudly when upstream's text no longer has `old`."""
    assert text.count(old) == 1, f"fixture edit anchor not found once: {old!r}"
    return text.replace(old, new)


PP_EDIT = ("    return (start_layer, end_layer)\n", "    return xdev_ops.align_layers(start_layer, end_layer)\n")
REDUCE_EDIT = (  # copies are module-level functions: method bodies dedented by one level
    ("    if self.npu_communicator is not None and not self.npu_communicator.disabled:\n"
     "        return self.npu_communicator.all_reduce(input_)\n"),
    ("    if self.xdev_communicator is not None:\n"
     "        return self.xdev_communicator.all_reduce(input_)\n"),
)
GATHER_EDIT = (
    ("        return torch.distributed.all_gather(\n"
     "            output_tensor_list, input_, group=self.device_group\n"
     "        )\n"),
    "        return xdev_ops.all_gather(output_tensor_list, input_)\n",
)
FUSED_EDIT = ('    """\n    return get_tp_group()', '    """\n    if not xdev_ops.has_fused_ar_rmsnorm():\n        return None\n    return get_tp_group()')
KV_EDIT = ('    assert hasattr(self, "k_buffer")\n    assert hasattr(self, "v_buffer")\n', "    xdev_ops.sync_pool(self)\n")


@pytest.fixture(scope="module")
def plugin(releases, tmp_path_factory) -> Path:
    """A plugin whose hook modules carry real 0.5.17 functions with device edits: REPLACE hooks,
    a module-level copy of a method under another name, a patched method, a hand-written
    replacement and a copy of a function 0.5.23 removed."""
    old, _ = releases
    root = tmp_path_factory.mktemp("xdevport")

    def hook(target: str, body: str) -> str:
        return f"@plugin_hook({target!r}, type=HookType.REPLACE)\n{body}"

    write_tree(root, {
        "pyproject.toml": """
            [project]
            name = "xdevport"
            version = "0.1"
            dependencies = ["sglang==0.5.17"]
            [project.entry-points."sglang.srt.plugins"]
            xdevport = "xdevport.hooks:register"
            """,
        "xdevport/__init__.py": "",
        "xdevport/xdev_ops.py": "def align_layers(a, b):\n    return a, b\n",
        "xdevport/hooks/__init__.py": "def register():\n    from xdevport.hooks import comm, pool, pipeline  # noqa: F401\n",
    })
    header = "import logging\nimport os\nfrom typing import List, Optional, Tuple\n\nimport torch\nfrom sglang.srt.plugins.hook_registry import HookType, plugin_hook\n"
    pipeline = header + "\nfrom xdevport import xdev_ops\n\n\n" + hook(PP_INDICES, edited(upstream_text(old, PP_INDICES), *PP_EDIT))
    comm = (
        header + "from sglang.srt.distributed.communication_op import get_tp_group\nfrom sglang.srt.utils import is_shm_available\n"
        f"from {PS} import _CA_V2_MULTINODE, REDUCE_OP_SUM, inplace_all_reduce, outplace_all_reduce\n\n"
        "from xdevport import xdev_ops\n\nlogger = logging.getLogger(__name__)\n\n\n"
        + hook(ALL_REDUCE, edited(upstream_text(old, ALL_REDUCE, "xdev_all_reduce"), *REDUCE_EDIT)) + "\n\n"
        + hook(ALL_GATHER, edited(upstream_text(old, ALL_GATHER, "xdev_all_gather"), *GATHER_EDIT)) + "\n\n"
        + hook(FUSED, edited(upstream_text(old, FUSED), *FUSED_EDIT))
    )
    pool = (
        header + f"from {POOL} import MHATokenToKVPool, get_tensor_size_bytes\n\nfrom xdevport import xdev_ops\n\n\n"
        + edited(upstream_text(old, KV_SIZE, "xdev_kv_size_bytes"), *KV_EDIT)
        + "\n\nMHATokenToKVPool.get_kv_size_bytes = xdev_kv_size_bytes\n\n\n"
        + hook(POOL_CLEAR, "def clear_pool(self):\n    xdev_ops.reset(self)\n    self.free_slots = list(range(self.size))\n") + "\n\n"
        + hook(INDEX_K, upstream_text(old, INDEX_K, "index_k_continuous").replace("torch.", "xdev_ops.", 1))
    )
    (root / "xdevport/hooks/pipeline.py").write_text(pipeline)
    (root / "xdevport/hooks/comm.py").write_text(comm)
    (root / "xdevport/hooks/pool.py").write_text(pool)
    return root


@pytest.fixture(scope="module")
def ported(plugin):
    code, doc = harness_json("port", "--plugin", str(plugin), "--from", FROM, "--to", TO)
    return code, {p["target"]: p for p in doc["ports"]}


def test_a_copy_whose_edit_is_apart_from_upstreams_change_merges_clean(releases, ported):
    _, new = releases
    code, ports = ported
    pp = ports[PP_INDICES]
    assert pp["status"] == "clean" and pp["copy_of"] == FROM and pp["similarity"] > 0.9
    assert pp["merged"] == edited(upstream_text(new, PP_INDICES), *PP_EDIT)  # upstream's new pp_size==1 branch and the device edit
    assert pp["undefined_names"] == [] and pp["signature_change"] is None
    assert "+    if pp_size == 1:" in pp["patch"] and pp["patch"].startswith("--- a/xdevport/hooks/pipeline.py")
    line = pp["line"] + pp["merged"].splitlines().index(PP_EDIT[1].rstrip("\n")) - 4  # four lines upstream inserted above it
    assert pp["own_edits"] == [line]
    assert code == 1  # other copies conflict


def test_overlapping_edits_conflict_with_both_sides_shown(ported):
    reduce_ = ported[1][ALL_REDUCE]
    assert reduce_["status"] == "conflict" and reduce_["conflicts"] >= 1
    merged = reduce_["merged"]
    assert "<<<<<<< plugin xdevport.hooks.comm.xdev_all_reduce" in merged and ">>>>>>> upstream sglang==0.5.23" in merged
    assert "self.xdev_communicator.all_reduce(input_)" in merged and "flashinfer_allreduce(input_, group_name=self.unique_name)" in merged
    assert merged.startswith("def xdev_all_reduce(self, input_: torch.Tensor)")  # the copy's own name, not upstream's
    # what upstream's side of the conflict uses and the plugin module lacks
    assert reduce_["undefined_names"] == [{"name": "flashinfer_allreduce", "upstream_import": f"from {PS} import flashinfer_allreduce"}]


def test_a_module_level_copy_under_another_name_needs_an_import_upstream_added(ported):
    gather = ported[1][ALL_GATHER]
    assert gather["status"] == "clean" and gather["plugin_function"] == "xdevport.hooks.comm.xdev_all_gather"
    assert "all_gather_single(output_tensor, input_, group=self.device_group)" in gather["merged"]
    assert "xdev_ops.all_gather(output_tensor_list, input_)" in gather["merged"]
    assert "npu_comm" not in gather["merged"]  # upstream dropped the NPU branch
    assert gather["undefined_names"] == [{"name": "all_gather_single", "upstream_import": "from sglang.srt.distributed.utils import all_gather_single"}]


def test_a_signature_that_gained_a_parameter_is_flagged(ported):
    fused = ported[1][FUSED]
    change = fused["signature_change"]
    assert change["gained"] == ["transpose_scale"] and change["lost"] == []
    assert fused["status"] == "clean" and change["copy_fits"] is True  # the def line was the plugin's untouched: the merge carries it
    assert "transpose_scale: bool = False," in fused["merged"] and "xdev_ops.has_fused_ar_rmsnorm()" in fused["merged"]


def test_a_method_patched_by_assignment_is_a_copy_too(ported):
    kv = ported[1][KV_SIZE]
    assert kv["kind"] == "patch" and kv["status"] == "clean"
    assert "native_k_scale_buffer" in kv["merged"] and "xdev_ops.sync_pool(self)" in kv["merged"]


def test_a_hand_written_replacement_is_not_a_copy(ported):
    clear = ported[1][POOL_CLEAR]
    assert clear["status"] == "not_a_copy" and clear["similarity"] < 0.6 and clear["merged"] is None
    assert "+    self.short_conv_pool.clear()" in clear["upstream_diff"] and clear["best_match"] is None


def test_a_copy_of_a_function_upstream_removed_is_missing(ported):
    gone = ported[1][INDEX_K]
    assert gone["status"] == "missing" and gone["copy_of"] == FROM and gone["merged"] is None
    assert "DSATokenToKVPool" in gone["detail"]


def test_human_report_and_markdown(plugin, tmp_path):
    proc = harness("port", "--plugin", str(plugin), "--from", FROM, "--to", TO, "--out", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    assert "4 clean, 1 conflict, 1 not_a_copy, 1 missing" in proc.stdout
    markdown = (tmp_path / "port.md").read_text()
    assert f"| **conflict** (1) | `{ALL_REDUCE}`" in markdown and "`all_gather_single`: `from " in markdown
    assert "+    if pp_size == 1:" in markdown and "```diff" in markdown


def test_apply_writes_a_branch_never_the_working_tree(plugin, tmp_path):
    repo = tmp_path / "repo"
    write_tree(repo, {})
    for path in plugin.rglob("*"):
        if path.is_file():
            (repo / path.relative_to(plugin)).parent.mkdir(parents=True, exist_ok=True)
            (repo / path.relative_to(plugin)).write_text(path.read_text())
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "plugin")
    before = (repo / "xdevport/hooks/pipeline.py").read_text()
    proc = harness("port", "--plugin", str(repo), "--from", FROM, "--to", TO, "--apply", "--out", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    branch = proc.stdout.strip().splitlines()[-1].split()[-1]
    assert (repo / "xdevport/hooks/pipeline.py").read_text() == before and git(repo, "status", "--porcelain") == ""
    assert git(repo, "branch", "--show-current").strip() == "main"
    applied = git(repo, "show", f"{branch}:xdevport/hooks/pipeline.py")
    assert "if pp_size == 1:" in applied and "xdev_ops.align_layers" in applied
    assert "<<<<<<< plugin" in git(repo, "show", f"{branch}:xdevport/hooks/comm.py")  # conflicts go in, marked
    assert git(repo, "worktree", "list").count("\n") == 1  # the temporary worktree is gone


def test_bad_input_is_one_line_and_exit_2(plugin, tmp_path):
    broken = tmp_path / "broken"
    write_tree(broken, {"pyproject.toml": (plugin / "pyproject.toml").read_text()})
    for path in plugin.rglob("*.py"):
        (broken / path.relative_to(plugin)).parent.mkdir(parents=True, exist_ok=True)
        (broken / path.relative_to(plugin)).write_text(path.read_text())
    (broken / "xdevport/hooks/pipeline.py").write_text("def broken(:\n    pass\n")
    proc = harness("port", "--plugin", str(broken), "--from", FROM, "--to", TO, "--out", str(tmp_path))
    errors = [line for line in proc.stderr.splitlines() if line.startswith("harness: error:")]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(errors) == 1
    assert "xdevport/hooks/pipeline.py:1: does not parse" in errors[0]
    proc = harness("port", "--plugin", str(tmp_path / "nowhere"), "--from", FROM, "--to", TO, "--out", str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    proc = harness("port", "--plugin", str(plugin), "--from", FROM, "--to", TO, "--apply", "--out", str(tmp_path))
    assert proc.returncode == 2 and "git" in proc.stderr and "Traceback" not in proc.stderr  # not a git repository


def test_port_json_is_one_document(plugin):
    proc = harness("port", "--plugin", str(plugin), "--from", FROM, "--to", TO, "--json")
    doc = json.loads(proc.stdout)
    required = {"target", "file", "line", "hook_type", "copy_of", "similarity", "status", "merged", "patch", "undefined_names", "signature_change"}
    assert doc["ports"] and all(required <= set(p) for p in doc["ports"])
