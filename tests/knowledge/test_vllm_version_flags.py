"""Code a version flag switches off is not red on that release (issue 21). On its own base, vllm 0.23.0,
vllm-ascend 0.23.0.post1 keeps its v2 model runner behind two flags:
- an instance flag its worker's __init__ clears on that release (worker.py:160-163:
  `self.use_v2_model_runner = cfg.use_v2_model_runner; if self.use_v2_model_runner and
  vllm_version_is("0.23.0"): self.use_v2_model_runner = False`), which init_device tests before
  importing the v2 runner, whose graph manager calls upstream with keywords 0.23.0 lacks;
- a module flag set in both branches of a version test (patch/worker/__init__.py:
  `if vllm_version_is("0.23.0"): _V2 = False else: _V2 = True`), which guards imports of patches
  written for later releases.
A module every import of which sits under such guards is not imported on that release, so its
breaks are skipped there (and so is one imported only under `if TYPE_CHECKING:`); on a release the
flags leave on, or when something else may set the flag, the same break stays red.
"""

from __future__ import annotations

import textwrap

import pytest
from knowledge_support import by_target, harness_json, write_tree


def upstream(version: str) -> dict[str, str]:
    return {
        "vllm/__init__.py": "from .version import __version__\n",
        "vllm/version.py": f"__version__ = '{version}'\n",
        "vllm/platforms/__init__.py": "",
        "vllm/platforms/interface.py": """
            class Platform:
                device_name = "cuda"
            """,
        "vllm/worker_base.py": """
            class WorkerBase:
                def __init__(self, vllm_config):
                    self.vllm_config = vllm_config
            """,
        "vllm/cudagraph_utils.py": """
            class ModelCudaGraphManager:
                def __init__(self, vllm_config, device):
                    self.device = device
            """,
        "vllm/sampler.py": """
            def sample(logits):
                return logits
            """,
    }


PLUGIN = {
    "pyproject.toml": """
        [project]
        name = "ap"
        version = "0.23.0"

        [project.entry-points."vllm.platform_plugins"]
        ap = "ap:register"
        """,
    "ap/__init__.py": """
        def register():
            import ap.patches  # noqa: F401
            import ap.worker  # noqa: F401

            return "ap.platform.APlatform"
        """,
    "ap/platform.py": """
        from vllm.platforms.interface import Platform


        class APlatform(Platform):
            device_name = "npu"
        """,
    "ap/utils.py": """
        def vllm_version_is(target: str) -> bool:
            import vllm
            from packaging.version import Version

            version = vllm.__version__
            return Version(version) == Version(target)
        """,
    "ap/worker.py": """
        from typing import TYPE_CHECKING

        from vllm.worker_base import WorkerBase

        from ap.utils import vllm_version_is

        if TYPE_CHECKING:
            from ap.typing_only import Hints


        class AWorker(WorkerBase):
            def __init__(self, vllm_config):
                super().__init__(vllm_config)
                self.use_v2 = self.vllm_config.use_v2_model_runner
                if self.use_v2 and vllm_version_is("0.23.0"):
                    self.use_v2 = False

            def init_device(self):
                if self.use_v2:
                    from ap.v2.runner import V2Runner

                    self.model_runner = V2Runner(self.vllm_config)
                else:
                    self.model_runner = None
        """,
    "ap/typing_only.py": """
        from vllm.cudagraph_utils import Hints
        """,
    "ap/v2/__init__.py": "",
    "ap/v2/runner.py": """
        from ap.v2.graph import AGraphManager


        class V2Runner:
            def __init__(self, vllm_config):
                self.graphs = AGraphManager(vllm_config, "npu")
        """,
    "ap/v2/graph.py": """
        from vllm.cudagraph_utils import ModelCudaGraphManager


        class AGraphManager(ModelCudaGraphManager):
            def __init__(self, vllm_config, device):
                super().__init__(vllm_config, device, lora_capture_cases=[])
        """,
    "ap/patches/__init__.py": """
        from ap.utils import vllm_version_is

        if vllm_version_is("0.23.0"):
            _V2_SUPPORTED = False
        else:
            _V2_SUPPORTED = True

        if _V2_SUPPORTED:
            import ap.patches.patch_sampler  # noqa: F401
        """,
    "ap/patches/patch_sampler.py": """
        import vllm.sampler
        from vllm.sampler import apply_top_k


        def sample(logits):
            return apply_top_k(logits)


        vllm.sampler.sample = sample
        """,
}

SUPER = "vllm.cudagraph_utils.ModelCudaGraphManager.__init__"
PATCHED = "vllm.sampler.apply_top_k"
TYPING = "vllm.cudagraph_utils.Hints"


def check(tmp_path, version: str, plugin: dict[str, str], changed: dict[str, str] | None = None) -> tuple[int, dict[str, dict]]:
    write_tree(tmp_path / "up", {**upstream(version), **(changed or {})})
    write_tree(tmp_path / "plugin", plugin)
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"), "--baseline", "none")
    return code, by_target(doc["findings"])


@pytest.fixture(scope="module")
def on_base(tmp_path_factory):
    return check(tmp_path_factory.mktemp("flags-base"), "0.23.0", PLUGIN)


def test_a_module_imported_only_where_an_instance_flag_is_off_is_skipped(on_base):
    code, found = on_base
    graph = found[SUPER]
    assert graph["status"] == "signature_changed" and not graph["breaking"], graph
    assert graph["guard"]["outcome"] == "skipped", graph
    assert "self.use_v2 (ap/worker.py:19)" in graph["guard"]["condition"], graph
    assert code == 0


def test_a_module_imported_only_under_a_module_flag_off_on_the_release_is_skipped(on_base):
    _, found = on_base
    patch = found[PATCHED]
    assert patch["status"] == "missing" and not patch["breaking"], patch
    assert patch["guard"]["outcome"] == "skipped", patch
    assert "_V2_SUPPORTED (ap/patches/__init__.py:8)" in patch["guard"]["condition"], patch
    # the import never runs, so neither does what a failing import costs (the plugin skipped)
    assert "not run on this release" in patch["detail"] and "ImportError" not in patch["detail"], patch


def test_a_module_imported_only_for_type_checking_is_never_imported(on_base):
    _, found = on_base
    hints = found[TYPING]
    assert hints["status"] == "missing" and not hints["breaking"], hints
    assert "TYPE_CHECKING (ap/worker.py:7)" in hints["guard"]["condition"], hints
    assert "not run on this release" in hints["detail"] and "ImportError" not in hints["detail"], hints


def test_on_a_release_the_flags_leave_on_the_same_breaks_are_red(tmp_path):
    code, found = check(tmp_path, "0.24.0", PLUGIN)
    assert found[SUPER]["breaking"] and found[SUPER]["status"] == "signature_changed", found[SUPER]
    assert found[PATCHED]["breaking"], found[PATCHED]
    assert not found[TYPING]["breaking"], found[TYPING]
    assert code == 1


@pytest.mark.parametrize("path, added", [
    # something else sets the flag on an object of unknown class
    ("ap/v2/__init__.py", "def enable(worker):\n    worker.use_v2 = True\n"),
    # a subclass of the worker sets its own
    ("ap/worker.py", "\n\nclass Ext(AWorker):\n    def enable(self):\n        self.use_v2 = True\n"),
])
def test_a_flag_something_else_may_set_stays_undecided(tmp_path, path, added):
    code, found = check(tmp_path, "0.23.0", {**PLUGIN, path: textwrap.dedent(PLUGIN.get(path, "")) + added})
    assert found[SUPER]["breaking"], found[SUPER]
    assert code == 1


def test_a_flag_an_upstream_base_may_set_stays_undecided(tmp_path):
    base = textwrap.dedent(upstream("0.23.0")["vllm/worker_base.py"]) + "\n    def enable_v2(self):\n        self.use_v2 = True\n"
    code, found = check(tmp_path, "0.23.0", PLUGIN, {"vllm/worker_base.py": base})
    assert found[SUPER]["breaking"], found[SUPER]
    assert code == 1
