"""The engine as data (harness.engines, an EngineProfile each): which engine a plugin is read against, and the plain
kinds on a tiny vLLM platform plugin checked against real vLLM release wheels (0.22.1, 0.27.1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from knowledge_support import VLLM_PLATFORM_TREE, by_target, harness, harness_json, write_tree

from harness.engines import ENGINES, SGLANG, profile, use_engine
from harness.errors import HarnessError
from harness.knowledge.model.plugin import (
    declared_version,
    detect_engine,
    read_entry_points,
)

PLUGIN = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_tiny"
PLATFORM = "vllm.platforms.interface.Platform"
WORKER = "vllm.v1.worker.gpu_worker.Worker"
SERVE_CONTEXT = "vllm.entrypoints.openai.engine.serving.ServeContext"
VLLM = ENGINES["vllm"]


# ----------------------------------------------------------------------------- detection (offline)


def test_the_engine_in_force_is_sglang_unless_a_command_says_otherwise():
    assert profile() is SGLANG and {"sglang", "vllm"} <= set(ENGINES)  # a third engine adds to these
    with use_engine(VLLM):
        assert profile() is VLLM
        assert [ep.group for ep in read_entry_points(PLUGIN)] == ["vllm.platform_plugins", "vllm.general_plugins"]
        assert declared_version(PLUGIN) == "0.22.1"
    assert profile() is SGLANG and read_entry_points(PLUGIN) == []


def test_the_engine_is_detected_from_entry_points_then_imports_then_the_spec(tmp_path):
    assert detect_engine(PLUGIN) is VLLM
    assert detect_engine(PLUGIN, "vllm==0.27.1") is VLLM
    # no entry points: the package its modules import most
    write_tree(tmp_path / "imports", {
        "acme/__init__.py": "",
        "acme/a.py": "import vllm.envs\n",
        "acme/b.py": "from vllm.platforms import current_platform\n",
        "acme/c.py": "from sglang.srt.utils import is_cuda\n",
    })
    assert detect_engine(tmp_path / "imports") is VLLM
    # nothing tells: the spec's release, else SGLang
    write_tree(tmp_path / "empty", {"acme/__init__.py": "X = 1\n"})
    assert detect_engine(tmp_path / "empty", "vllm==0.27.1") is VLLM
    assert detect_engine(tmp_path / "empty", str(tmp_path)) is SGLANG
    # --engine overrides what the plugin says
    assert detect_engine(PLUGIN, override="sglang") is SGLANG


# One plugin serving both engines, its entry points declared the three ways packaging does.
_DUAL = {
    "pyproject": {"pyproject.toml": '[project]\nname = "dual"\n'
                  '[project.entry-points."vllm.platform_plugins"]\nx = "dual.vllm_platform:register"\n'
                  '[project.entry-points."sglang.srt.plugins"]\nx = "dual.sglang_hooks"\n'},
    "setup.cfg": {"setup.cfg": "[metadata]\nname = dual\n[options.entry_points]\n"
                  "vllm.platform_plugins =\n    x = dual.vllm_platform:register\n"
                  "sglang.srt.plugins =\n    x = dual.sglang_hooks\n"},
    "setup.py": {"setup.py": "from setuptools import setup\nsetup(name='dual', entry_points={\n"
                 "    'vllm.platform_plugins': ['x = dual.vllm_platform:register'],\n"
                 "    'sglang.srt.plugins': ['x = dual.sglang_hooks'],\n})\n"},
}


@pytest.mark.parametrize("packaging", sorted(_DUAL))
def test_a_plugin_serving_both_engines_is_read_for_the_one_the_spec_names(tmp_path, packaging):
    write_tree(tmp_path, {**_DUAL[packaging], "dual/__init__.py": "",
                          "dual/vllm_platform.py": "from vllm.platforms.interface import Platform\n",
                          "dual/sglang_hooks.py": "from sglang.srt.utils import is_cuda\n"})
    assert detect_engine(tmp_path, "sglang==0.5.23") is SGLANG
    assert detect_engine(tmp_path, "vllm==0.27.1") is VLLM
    # a bare PATH: the first engine of ENGINES whose entry points it declares
    assert detect_engine(tmp_path) is SGLANG and detect_engine(tmp_path, str(tmp_path)) is SGLANG


@pytest.mark.parametrize("packaging", sorted(_DUAL))
def test_a_plugin_with_only_the_other_engines_entry_point_is_read_for_the_spec_it_imports(tmp_path, packaging):
    # an SGLang plugin loaded by its own patches that also ships a vLLM platform entry point
    files = {name: "\n".join(line for line in text.split("\n") if "sglang" not in line) for name, text in _DUAL[packaging].items()}
    write_tree(tmp_path, {**files, "dual/__init__.py": "",
                          "dual/vllm_platform.py": "from vllm.platforms.interface import Platform\n",
                          "dual/sglang_hooks.py": "from sglang.srt.utils import is_cuda\n"})
    assert detect_engine(tmp_path, "sglang==0.5.23") is SGLANG
    assert detect_engine(tmp_path, "vllm==0.27.1") is VLLM
    assert detect_engine(tmp_path) is VLLM  # a bare PATH: its entry points decide


def test_without_entry_points_the_spec_decides_among_the_engines_it_imports(tmp_path):
    write_tree(tmp_path, {"acme/__init__.py": "", "acme/a.py": "import vllm.envs\n", "acme/b.py": "import vllm.config\n",
                          "acme/c.py": "from sglang.srt.utils import is_cuda\n"})
    assert detect_engine(tmp_path, "sglang==0.5.23") is SGLANG  # one module imports sglang: the spec decides
    assert detect_engine(tmp_path) is VLLM  # a bare PATH: the package its modules import most
    write_tree(tmp_path / "only", {"acme/__init__.py": "", "acme/a.py": "import vllm.envs\n"})
    with pytest.raises(HarnessError, match=r"is an SGLang release, but the plugin is read as a vLLM plugin \(1 of its modules import vllm\)"):
        detect_engine(tmp_path / "only", "sglang==0.5.23")


def test_a_spec_of_the_other_engine_is_one_line(tmp_path):
    with pytest.raises(HarnessError, match=r"sglang==0.5.23 is an SGLang release, but the plugin is read as a vLLM plugin \(entry point vllm.platform_plugins\)"):
        detect_engine(PLUGIN, "sglang==0.5.23")
    with pytest.raises(HarnessError, match=f"--engine 'tpu': one of {', '.join(ENGINES)}"):
        detect_engine(PLUGIN, override="tpu")
    # before anything is downloaded: exit 2, one line
    proc = harness("check", "--plugin", str(PLUGIN), "--upstream", "sglang==0.5.23")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--engine sglang" in proc.stderr, proc.stderr


# ----------------------------------------------------------------------------- real vLLM releases


@pytest.mark.network
@pytest.mark.slow
def test_check_on_vllm_0271_flags_the_moved_import(vllm_0271):
    assert vllm_0271.package == "vllm" and "vllm/platforms/interface.py" in vllm_0271.files
    assert not any(rel.endswith(".so") for rel in vllm_0271.files)
    code, doc = harness_json("check", "--plugin", str(PLUGIN), "--upstream", "vllm==0.27.1", "--baseline", "none")
    assert code == 1, doc
    assert [r["why"] for r in doc["roots"]] == [
        "entry point vllm.platform_plugins:xdev",
        "platform class xdev_vllm.platform.XPlatform returned by xdev_vllm:register",
        "entry point vllm.general_plugins:xdev_patches",
        "worker_cls xdev_vllm.worker.XWorker named by the platform class (xdev_vllm/platform.py:16)",
    ]
    found = by_target(doc["findings"])
    moved = found[SERVE_CONTEXT]
    assert (moved["kind"], moved["status"], moved["file"], moved["line"], moved["breaking"]) == ("import", "missing", "xdev_vllm/patches.py", 4, True)
    for target, kind in ((f"{WORKER}.init_device", "patch"),
                         (f"{PLATFORM}.is_cumem_allocator_available", "override"), (f"{PLATFORM}.check_and_update_config", "override")):
        assert (found[target]["kind"], found[target]["status"]) == (kind, "ok"), found[target]
    # the replacement names its parameter `command` where 0.27.1's has `ft_request`: a note, since
    # the one call (collective_rpc("handle_ft_command", args=(ft_request,))) passes it by position
    ft = found[f"{WORKER}.handle_ft_command"]
    assert (ft["kind"], ft["status"], ft["breaking"]) == ("patch", "signature_changed", False) and "'ft_request'" in ft["detail"], ft
    assert doc["breaking"] == 1


@pytest.mark.network
@pytest.mark.slow
def test_check_on_vllm_0221_flags_what_is_newer(vllm_0221, vllm_0271):
    code, doc = harness_json("check", "--plugin", str(PLUGIN), "--upstream", "vllm==0.22.1", "--engine", "vllm", "--baseline", "none")
    assert code == 1, doc
    found = by_target(doc["findings"])
    assert SERVE_CONTEXT not in found  # a plain use that resolves is not listed
    # setting a method 0.22.1 does not have cannot fail, and nothing in 0.22.1 names it: an
    # addition or a dead replacement, which only the release the plugin was written for tells
    patch = found[f"{WORKER}.handle_ft_command"]
    assert (patch["status"], patch["file"], patch["line"], patch["breaking"]) == ("unknown", "xdev_vllm/patches.py", 20, False)
    assert "--baseline" in patch["detail"]
    override = found[f"{PLATFORM}.is_cumem_allocator_available"]
    assert (override["status"], override["file"], override["line"]) == ("not_on_base", "xdev_vllm/platform.py", 19)
    assert found[f"{WORKER}.init_device"]["status"] == "ok"
    assert doc["breaking"] == 1
    # written against 0.27.1, which has it: the patch replaces a method 0.22.1 lacks
    code, doc = harness_json("check", "--plugin", str(PLUGIN), "--upstream", "vllm==0.22.1", "--engine", "vllm", "--baseline", "vllm==0.27.1")
    patch = by_target(doc["findings"])[f"{WORKER}.handle_ft_command"]
    assert (patch["status"], patch["breaking"]) == ("missing", True) and code == 1


# ----------------------------------------------------------------------------- vLLM trees (offline)

VLLM_TREE = {
    **VLLM_PLATFORM_TREE,
    "vllm/version.py": "from ._version import __version__\n",
    "vllm/_version.py": "__version__ = version = '0.27.1'\n",
    "vllm/entrypoints/generate/__init__.py": "",
    "vllm/entrypoints/generate/base/__init__.py": "",
    "vllm/entrypoints/generate/base/serving.py": "class ServeContext:\n    pass\n",
}


def test_a_directory_and_a_git_tree_holding_vllm_are_upstreams(tmp_path):
    import subprocess

    write_tree(tmp_path / "repo", VLLM_TREE)
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path / "repo")], check=True)
    subprocess.run(["git", "-C", str(tmp_path / "repo"), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(tmp_path / "repo"), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "vllm"], check=True)
    for spec in (str(tmp_path / "repo"), f"{tmp_path / 'repo'}@main"):
        code, doc = harness_json("check", "--plugin", str(PLUGIN), "--upstream", spec, "--baseline", "none")
        assert code == 1, doc
        found = by_target(doc["findings"])
        assert (found[SERVE_CONTEXT]["status"], found[SERVE_CONTEXT]["line"]) == ("missing", 4), spec
        assert found[f"{WORKER}.handle_ft_command"]["status"] == "ok"
    # read as an SGLang plugin, the same tree holds no sglang/ package: one line
    proc = harness("check", "--plugin", str(PLUGIN), "--upstream", str(tmp_path / "repo"), "--engine", "sglang")
    assert proc.returncode == 2 and "holds no sglang/ package" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_a_vllm_version_guard_is_folded_against_the_upstream(tmp_path):
    write_tree(tmp_path, {**{f"up/{path}": text for path, text in VLLM_TREE.items()}, "plugin/pyproject.toml": (
        '[project]\nname = "guarded"\nversion = "0"\n\n[project.entry-points."vllm.general_plugins"]\nguarded = "guarded:apply"\n'
    ), "plugin/guarded/__init__.py": (
        "import vllm\nfrom packaging.version import Version\nfrom vllm.v1.worker.gpu_worker import Worker\n\n\n"
        "def _step(self):\n    return None\n\n\n"
        "def apply():\n    if Version(vllm.__version__) >= Version('0.30.0'):\n        Worker.future_step = _step\n"
        "    if Version(vllm.__version__) < Version('0.30.0'):\n        Worker.init_device = _step\n"
    )})
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"))
    assert code == 0, doc
    found = by_target(doc["findings"])
    assert found[f"{WORKER}.future_step"]["guard"]["outcome"] == "skipped"
    assert found[f"{WORKER}.init_device"]["status"] == "ok"


def test_upgrade_of_a_vllm_plugin_between_two_trees(tmp_path):
    old = {path: text for path, text in VLLM_TREE.items() if "generate" not in path}
    old.update({"vllm/_version.py": "__version__ = version = '0.22.1'\n", "vllm/entrypoints/openai/__init__.py": "",
                "vllm/entrypoints/openai/engine/__init__.py": "", "vllm/entrypoints/openai/engine/serving.py": "class ServeContext:\n    pass\n"})
    write_tree(tmp_path / "old", old)
    write_tree(tmp_path / "new", VLLM_TREE)
    (tmp_path / "ws").mkdir()
    code, doc = harness_json("upgrade", "--plugin", str(PLUGIN), "--from", str(tmp_path / "old"), "--to", str(tmp_path / "new"),
                             "--runs", "0", "--workspace", str(tmp_path / "ws"))
    assert code == 1, doc
    moved = next(f for f in doc["features"] if SERVE_CONTEXT in f["targets"])
    assert moved["breaking"] and moved["fails_at"] == "import" and "vLLM skips the whole plugin" in moved["fails_reason"], moved


def test_a_logits_processor_entry_point_is_a_root_that_fails_the_engines_start(tmp_path):
    # vLLM loads each `vllm.logits_processors` entry point's class when the engine builds its
    # logits processors and re-raises a failure (v1/sample/logits_processor/__init__.py
    # _load_logitsprocs_plugins): the module is live, and an import failing there stops the start
    write_tree(tmp_path, {**{f"up/{path}": text for path, text in VLLM_TREE.items()}, "plugin/pyproject.toml": (
        '[project]\nname = "lp"\nversion = "0"\n\n[project.entry-points."vllm.logits_processors"]\nclamp = "lp.procs:ClampProcessor"\n'
    ), "plugin/lp/__init__.py": "", "plugin/lp/procs.py": "from vllm.gone_module import Thing\n\n\nclass ClampProcessor:\n    pass\n"})
    code, doc = harness_json("check", "--plugin", str(tmp_path / "plugin"), "--upstream", str(tmp_path / "up"))
    assert [r["why"] for r in doc["roots"]] == ["entry point vllm.logits_processors:clamp"], doc["roots"]
    gone = next(f for f in doc["findings"] if f["kind"] == "import")
    assert gone["live"] and gone["breaking"] and "the engine does not start" in gone["detail"] and code == 1, gone
