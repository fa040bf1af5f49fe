"""`harness upgrade` on vLLM plugins (offline): --from auto from the pin forms real vLLM plugins
use, --to latest from the index's vllm releases, and a git main range of a small vLLM-shaped
repository split into steps, each feature named with the step and commit that introduced it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from knowledge_support import VLLM_PLATFORM_TREE, git, harness, write_tree
from loopback_cli import invoke_cli, pip_env, simple_index

from harness.engines import ENGINES, use_engine
from harness.errors import HarnessError
from harness.knowledge.upstream.git_range import step_ends
from harness.knowledge.model.plugin import DeclaredPin, declared_pins
from harness.workflow.upgrade import from_spec_of

PLUGIN = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_tiny"
SERVE_CONTEXT = "vllm.entrypoints.openai.engine.serving.ServeContext"
HANDLE_FT = "vllm.v1.worker.gpu_worker.Worker.handle_ft_command"
VLLM = ENGINES["vllm"]


def _upgrade(*args: str) -> subprocess.CompletedProcess:
    """`harness upgrade ARGS` in-process (the workflow modules load once per test session)."""
    return invoke_cli(["upgrade", *args])


# ----------------------------------------------------------------------------- --from auto


def _plugin(tmp_path: Path, files: dict[str, str]) -> Path:
    """The tiny vLLM plugin without its pyproject requirement, plus `files`."""
    plugin = tmp_path / "plugin"
    shutil.copytree(PLUGIN, plugin)
    pyproject = plugin / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('dependencies = ["vllm>=0.22.1"]', "dependencies = []"))
    write_tree(plugin, files)
    return plugin


@pytest.mark.parametrize("files, expected, source", [
    ({"requirements.txt": "torch\nvllm==0.27.1  # tested\n"}, "0.27.1", "requirements.txt:2"),
    ({"setup.py": "from setuptools import setup\nsetup(install_requires=['vllm>=0.23.0,<0.24'])\n"}, "0.23.0", "setup.py:2"),
    # the pin built from the setup script's own constant (twenty-fourth set V-d1): an f-string, a
    # concatenation, a list bound to a name and built with str.format
    ({"setup.py": 'from setuptools import setup\nVLLM = "0.23.0"\nsetup(install_requires=["numpy", f"vllm=={VLLM}"])\n'}, "0.23.0", "setup.py:3"),
    ({"setup.py": 'from setuptools import setup\nBASE = "0.22.1"\nsetup(\n    install_requires=[\n        "vllm>=" + BASE,\n    ],\n)\n'},
     "0.22.1", "setup.py:5"),
    ({"setup.py": 'from setuptools import setup\nV = "0.23.0"\nREQUIRES = ["vllm=={}".format(V)]\nsetup(install_requires=REQUIRES)\n'}, "0.23.0", "setup.py:3"),
    # requirement files setup.py reads (twenty-fifth set V-e1, vllm-ascend's get_requirements()):
    # named in setup.py under a folder it names, with `-r` includes followed as pip does
    ({"setup.py": ('from setuptools import setup\nimport os\n\n\ndef _read(name):\n'
                   '    with open(os.path.join("requirements", name)) as f:\n        return f.read().splitlines()\n\n\n'
                   'setup(install_requires=_read("device.txt"))\n'),
      "requirements/device.txt": "-r common.txt\n--prefer-binary\n", "requirements/common.txt": "numpy\nvllm==0.23.0\n"},
     "0.23.0", "requirements/common.txt:2"),
    ({"setup.py": 'from pathlib import Path\nfrom setuptools import setup\nsetup(install_requires=Path("deps.txt").read_text().split())\n',
      "deps.txt": "vllm>=0.22.1\n"}, "0.22.1", "deps.txt:1"),
    ({"requirements.txt": "--requirement requirements/base.txt\ntorch\n", "requirements/base.txt": "# base\nvllm==0.23.0\n"},
     "0.23.0", "requirements/base.txt:2"),
    # an unpacked wheel: vllm-spyre 1.10.0's METADATA
    ({"vllm_spyre-1.10.0.dist-info/METADATA": "Name: vllm-spyre\nRequires-Dist: vllm<0.18.1,>=0.17.0\n"}, "0.17.0",
     "vllm_spyre-1.10.0.dist-info/METADATA:2"),
    ({"p.egg-info/requires.txt": "torch==2.10.0\nvllm~=0.22.1\n\n[dev]\nvllm==0.1\n"}, "0.22.1", "p.egg-info/requires.txt:2"),
    # vllm-ascend 0.23.0.post1: no requirement on vllm; its CI's pin file and its docs' substitutions
    ({".github/vllm-release-tag.commit": "v0.23.0\n"}, "0.23.0", ".github/vllm-release-tag.commit"),
    ({"docs/source/conf.py": 'myst_substitutions = {\n    "vllm_version": "main",\n    "pip_vllm_version": "0.23.0",\n}\n'},
     "0.23.0", "docs/source/conf.py:3"),
    # vllm-kunlun 0.11.1: vllm_kunlun/platforms/version.py
    ({"xdev_vllm/version.py": '"""version"""\nvllm_version = "0.9.2"\n'}, "0.9.2", "xdev_vllm/version.py:2"),
])
def test_from_auto_reads_the_pin_forms_of_real_vllm_plugins(tmp_path, files, expected, source):
    plugin = _plugin(tmp_path, files)
    with use_engine(VLLM):
        assert declared_pins(plugin)[0] == DeclaredPin("release", expected, source)
        said = []
        assert from_spec_of(plugin, "auto", progress=said.append)[0] == f"vllm=={expected}"
    assert said == [f"--from auto: vllm=={expected} (declared in {source})"]


def test_from_auto_without_a_vllm_pin_names_vllm(tmp_path):
    plugin = _plugin(tmp_path, {"requirements.txt": "sglang==0.5.23\n", ".github/vllm-release-tag.commit": "main\n"})
    with use_engine(VLLM), pytest.raises(HarnessError, match=rf"^no declared vllm version in {plugin} \(.*\.github/vllm-release-tag\.commit.*\): "
                                                             r"cannot tell which vLLM the plugin targets; pass --from vllm==X$"):
        from_spec_of(plugin, "auto")
    proc = _upgrade("--plugin", str(plugin), "--to", "vllm==0.27.1", "--workspace", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no declared vllm version in" in proc.stderr, proc.stderr


def test_to_latest_is_the_newest_final_vllm_release(tmp_path, monkeypatch):
    files = ("vllm-0.22.1-cp38-abi3-manylinux1_x86_64.whl", "vllm-0.27.1-cp38-abi3-manylinux1_x86_64.whl",
             "vllm-0.28.0rc1-cp38-abi3-manylinux1_x86_64.whl")
    with simple_index("vllm", files) as index:
        for key, value in pip_env(index).items():
            monkeypatch.setenv(key, value)
        plugin = _plugin(tmp_path, {"requirements.txt": "vllm==0.27.1\n"})
        proc = _upgrade("--plugin", str(plugin), "--workspace", str(tmp_path), "--json")
    code, doc = proc.returncode, json.loads(proc.stdout)
    # 0.28.0rc1 is a pre-release: the newest final one is what the plugin declares
    assert (code, doc["outcome"], doc["from_spec"], doc["to_spec"]) == (0, "up_to_date", "vllm==0.27.1", "vllm==0.27.1"), doc
    assert doc["engine"] == "vLLM"


# ----------------------------------------------------------------------------- a git main range in steps

BASE = {
    **VLLM_PLATFORM_TREE,
    "vllm/version.py": "__version__ = '0.27.1.dev1'\n",
    "vllm/v1/worker/worker_base.py": "class WorkerBase:\n    def init_device(self):\n        pass\n",
    "vllm/entrypoints/openai/__init__.py": "",
    "vllm/entrypoints/openai/engine/__init__.py": "",
    "vllm/entrypoints/openai/engine/serving.py": "class ServeContext:\n    pass\n",
}


def _commit(repo: Path, subject: str, write: dict[str, str] | None = None, remove: tuple[str, ...] = ()) -> str:
    write_tree(repo, write or {})
    for path in remove:
        git(repo, "rm", "-q", path)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", subject)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def vllm_main(tmp_path_factory) -> tuple[Path, str, list[str]]:
    """vLLM's main, five commits past a base: the import the plugin makes moves in the second,
    the method it patches goes in the fourth."""
    repo = tmp_path_factory.mktemp("vllm-main") / "vllm"
    write_tree(repo, BASE)
    git(repo, "init", "-q", "-b", "main")
    base = _commit(repo, "base")
    shas = [
        _commit(repo, "[Sampler] add a sampler", {"vllm/sampler.py": "def sample(x):\n    return x\n"}),
        _commit(repo, "[Frontend] move ServeContext to entrypoints/generate", {
            "vllm/entrypoints/generate/__init__.py": "", "vllm/entrypoints/generate/base/__init__.py": "",
            "vllm/entrypoints/generate/base/serving.py": "class ServeContext:\n    pass\n"},
            remove=("vllm/entrypoints/openai/engine/serving.py",)),
        _commit(repo, "[Docs] tidy", {"vllm/sampler.py": "def sample(x):\n    '''Sample.'''\n    return x\n"}),
        _commit(repo, "[Worker] drop handle_ft_command", {"vllm/v1/worker/gpu_worker.py": "class Worker:\n    def init_device(self):\n        pass\n"}),
        _commit(repo, "[Release] bump", {"vllm/version.py": "__version__ = '0.28.0.dev0'\n"}),
    ]
    return repo, base, shas


def test_a_main_range_in_one_commit_steps_names_the_commit_that_broke_each_finding(vllm_main, tmp_path):
    repo, base, shas = vllm_main
    # the real CLI, once: its progress lines on stderr
    proc = harness("upgrade", "--plugin", str(PLUGIN), "--from", f"{repo}@{base}", "--to", f"{repo}@main",
                   "--step-commits", "1", "--runs", "0", "--workspace", str(tmp_path), "--json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    # each step is a check, said as it starts
    assert [line.split(" ", 1)[1].split(":")[0] for line in proc.stderr.splitlines() if " range step " in line] == [
        f"range step {i}/5" for i in range(1, 6)]
    assert [(s["index"], s["commits"], s["range"]) for s in doc["steps"]] == [
        (i + 1, 1, f"{([base] + shas)[i][:10]}..{shas[i][:10]}") for i in range(5)]
    first_seen = {key.split(":")[-1]: s["index"] for s in doc["steps"] for key in s["introduced"]}
    assert first_seen == {SERVE_CONTEXT: 2, HANDLE_FT: 4}, doc["steps"]
    features = {t: f for f in doc["features"] for t in f["targets"]}
    moved, dropped = features[SERVE_CONTEXT]["introduced"], features[HANDLE_FT]["introduced"]
    assert (moved["step"], moved["range"]) == (2, f"{shas[0][:10]}..{shas[1][:10]}")
    assert [c["subject"] for c in moved["commits"]] == ["[Frontend] move ServeContext to entrypoints/generate"]
    assert [c["sha"] for c in dropped["commits"]] == [shas[3]] and dropped["touching"]
    summary = Path(doc["summary"]).read_text()
    assert summary.startswith(f"# vLLM upgrade {repo}@{base} → {repo}@main")
    assert "introduced in step 4 (`" in summary and ": [Worker] drop handle_ft_command)" in summary
    assert "## The range, step by step" in Path(doc["details"]).read_text()


def test_a_main_range_in_n_steps_narrows_to_the_commits_touching_the_target(vllm_main, tmp_path):
    repo, base, shas = vllm_main
    plugin = tmp_path / "plugin"
    shutil.copytree(PLUGIN, plugin)
    # vllm-ascend's pin of vLLM main: --from auto takes it, in the repository --to names
    write_tree(plugin, {".github/vllm-main-verified.commit": base + "\n"})
    proc = _upgrade("--plugin", str(plugin), "--to", f"{repo}@main", "--steps", "2", "--runs", "0",
                    "--workspace", str(tmp_path), "--json")
    code, doc = proc.returncode, json.loads(proc.stdout)
    assert code == 1 and doc["from_spec"] == f"{repo}@{base}", doc
    assert [(s["commits"], s["subject"]) for s in doc["steps"]] == [(3, "[Docs] tidy"), (2, "[Release] bump")]
    features = {t: f for f in doc["features"] for t in f["targets"]}
    moved = features[SERVE_CONTEXT]["introduced"]
    assert (moved["step"], moved["touching"], [c["sha"] for c in moved["commits"]]) == (1, True, [shas[1]]), moved
    assert features[HANDLE_FT]["introduced"]["step"] == 2


def test_without_steps_each_feature_names_the_upstream_commit_it_comes_from(vllm_main, tmp_path):
    """Issue 35, item 7: on two refs of one git repository every feature names its commit (the
    newest touching its target, with the PR number a subject ends in); on release wheels the
    summary says why none is named."""
    repo, base, shas = vllm_main
    (tmp_path / "ws").mkdir()
    proc = harness("upgrade", "--plugin", str(PLUGIN), "--from", f"{repo}@{base}", "--to", f"{repo}@main",
                   "--runs", "0", "--workspace", str(tmp_path / "ws"), "--json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    features = {t: f for f in doc["features"] for t in f["targets"]}
    assert features[HANDLE_FT]["commit"] == f"{shas[3][:10]} [Worker] drop handle_ft_command"
    assert features[SERVE_CONTEXT]["commit"].startswith(shas[1][:10]) and doc["commits_note"] is None
    summary = Path(doc["summary"]).read_text()
    assert f"upstream commit `{shas[3][:10]}`" in summary
    console = harness("upgrade", "--plugin", str(PLUGIN), "--from", f"{repo}@{base}", "--to", f"{repo}@main",
                      "--runs", "0", "--workspace", str(tmp_path / "ws"))
    assert f"upstream commit {shas[3][:10]}" in console.stdout, console.stdout
    from harness.workflow.upgrade import UpgradeFeature

    labelled = UpgradeFeature(id="x", title="t", risk=1, why="w", targets=[], breaking=True, state="not_run",
                              commit="0123456789 [Kernel] fuse the norm (#31337)")
    assert labelled.commit_label == "0123456789 (PR #31337)"


def test_steps_are_refused_on_anything_but_one_git_range(vllm_main, tmp_path):
    repo, base, _ = vllm_main
    for args, message in (
        (["--from", "vllm==0.22.1", "--to", f"{repo}@main", "--steps", "3"], "--steps 3: splits a git range: give --from PATH@REF and --to PATH@REF"),
        (["--from", f"{repo}@{base}", "--to", f"{repo}@main", "--steps", "0"], "--steps 0: give 1 or more"),
        (["--from", f"{repo}@{base}", "--to", f"{repo}@main", "--steps", "2", "--step-commits", "1"], "--steps and --step-commits: give one"),
    ):
        proc = _upgrade("--plugin", str(PLUGIN), *args, "--workspace", str(tmp_path))
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "reports").exists()


def test_step_ends_split_evenly_and_end_on_the_last_commit():
    assert step_ends(10, steps=3) == [3, 6, 9]
    assert step_ends(2, steps=5) == [0, 1]
    assert step_ends(7, every=3) == [2, 5, 6]
    assert step_ends(0, steps=4) == []


def test_a_setup_script_whose_names_lead_in_a_circle_declares_nothing(tmp_path):
    # names built from themselves (`V = V[0]`, `R = R + "x"`) are not known: no pin, no crash
    setup = ('from setuptools import setup\nV = V[0]\nR = R + "1"\nS = S.x\nREQS = [f"vllm=={V}", "vllm>=" + R, S]\n'
             'setup(install_requires=REQS)\n')
    plugin = _plugin(tmp_path, {"setup.py": setup})
    with use_engine(VLLM):
        assert [pin for pin in declared_pins(plugin) if pin.source.startswith("setup.py")] == []
